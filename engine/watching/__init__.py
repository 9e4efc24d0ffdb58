"""Watched folders, the part: following folders on disk and reporting debounced batches.

- ``folders``: :class:`FolderWatcher` (watchdog) and ``ignored`` (hidden and scratch
  files). It knows nothing of the engine.

``engine.flows.ingest.watching`` turns its batches into ingests and deletes; the facade
exposes it as ``ContextEngine.watch`` with ``WatchChanged`` events.
"""
