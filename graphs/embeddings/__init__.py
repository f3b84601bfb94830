"""Embedding layer: provider factory, the embedded hashing embedder and the content-hash cache."""
