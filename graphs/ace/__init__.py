"""ACE (Agentic Context Engineering, seeds 000/001): playbook I/O, hybrid search, Generator, Reflector, Curator.

Flow: the playbook comes in the request (or, for `/workflow/run`, from the `PlaybookStore`) →
hybrid search finds the bullets that matter → the generator answers and records a `Trajectory` →
the reflector compares it with the ground truth and test report → the curator turns the reflection
into delta items that the merge applies deterministically → the updated playbook goes out.

Where things are:

- `run.py`: the operations the HTTP layer serves; `checks.py`: every check on caller input;
  `graph.py` (each graph's whole flow), `nodes.py`, `routing.py`, `state.py`: the agent itself.
- `playbook/`: the playbook as data: `ids` (bullet ids), `sections` (what a dataset allows),
  `text_format` (the official ACE text format), `store` (files on disk, locking), `import_export`
  (the checks the CLI and `/playbooks` share).
- `search/`: `bm25`, `index` (vectors + postings, cached), `hybrid` (the ranking).
- `generator/`, `reflector/`, `curator/`: each role's `heuristic` (embedded engine) and `llm` (model)
  version; the curator's deterministic `merge` (grow-and-refine, near-duplicates, size budget).
- `heuristic_text.py`: text helpers the heuristic roles share; `prompts.py`: prompt-file lookup.
- `python -m graphs.ace`: the command line for stored playbooks (`__main__.py`).
"""
