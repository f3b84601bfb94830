"""A reference orchestrator: what the Go side does, in a few hundred lines of Python.

It drives `POST /agent/librarian/think` against a local corpus (a JSONL of chunks searched with
BM25 for `queries_text` and cosine over the embedded embedder for `queries_vector`), so the loop
can be demonstrated (`make demo`), tested end to end and benchmarked without PostgreSQL.
"""
