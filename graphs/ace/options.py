"""The ACE settings a node reads from the run context (`AgentContext.options`), with their defaults.

The service fills `options` from `PLAYBOOK_DATA_DIR`, `ACE_DEDUP_THRESHOLD` and `SEARCH_ALPHA` at
start-up; a test passes its own. Reading them in one place keeps the defaults in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[2]

DEFAULT_PLAYBOOK_DATA_DIR = PROJECT_ROOT / "data" / "playbooks"
"""Seed 000 §7's `data/playbooks`, relative to the project rather than the working directory."""
DEFAULT_DEDUP_THRESHOLD = 0.85
"""Cosine similarity at which a new bullet counts as a near-duplicate of one in its section.

With the embedded hashing embedder, 0.85 joins rewrites of the same sentence (the 359-bullet AppWorld
playbook has 56 such pairs, most verbatim copies) and keeps paraphrases apart (shr-00037 vs shr-00040: 0.72).
"""
DEFAULT_SEARCH_ALPHA = 0.5
"""Seed 000 §7: the weight of the vector score in the combined score."""


@dataclass(frozen=True, kw_only=True)
class AceOptions:
    """ACE's knobs, resolved from the context's options mapping."""

    playbook_data_dir: Path = DEFAULT_PLAYBOOK_DATA_DIR
    dedup_threshold: float = DEFAULT_DEDUP_THRESHOLD
    search_alpha: float = DEFAULT_SEARCH_ALPHA

    @classmethod
    def from_mapping(cls, options: dict[str, Any]) -> AceOptions:
        """Read `playbook_data_dir`, `ace_dedup_threshold` and `search_alpha`, falling back to the defaults."""
        return cls(
            playbook_data_dir=Path(options.get("playbook_data_dir", DEFAULT_PLAYBOOK_DATA_DIR)),
            dedup_threshold=float(options.get("ace_dedup_threshold", DEFAULT_DEDUP_THRESHOLD)),
            search_alpha=float(options.get("search_alpha", DEFAULT_SEARCH_ALPHA)),
        )
