"""ACE (Agentic Context Engineering, seeds 000/001): playbook I/O, hybrid search, Generator, Reflector, Curator.

Flow: the playbook comes in the request (or, for `/workflow/run`, from the `PlaybookStore`) →
`hybrid_search` finds the bullets that matter → the generator answers and records a `Trajectory` →
the reflector compares it with the ground truth and test report → the curator turns the reflection
into delta items that `merge` applies deterministically → the updated playbook goes out.
"""
