"""Ingestion: walking folders, loading files into text, and cutting text into chunks.

The modules here are pure functions over files and strings; none of them
touches the store or the embedder (the writer and the ingest jobs that do are
in ``engine.flows``). ``config`` holds the [ingest] and [chunking] sections,
``embedtext`` what the model reads of a chunk and its embedding-cache key.
"""
