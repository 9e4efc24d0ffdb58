"""Ingestion: jobs that store sources for the keyword lanes first, their vectors after.

- ``keyword_stage`` ingest jobs for paths, text and conversations (the job's first
  stage: sources stored, keyword-searchable);
- ``vector_stage``  ingestion's second stage, the vectors of sources already
  keyword-searchable;
- ``writer``    the single writer: chunk, summarise, embed (cached), store;
- ``alerts``    what keeps the ingestion alert raised;
- ``interrupted`` ingest jobs an earlier run left unfinished;
- ``watching``  watched folders: each caught up once, then its batches ingested or deleted.
"""
