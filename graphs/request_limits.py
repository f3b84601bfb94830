"""The request cost model's totals: sums across fields that no one field's schema can bound.

The numbers live in `contracts/limits.py`; per-field limits are in the wire types (422 with the
field's path). What is checked here is what only the whole request shows (every snippet of every
round, every bullet of a playbook), before any graph runs, from each operation's `check`: over a
total is HTTP 413 with the collection's path and a message naming the limit and the value sent. Each
check reads only lengths, so refusing a hostile request costs one pass over what was decoded anyway.
"""

from __future__ import annotations

from collections.abc import Iterable

from contracts.ace import Playbook, ReflectionResult, Trajectory
from contracts.common import ErrorDetail
from contracts.grace import GraceRequest
from contracts.librarian import LibrarianRequest
from contracts.limits import ACE, GRACE, LIBRARIAN
from graphs.errors import InvalidInput

TOO_LARGE = 413


def refuse_over(value: int, limit: int, *, path: str, what: str, name: str) -> None:
    """Raise 413 when `value` is over `limit`: `<what> is <value>; at most <limit> (<name>)`.

    Raises:
        InvalidInput: HTTP 413, the detail at `path`.
    """
    if value <= limit:
        return
    message = f"{what} is {value:,}; at most {limit:,} are allowed ({name})"
    raise InvalidInput(message, [ErrorDetail(path=path, message=message)], status_code=TOO_LARGE)


def clip_each(texts: Iterable[str], limit: int) -> list[str]:
    """Each text cut to `limit` characters, repeats (after the cut) dropped: output that must fit a limit back in."""
    return list(dict.fromkeys(text[:limit] for text in texts))


def _chars(texts: Iterable[str]) -> int:
    return sum(len(text) for text in texts)


def check_librarian(request: LibrarianRequest) -> None:
    """Hits, snippet characters and query characters across the history; conversation characters."""
    history = request.search_history
    hits = [hit for round_ in history for hit in round_.results]
    refuse_over(
        len(hits),
        LIBRARIAN.hits_total,
        path="$.search_history",
        what="the number of hits across search_history",
        name="librarian hits_total",
    )
    refuse_over(
        _chars(hit.snippet for hit in hits),
        LIBRARIAN.snippet_chars_total,
        path="$.search_history",
        what="the characters of every snippet across search_history",
        name="librarian snippet_chars_total",
    )
    refuse_over(
        _chars(q for round_ in history for q in (*round_.queries_text, *round_.queries_vector)),
        LIBRARIAN.query_chars_total,
        path="$.search_history",
        what="the characters of every query across search_history",
        name="librarian query_chars_total",
    )
    refuse_over(
        _chars(turn.content for turn in request.conversation),
        LIBRARIAN.conversation_chars_total,
        path="$.conversation",
        what="the characters of every conversation turn",
        name="librarian conversation_chars_total",
    )


def check_playbook(playbook: Playbook, path: str = "$.playbook") -> None:
    """A playbook's bullets, their size one by one and together (a parsed text bypasses the wire type's limits)."""
    refuse_over(
        len(playbook.bullets), ACE.bullets, path=f"{path}.bullets", what="the number of bullets", name="ace bullets"
    )
    for index, bullet in enumerate(playbook.bullets):
        refuse_over(
            max(len(bullet.content), len(bullet.searchable_text)),
            ACE.bullet_chars,
            path=f"{path}.bullets[{index}].content",
            what="the characters of a bullet",
            name="ace bullet_chars",
        )
    refuse_over(
        _chars(b.content for b in playbook.bullets) + _chars(b.searchable_text for b in playbook.bullets),
        ACE.playbook_chars_total,
        path=f"{path}.bullets",
        what="the characters of every bullet's content and searchable_text",
        name="ace playbook_chars_total",
    )


def check_trajectory(trajectory: Trajectory | None, path: str = "$.trajectory") -> None:
    """A trajectory's answer and reasoning steps together."""
    if trajectory is None:
        return
    refuse_over(
        len(trajectory.generated_answer) + _chars(trajectory.reasoning_steps),
        ACE.trajectory_chars_total,
        path=path,
        what="the characters of the trajectory's generated_answer and reasoning_steps",
        name="ace trajectory_chars_total",
    )


def check_changes(deltas: int, reflection: ReflectionResult) -> None:
    """A curate's caller deltas plus the reflection's insights (each may become an ADD the merge compares)."""
    refuse_over(
        deltas + len(reflection.insights),
        ACE.changes_total,
        path="$.deltas",
        what="the number of deltas plus reflection insights",
        name="ace changes_total",
    )


def check_grace(request: GraceRequest) -> None:
    """The characters of every snippet of a `tool_result`."""
    if request.tool_result is None:
        return
    refuse_over(
        _chars(hit.snippet for hit in request.tool_result.hits),
        GRACE.hit_chars_total,
        path="$.tool_result.hits",
        what="the characters of every snippet of tool_result",
        name="grace hit_chars_total",
    )
