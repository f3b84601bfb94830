"""The re-ask that sends a rejected report back to the model (seed 004 §4.2, `buildCorrectionPrompt`).

The validator's errors are embedded verbatim, one bullet each, followed by the ids the model may
use; the wording is the seed's and lives in `prompts/proposal_quality/correction*.txt`. Only the
prompt is built here: the loop that decides whether to re-ask is the graph's (seed 004 §4.3).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from graphs.prompt_files import render_prompt

MAX_PROMPT_IDS = 300
"""Ids listed in a re-ask at most; the generation prompt shows the same bounded set of nodes."""
NO_IDS = "(なし)"


def format_ids(valid_node_ids: Sequence[str], limit: int = MAX_PROMPT_IDS) -> str:
    """`n1, n2, n3`, cut to `limit` ids with a count of the rest; `(なし)` when there are none."""
    if not valid_node_ids:
        return NO_IDS
    shown = ", ".join(valid_node_ids[:limit])
    rest = len(valid_node_ids) - limit
    return f"{shown}（ほか {rest} 件）" if rest > 0 else shown


def build_correction_prompt(
    errors: Sequence[str], valid_node_ids: Sequence[str] | None = None, prompts_dir: Path | None = None
) -> str:
    """The re-generation prompt for a report with `errors`, in the seed's wording.

    Args:
        errors: The validator's (or the JSON parser's) errors for the rejected report, all of them.
        valid_node_ids: The ids the report may use, listed after the errors; None leaves the id line out.
        prompts_dir: Where the prompt files are (the service's `PROMPTS_DIR`); the repository's by default.

    Returns:
        The prompt text, ready to send as the next human turn.
    """
    listing = "\n".join(f"- {error}" for error in errors)
    id_rule = (
        ""
        if valid_node_ids is None
        else render_prompt("proposal_quality/correction_ids", prompts_dir, valid_ids=format_ids(valid_node_ids))
    )
    return render_prompt("proposal_quality/correction", prompts_dir, errors=listing, id_rule=id_rule).strip()
