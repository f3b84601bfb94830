"""The bounded merge decides exactly as the merge that re-embedded the whole section for every ADD did.

`reference_merge.py` is that earlier merge, kept as the oracle: a table of grow-and-refine cases and a
property over random playbooks and deltas (a small vocabulary, so identical, near-duplicate and
contradicting ADDs are common) must give the same playbook, applied deltas, pruned ids and notes. The
bounded merge must also hand control back between chunks and stop at the request's deadline, also when
the curator's node runs it (the node passes the request's context as the merge's budget).
"""

from __future__ import annotations

import asyncio
import datetime
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.runtime import Runtime

from contracts.ace import Bullet, DeltaContextItem, Playbook, PlaybookMetadata, ReflectionResult
from graphs.ace import nodes
from graphs.ace.curator import merge as merge_module
from graphs.ace.curator.merge import MergeOutcome, merge
from graphs.ace.playbook.sections import SectionRules
from graphs.ace.search import index as index_module
from graphs.ace.state import AceGraphState
from graphs.context import AgentContext
from graphs.embeddings.cache import CachedEmbeddings
from graphs.embeddings.hashing import HashingEmbeddings
from graphs.errors import DeadlineExceeded
from tests.graphs.ace.curator import reference_merge
from tests.graphs.ace.helpers import bullet, playbook
from tests.support.context import make_context

EMBEDDINGS = CachedEmbeddings(HashingEmbeddings(dim=256), model="bounded-merge-test")
PERMISSIVE = SectionRules(dataset="default", definitions=(), permissive=True)
NOW = datetime.datetime(2025, 1, 1, tzinfo=datetime.UTC)
WORDS = ["always", "never", "paginate", "page_index", "loop", "until", "empty", "api", "check", "the", "balance"]
WORDS += ["venmo", "before", "paying", "3", "5", "retries", "use", "not", "login", "first", "Always", "PAGE_INDEX"]
SECTIONS = ["alpha", "beta", "gamma"]


def both(
    p: Playbook, deltas: list[DeltaContextItem], **options: Any
) -> tuple[MergeOutcome, reference_merge.MergeOutcome]:
    """The bounded merge's outcome and the reference's, for the same input."""
    kwargs: dict[str, Any] = {"rules": PERMISSIVE, "embeddings": EMBEDDINGS, "dedup_threshold": 0.85, "now": NOW}
    kwargs |= options
    return asyncio.run(merge(p, deltas, **kwargs)), asyncio.run(reference_merge.merge(p, deltas, **kwargs))


def assert_same(new: MergeOutcome, old: reference_merge.MergeOutcome) -> None:
    assert new.playbook == old.playbook
    assert new.applied == old.applied
    assert new.pruned == old.pruned
    assert new.notes == old.notes


def add(content: str, section: str = "general") -> DeltaContextItem:
    return DeltaContextItem(type="ADD", section=section, content=content, reasoning="r")


