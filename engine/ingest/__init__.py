"""Ingestion: walking folders, loading files into text, and cutting text into chunks.

The modules here are pure functions over files and strings; none of them
touches the store or the embedder (the writer and the ingest jobs that do are
in ``engine.flows``). ``config`` holds the [ingest], [chunking] and [surrogates] sections,
``embedtext`` what the model reads of a chunk and its embedding-cache key.

- ``walker``    the files under the paths a user gave, as git would see them;
- ``loaders``   one file (or a string) into a ``LoadedDocument``, with ``formats`` (per
  format text extraction, the extension tables) and ``blobs`` (text files that hold
  data, not words: skipped);
- ``chunking``  a document cut into token-bounded chunks that follow its structure:
  ``blocks`` finds blocks and headings, ``codesplit`` where a code file's definitions
  start, ``chunkpack`` cuts pieces and packs them into chunks;
- ``conversation`` chat sessions as documents of one chunk per turn;
- ``place``     where a chunk sits in its file (folder, path, lines).
"""
