"""Tests of engine/store/vectors/ (the vector index)."""