PAGINATE = "Loop over page_index until a page is empty."
BASE = playbook(
    bullet("general-00001", PAGINATE),
    bullet("tools-00002", "Use the login API first.", section="tools"),
    bullet("general-00003", "Check the Venmo balance before paying."),
    bullet("general-00004", PAGINATE),  # an exact copy: ties go to the earlier bullet
    bullet("tools-00005", "Retry 3 times.", section="tools"),
)
CASES: dict[str, tuple[Playbook, list[DeltaContextItem], dict[str, Any]]] = {
    "identical add dropped": (BASE, [add("loop over PAGE_INDEX until a page is empty. ")], {}),
    "near-duplicate becomes update, tie to the earlier": (
        BASE,
        [add("Loop over page_index until the page is empty.")],
        {"dedup_threshold": 0.5},
    ),
    "contradicting near-duplicate kept apart": (BASE, [add("Never loop over page_index until a page is empty.")], {}),
    "figures differ": (BASE, [add("Retry 5 times.", "tools")], {"dedup_threshold": 0.3}),
    "add after the section's last bullet": (BASE, [add("Say thanks.", "tools"), add("And bye.", "tools")], {}),
    "new section goes to the end, then grows in place": (
        BASE,
        [add("A first other.", "others"), add("More tools.", "tools"), add("A second other.", "others")],
        {},
    ),
    "add after the section's last bullet was deleted": (
        BASE,
        [DeltaContextItem(type="DELETE", section="tools", bullet_id="tools-00005"), add("Say thanks.", "tools")],
        {},
    ),
    "an updated bullet is compared by its new content": (
        BASE,
        [
            DeltaContextItem(type="UPDATE", section="tools", bullet_id="tools-00005", content="Check the balance."),
            add("Check the balance first.", "tools"),
        ],
        {"dedup_threshold": 0.5},
    ),
    "an added bullet is a near-duplicate for the next add": (
        BASE,
        [add("Cache the token once per session.", "tools"), add("Cache the token once per sessions.", "tools")],
        {"dedup_threshold": 0.5},
    ),
    "a deleted bullet is no near-duplicate": (
        BASE,
        [
            DeltaContextItem(type="DELETE", section="general", bullet_id="general-00001"),
            DeltaContextItem(type="DELETE", section="general", bullet_id="general-00004"),
            add(PAGINATE),
        ],
        {},
    ),
    "budget prunes after the merge": (
        BASE,
        [add("One more.", "tools"), add("And more.", "general")],
        {"max_bullets": 4},
    ),
    "empty playbook": (playbook(), [add("First."), add("first."), add("Second.")], {}),
    "unknown update and delete skipped": (
        BASE,
        [
            DeltaContextItem(type="UPDATE", section="general", bullet_id="general-09999", content="x"),
            DeltaContextItem(type="DELETE", section="general", bullet_id="general-09998"),
        ],
        {},
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_bounded_merge_decides_as_before(name: str) -> None:
    p, deltas, options = CASES[name]
    new, old = both(p, deltas, **options)
    assert_same(new, old)


@st.composite
def texts(draw: st.DrawFn) -> str:
    return " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6)))


@st.composite
def cases(draw: st.DrawFn) -> tuple[Playbook, list[DeltaContextItem], float, int | None]:
    size = draw(st.integers(min_value=0, max_value=12))
    bullets = [
        Bullet(id=f"b-{i + 1:05d}", section=draw(st.sampled_from(SECTIONS)), content=draw(texts())) for i in range(size)
    ]
    p = Playbook(metadata=PlaybookMetadata(last_bullet_number=size), bullets=bullets)
    targets = st.sampled_from([b.id for b in bullets] or ["b-00001"])
    one = st.one_of(
        st.builds(DeltaContextItem, type=st.just("ADD"), section=st.sampled_from(SECTIONS), content=texts()),
        st.builds(
            DeltaContextItem, type=st.just("UPDATE"), section=st.just("alpha"), bullet_id=targets, content=texts()
        ),
        st.builds(DeltaContextItem, type=st.just("DELETE"), section=st.just("alpha"), bullet_id=targets),
    )
    deltas = draw(st.lists(one, max_size=10))
    threshold = draw(st.sampled_from([0.2, 0.5, 0.7, 0.85, 0.95, 1.0]))
    budget = draw(st.none() | st.integers(min_value=1, max_value=15))
    return p, deltas, threshold, budget


@settings(max_examples=300, deadline=None)
@given(case=cases())
def test_the_bounded_merge_matches_the_reference_on_random_input(
    case: tuple[Playbook, list[DeltaContextItem], float, int | None],
) -> None:
    p, deltas, threshold, budget = case
    new, old = both(p, deltas, dedup_threshold=threshold, max_bullets=budget)
    assert_same(new, old)


@settings(max_examples=200, deadline=None)
@given(case=cases())
def test_the_merge_in_blocks_of_two_or_three_matches_the_reference(
    case: tuple[Playbook, list[DeltaContextItem], float, int | None],
) -> None:
    """The same random cases with every block tiny, so rows past the first prefilter block, ADDs past the
    first batch and bullets past the first embedding chunk are all compared with the reference (a block's
    row offset lost would show here, not with the usual sizes on 12 bullets)."""
    p, deltas, threshold, budget = case
    with (
        mock.patch.multiple(merge_module, PREFILTER_ROWS=2, ADD_BATCH=2),
        mock.patch.object(index_module, "EMBED_CHUNK", 3),
    ):
        new, old = both(p, deltas, dedup_threshold=threshold, max_bullets=budget)
    assert_same(new, old)


def big_playbook(size: int) -> Playbook:
    bullets = [
        bullet(f"general-{i:05d}", f"lesson {i} about api {i % 97} and page {i % 13}") for i in range(1, size + 1)
    ]
    return Playbook(metadata=PlaybookMetadata(last_bullet_number=size), bullets=bullets)


class CountingBudget:
    """An unbounded budget that counts its checkpoints."""

    def __init__(self) -> None:
        self.checkpoints = 0

    def check_deadline(self) -> None:
        pass

    async def checkpoint(self) -> None:
        self.checkpoints += 1


def test_the_merge_yields_between_chunks() -> None:
    budget = CountingBudget()
    deltas = [add(f"new lesson {i} about retries") for i in range(100)]
    size = 3 * index_module.EMBED_CHUNK
    asyncio.run(
        merge(big_playbook(size), deltas, rules=PERMISSIVE, embeddings=EMBEDDINGS, dedup_threshold=0.85, budget=budget)
    )
    embedding_pauses = size // index_module.EMBED_CHUNK - 1  # between the section's embedding chunks
    assert budget.checkpoints >= embedding_pauses + len(deltas)  # and after every delta at least


def test_the_merge_stops_at_the_requests_deadline() -> None:
    context = make_context().for_request(timeout_s=0.0)
    with pytest.raises(DeadlineExceeded):
        asyncio.run(
            merge(
                big_playbook(2_000),
                [add("a lesson")],
                rules=PERMISSIVE,
                embeddings=EMBEDDINGS,
                dedup_threshold=0.85,
                budget=context,
            )
        )


def test_the_curators_merge_node_is_bound_by_the_requests_deadline() -> None:
    """`merge_deltas` hands the request's context to the merge: with its budget spent, the merge stops."""
    reflection = ReflectionResult(
        insights=[], bullet_evaluations=[], trajectory_query="q", trajectory_dataset="default"
    )
    state: AceGraphState = {
        "request_id": "r",
        "reflection": reflection,
        "playbook": big_playbook(2_000),
        "client_deltas": [add("a lesson")],
        "proposed": [],
        "rules": PERMISSIVE,
        "dedup_threshold": 0.85,
        "max_bullets": None,
    }
    live: Runtime[AgentContext] = Runtime(context=make_context().for_request(timeout_s=60.0))
    assert isinstance(asyncio.run(nodes.merge_deltas(state, live))["merged"], MergeOutcome)
    spent: Runtime[AgentContext] = Runtime(context=make_context().for_request(timeout_s=0.0))
    with pytest.raises(DeadlineExceeded):
        asyncio.run(nodes.merge_deltas(state, spent))
