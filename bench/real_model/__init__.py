"""`make real-model`: every agent against a real local model and real embeddings, offline (see __main__)."""
