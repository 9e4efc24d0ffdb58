"""Keeping the data: backups, restore, export, key changes, deleting, repair, health.

- ``backup`` (with ``backup_partials``, the files a backup leaves while it runs),
  ``restore``, ``export``  keeping the data;
- ``keys``      key changes that touch the data (rotation, recovery key, passphrase);
- ``deleting``  what a delete names, and the job that removes it everywhere;
  ``compaction`` giving space back;
- ``vector_rebuild``  rebuilding the vector store from the vault;
- ``health``    the engine's status (store counts, vectors, model, jobs, alerts).
"""
