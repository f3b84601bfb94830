"""What one request may contain, per agent: the service's request cost model (issue 15), in one place.

Every agent's work grows with what a request carries (hits and their characters, bullets, deltas, plan
steps, user inputs), and some of it faster than linearly. These numbers bound it so that the worst
request the contract accepts still finishes within its time budget on one vCPU, and anything larger
is refused before any work starts, with the limit named:

- a limit on one field (a list's length, a string's characters) is part of the wire type
  (`msgspec.Meta(max_length=...)`): it appears in the JSON Schemas and the OpenAPI document, and a
  request over it is **422** with the field's JSON path;
- a total across fields (characters of every snippet in the history, of every bullet of a playbook)
  is checked by the operation's `check` (`graphs/request_limits.py`) before the graph runs: **413**
  with the path of the collection and a message naming the limit.

How they were sized (re-measure with `python -m bench.hostile`, which sends each endpoint the worst
input these limits accept): see the README's "Request limits" table. To change a limit, change it
here, then `make schema && make go-client` and `python -m contracts.limits --readme` (the README
table is generated from this module and checked by the tests).
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from typing import Any


def _limit(value: int, meaning: str, *, total: bool = False) -> Any:
    """A limit with what it bounds, for the README table; `total`: checked across fields (413), not per field (422)."""
    return field(default=value, metadata={"meaning": meaning, "total": total})


@dataclass(frozen=True)
class LibrarianLimits:
    """`POST /agent/librarian/think`. The candidate pool is rebuilt from the whole history on every call."""

    rounds: int = _limit(10, "rounds in `search_history` (also `max_loops`' upper bound)")
    hits_per_round: int = _limit(300, "hits in one round's `results`")
    hits_total: int = _limit(1_000, "hits across every round of `search_history`", total=True)
    snippet_chars: int = _limit(8_000, "characters of one hit's `snippet`")
    snippet_chars_total: int = _limit(300_000, "characters of every snippet across `search_history`", total=True)
    metadata_keys: int = _limit(32, "keys of one hit's `metadata`")
    queries_per_round: int = _limit(32, "entries of one round's `queries_text` (and of its `queries_vector`)")
    query_chars: int = _limit(2_000, "characters of one query (a round's, or one the service writes)")
    query_chars_total: int = _limit(
        100_000, "characters of every query across `search_history` (they are kept in state)", total=True
    )
    written_query_chars: int = _limit(
        500, "characters of a query the service writes (rules or model), so its SEARCHes fit the totals above"
    )
    user_query_chars: int = _limit(8_000, "characters of `user_query`")
    conversation_turns: int = _limit(50, "turns of `conversation`")
    turn_chars: int = _limit(8_000, "characters of one turn's `content`")
    conversation_chars_total: int = _limit(40_000, "characters of every turn of `conversation`", total=True)
    missing_items: int = _limit(20, "missing elements one SEARCH reports (and the state keeps)")
    text_chars: int = _limit(2_000, "characters of a model-written `rationale`, `why_relevant`, missing description")


@dataclass(frozen=True)
class AceLimits:
    """`/agent/ace/*`, `/workflow/run` and the stored playbooks (`PUT /playbooks/{dataset}`)."""

    bullets: int = _limit(
        2_000,
        "bullets of a playbook (request or stored; a `PUT /playbooks` text of more is 413 at `$.bullets`, counted "
        "once parsed); the curator prunes to it",
    )
    bullet_chars: int = _limit(20_000, "characters of one bullet's `content` (and of its `searchable_text`)")
    playbook_chars_total: int = _limit(
        1_000_000, "characters of every bullet's `content` and `searchable_text` in one playbook", total=True
    )
    deltas: int = _limit(100, "caller `deltas` of one curate")
    insights: int = _limit(50, "insights of one reflection")
    changes_total: int = _limit(100, "caller `deltas` plus the reflection's insights in one curate", total=True)
    query_chars: int = _limit(8_000, "characters of a query (`query`, `query_text`, a trajectory's)")
    reasoning_steps: int = _limit(100, "entries of a trajectory's `reasoning_steps`")
    used_bullets: int = _limit(200, "entries of a trajectory's `used_bullet_ids` (and of a reflection's evaluations)")
    text_chars: int = _limit(100_000, "characters of a trajectory's `generated_answer`")
    report_chars: int = _limit(
        50_000, "characters of `ground_truth` and of `test_report` (the reflector reads them once per used bullet)"
    )
    trajectory_chars_total: int = _limit(
        200_000, "characters of a trajectory's answer and reasoning steps together", total=True
    )


@dataclass(frozen=True)
class GraceLimits:
    """`POST /agent/grace/step` (and `/step/stream`). The final reasoning reads the whole session's state."""

    plan_steps: int = _limit(32, "steps of a plan (`plan_steps`; `planner.max_steps` is the working limit)")
    hits: int = _limit(200, "hits of one `tool_result`")
    snippet_chars: int = _limit(8_000, "characters of one hit's `snippet` (the state keeps `executor.snippet_chars`)")
    hit_chars_total: int = _limit(400_000, "characters of every snippet of one `tool_result`", total=True)
    query_chars: int = _limit(8_000, "characters of `query`")
    user_input_chars: int = _limit(8_000, "characters of one `user_response.input`")
    collections: int = _limit(50, "entries of `collections`")
    text_chars: int = _limit(10_000, "characters of a plan step's `description` and `query`, of `tool_result.error`")


