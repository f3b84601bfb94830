"""Prompt lookup for the generator and curator: a dataset's own file first, then the shared one.

`prompts/ace/<name>_<dataset>.txt` overrides `prompts/ace/<name>.txt` (dataset names are validated by
the contract, so they cannot point outside the prompts directory).
"""

from __future__ import annotations

from pathlib import Path

from graphs.prompt_files import load_prompt


def dataset_prompt(name: str, dataset: str, prompts_dir: Path) -> str:
    """The template text of prompt `name` for `dataset` (header stripped, variables unfilled)."""
    try:
        return load_prompt(f"ace/{name}_{dataset}", prompts_dir)
    except FileNotFoundError:
        return load_prompt(f"ace/{name}", prompts_dir)
