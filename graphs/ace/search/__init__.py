"""Hybrid search over a playbook: BM25 postings and bullet vectors (the cached index) and their ranking."""