@dataclass(frozen=True)
class ProposalLimits:
    """`/api/organizer/run`, `/api/advisor/run`, `/api/proposal-quality/validate`."""

    trays: int = _limit(200, "trays of a dashboard")
    nodes_per_tray: int = _limit(5_000, "nodes of one tray")
    nodes_total: int = _limit(10_000, "nodes across every tray of a dashboard", total=True)
    valid_ids: int = _limit(10_000, "entries of `validNodeIds`")
    title_chars: int = _limit(2_000, "characters of a node's `title`")
    user_intent_chars: int = _limit(4_000, "characters of `userIntent`")
    notes: int = _limit(20, "entries of `constraints.notes`")
    note_chars: int = _limit(2_000, "characters of one note")
    report_bytes: int = _limit(256 * 1024, "bytes of a report to validate, as JSON", total=True)
    report_depth: int = _limit(32, "nesting depth of a report to validate", total=True)


@dataclass(frozen=True)
class ModelLimits:
    """What the service accepts from a model (any agent), before and after parsing the reply."""

    reply_chars: int = _limit(
        65_536, "characters of one model reply; a longer one is a bad reply (re-asked, then the rules stand in)"
    )


LIBRARIAN = LibrarianLimits()
ACE = AceLimits()
GRACE = GraceLimits()
PROPOSAL = ProposalLimits()
MODEL = ModelLimits()

AGENTS: dict[str, Any] = {
    "Librarian": LIBRARIAN,
    "ACE": ACE,
    "GRACE": GRACE,
    "proposal quality": PROPOSAL,
    "model replies": MODEL,
}


def readme_table() -> str:
    """The README's table of every limit (generated, so it cannot drift from the numbers)."""
    rows = ["| agent | limit | value | over it |", "|---|---|---|---|"]
    for agent, limits in AGENTS.items():
        for item in dataclasses.fields(limits):
            value = getattr(limits, item.name)
            over = "413, checked before the work" if item.metadata["total"] else "422 with the field's path"
            if limits is MODEL:
                over = "a bad reply"
            rows.append(f"| {agent} | {item.metadata['meaning']} | {value:,} | {over} |")
    return "\n".join(rows)


README_BEGIN = "<!-- limits table: generated by `python -m contracts.limits --readme` -->"
README_END = "<!-- end of limits table -->"


def main(argv: list[str]) -> int:
    """Print the table, or with `--readme` rewrite it in README.md between its markers."""
    table = readme_table()
    if "--readme" not in argv:
        print(table)
        return 0
    from pathlib import Path

    readme = Path(__file__).resolve().parents[1] / "README.md"
    text = readme.read_text(encoding="utf-8")
    before, _, rest = text.partition(README_BEGIN)
    _, _, after = rest.partition(README_END)
    if not rest:
        print(f"README.md has no {README_BEGIN!r} marker", file=sys.stderr)
        return 1
    readme.write_text(f"{before}{README_BEGIN}\n{table}\n{README_END}{after}", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
