"""Text embedders: the shipped MiniLM model, a local model path, or a fake for tests."""
