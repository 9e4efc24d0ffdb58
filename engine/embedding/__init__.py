"""Text embedders: the shipped MiniLM model, a local model path, or a fake for tests.

- ``base``: the embedder interface every model implements;
- ``factory``: the embedder the config names ("minilm", "fake[:dim]", a local path),
  on torch or onnxruntime; ``lazy_embedder``: one that loads its model on first use;
- ``minilm``: sentence-transformers models from local files, hash-checked;
- ``onnx``: MiniLM on onnxruntime and ``tokenizers`` (no torch); ``onnx_files``: where an
  export lives and the hash it must pass; ``onnx_export``: making and proving the export
  (build time, ``python -m engine.embedding.onnx_export``); ``onnx_precision``: the
  export's float16 storage and int8 document model;
- ``batching``: batches bounded by padded tokens; ``heap``: the C heap given back after
  inference (glibc);
- ``fake``: a deterministic embedder for unit tests (feature hashing);
- ``config``: the [embedding] section (model, runtime, threads).
"""
