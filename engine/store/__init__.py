"""Storage: the encrypted vault (SQLCipher) and the vector store (Chroma)."""
