"""Ingestion: walking folders, loading files into text, and cutting text into chunks.

The modules here are pure functions over files and strings; none of them
touches the store or the embedder.
"""
