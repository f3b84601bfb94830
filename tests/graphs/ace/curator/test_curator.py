"""The Curator's merge (deterministic, grounded, ids never reused, grow-and-refine, budget) and its heuristic."""

from __future__ import annotations

import asyncio
import datetime

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.ace import (
    MAX_BULLET_NUMBER,
    BulletEvaluation,
    DeltaContextItem,
    DeltaType,
    Insight,
    Playbook,
    PlaybookMetadata,
    ReflectionResult,
)
from graphs.ace.checks import delta_problems
from graphs.ace.curator.heuristic import propose_deltas
from graphs.ace.curator.merge import MergeOutcome, apply_evaluations, merge
from graphs.ace.playbook.ids import BulletIdsExhausted, IdAllocator, high_water, id_number
from graphs.ace.playbook.sections import SectionRules, section_rules, slug_prefix
from graphs.ace.search.hybrid import HybridSearch
from graphs.ace.search.index import IndexCache
from graphs.config_files import SectionDefinition, load_sections
from graphs.embeddings.cache import CachedEmbeddings
from graphs.embeddings.hashing import HashingEmbeddings
from librarian_svc.settings import ENV_DEFAULTS, PROJECT_ROOT
from tests.graphs.ace.helpers import bullet, playbook, real_playbook
from tests.graphs.ace.strategies import bullet_ids, contents, playbooks

EMBEDDINGS = CachedEmbeddings(HashingEmbeddings(dim=256), model="curator-test")
PERMISSIVE = SectionRules(dataset="default", definitions=(), permissive=True)
SECTIONS = load_sections(PROJECT_ROOT / "config")
APPWORLD = section_rules(SECTIONS, "appworld")
NOW = datetime.datetime(2025, 1, 1, tzinfo=datetime.UTC)
SHR = "strategies_and_hard_rules"
SHR_00001 = "Make sure to end code blocks with ``` followed by a newline(\\n)."


def run_merge(
    p: Playbook,
    deltas: list[DeltaContextItem],
    *,
    rules: SectionRules = PERMISSIVE,
    dedup_threshold: float = 0.85,
    max_bullets: int | None = None,
    counters_changed: bool = False,
    caller_deltas: int = 0,
) -> MergeOutcome:
    return asyncio.run(
        merge(
            p,
            deltas,
            caller_deltas=caller_deltas,
            rules=rules,
            embeddings=EMBEDDINGS,
            dedup_threshold=dedup_threshold,
            max_bullets=max_bullets,
            counters_changed=counters_changed,
            now=NOW,
        )
    )


@st.composite
def delta_lists(draw: st.DrawFn, p: Playbook) -> list[DeltaContextItem]:
    ids = [b.id for b in p.bullets] or ["x-00001"]
    target = st.sampled_from(ids) | bullet_ids
    one = st.one_of(
        st.builds(DeltaContextItem, type=st.just("ADD"), section=st.sampled_from(["alpha", "beta"]), content=contents),
        st.builds(
            DeltaContextItem, type=st.just("UPDATE"), section=st.just("alpha"), bullet_id=target, content=contents
        ),
        st.builds(DeltaContextItem, type=st.just("DELETE"), section=st.just("alpha"), bullet_id=target),
    )
    return draw(st.lists(one, max_size=8))


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_merge_is_deterministic_grounded_and_never_reuses_an_id(data: st.DataObject) -> None:
    original = data.draw(playbooks(max_size=8))
    deltas = data.draw(delta_lists(original))
    first = run_merge(original, deltas)
    second = run_merge(original, deltas)
    assert first.playbook == second.playbook
    assert first.applied == second.applied
    ids = [b.id for b in first.playbook.bullets]
    assert len(ids) == len(set(ids))
    before = {b.id for b in original.bullets}
    mark = high_water(original)
    added = [d.bullet_id for d in first.applied if d.type == "ADD"]
    for delta in first.applied:
        if delta.type != "ADD":
            assert delta.bullet_id in before or delta.bullet_id in added  # only bullets that exist
    for new_id in added:
        assert new_id is not None
        assert new_id not in before
        assert (id_number(new_id) or 0) > mark  # above every number ever issued
    assert first.playbook.metadata.last_bullet_number >= mark


def test_a_deleted_id_is_never_issued_again() -> None:
    p = playbook(bullet("general-00007", "keep"), bullet("general-00009", "to delete"))
    after_delete = run_merge(
        p, [DeltaContextItem(type="DELETE", section="general", bullet_id="general-00009")]
    ).playbook
    assert [b.id for b in after_delete.bullets] == ["general-00007"]
    added = run_merge(after_delete, [DeltaContextItem(type="ADD", section="general", content="a new lesson")])
    assert added.applied[0].bullet_id == "general-00010"


def test_adds_get_the_configured_prefix_and_land_in_their_section() -> None:
    p = real_playbook()
    outcome = run_merge(
        p,
        [
            DeltaContextItem(
                type="ADD", section="verification_checklist", content="Verify the queue length after edits."
            ),
            DeltaContextItem(type="ADD", section="others", content="Say thanks to the supervisor when done."),
        ],
        rules=APPWORLD,
    )
    assert [d.bullet_id for d in outcome.applied] == ["vc-00360", "misc-00361"]
    sections = [b.section for b in outcome.playbook.bullets]
    assert sections == sorted(sections, key=list(dict.fromkeys(sections)).index)  # still grouped by section
    assert outcome.playbook.metadata.last_bullet_number == 361


def test_a_near_duplicate_add_becomes_an_update() -> None:
    p = real_playbook()
    original = next(b for b in p.bullets if b.id == "shr-00153")
    rewrite = original.content.replace("always", "always, without exception,")
    outcome = run_merge(p, [DeltaContextItem(type="ADD", section=original.section, content=rewrite, reasoning="r")])
    (applied,) = outcome.applied
    assert applied.type == "UPDATE"
    assert applied.bullet_id in {"shr-00153", "shr-00277"}  # shr-00277 is a near-verbatim copy of shr-00153
    assert "near-duplicate" in applied.reasoning
    assert len(outcome.playbook.bullets) == len(p.bullets)


def test_an_identical_add_is_dropped_and_a_distinct_one_added() -> None:
    p = playbook(bullet("general-00001", "Loop over page_index until a page is empty."))
    outcome = run_merge(
        p,
        [
            DeltaContextItem(type="ADD", section="general", content="loop over PAGE_INDEX until a page is empty. "),
            DeltaContextItem(type="ADD", section="general", content="Check the Venmo balance before paying."),
        ],
    )
    assert [d.type for d in outcome.applied] == ["ADD"]
    assert "identical to general-00001" in outcome.notes[0]


def test_the_threshold_is_configurable() -> None:
    p = playbook(bullet("general-00001", "Loop over page_index until a page is empty."))
    delta = DeltaContextItem(
        type="ADD", section="general", content="Loop over page_index until the API returns an empty page."
    )
    assert run_merge(p, [delta], dedup_threshold=0.9).applied[0].type == "ADD"  # cosine 0.84
    assert run_merge(p, [delta], dedup_threshold=0.8).applied[0].type == "UPDATE"


def test_updates_and_deletes_of_missing_bullets_are_skipped_with_a_note() -> None:
    p = playbook(bullet("general-00001", "x"))
    outcome = run_merge(
        p,
        [
            DeltaContextItem(type="UPDATE", section="general", bullet_id="general-00042", content="y"),
            DeltaContextItem(type="DELETE", section="general", bullet_id="nope-1"),
            DeltaContextItem(type="ADD", section="not allowed", content="z"),
        ],
        rules=section_rules({"default": [SectionDefinition(name="general")]}, "d"),
    )
    assert outcome.applied == []
    assert len(outcome.notes) == 3
    assert outcome.playbook.bullets == p.bullets


def test_the_budget_prunes_the_least_confident_first() -> None:
    p = playbook(
        bullet("general-00001", "trusted", helpful=9, harmful=1),
        bullet("general-00002", "doubtful", helpful=1, harmful=5),
        bullet("general-00003", "new"),
        bullet("general-00004", "bad", helpful=0, harmful=2),
    )
    outcome = run_merge(p, [DeltaContextItem(type="ADD", section="general", content="fresh lesson")], max_bullets=3)
    assert outcome.pruned == ["general-00002", "general-00004"]
    assert [b.id for b in outcome.playbook.bullets] == ["general-00001", "general-00003", "general-00005"]
    assert [d.type for d in outcome.applied] == ["ADD", "DELETE", "DELETE"]


def test_evaluations_move_the_counters() -> None:
    p = playbook(bullet("general-00001", "a", helpful=1), bullet("general-00002", "b"))
    evaluations = [
        BulletEvaluation(bullet_id="general-00001", tag="helpful"),
        BulletEvaluation(bullet_id="general-00002", tag="harmful"),
        BulletEvaluation(bullet_id="general-00002", tag="neutral"),
    ]
    updated = apply_evaluations(p, evaluations)
    assert [(b.helpful, b.harmful, b.confidence_score) for b in updated.bullets] == [(2, 0, 1.0), (0, 1, 0.0)]
    assert apply_evaluations(p, [BulletEvaluation(bullet_id="general-00001", tag="neutral")]) is p


def test_updated_at_moves_only_when_something_changed() -> None:
    p = Playbook(metadata=PlaybookMetadata(updated_at=datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)))
    assert run_merge(p, []).playbook.metadata.updated_at.year == 2020
    assert run_merge(p, [], counters_changed=True).playbook.metadata.updated_at == NOW


@pytest.mark.parametrize(
    ("delta", "path", "message"),
    [
        (
            DeltaContextItem(type="UPDATE", section="s", bullet_id="zzz-1", content="x"),
            "$.deltas[0].bullet_id",
            "no bullet",
        ),
        (DeltaContextItem(type="DELETE", section="s"), "$.deltas[0].bullet_id", "needs a bullet_id"),
        (DeltaContextItem(type="UPDATE", section=SHR, bullet_id="shr-00001"), "$.deltas[0].content", "needs content"),
        (
            DeltaContextItem(type="UPDATE", section="others", bullet_id="shr-00001", content="x"),
            "$.deltas[0].section",
            "is in section 'strategies_and_hard_rules', not 'others'",
        ),
        (
            DeltaContextItem(type="DELETE", section="nonsense", bullet_id="shr-00001"),
            "$.deltas[0].section",
            "is in section 'strategies_and_hard_rules', not 'nonsense'",
        ),
        (
            DeltaContextItem(type="DELETE", section=SHR, bullet_id="shr-00001", content="whatever"),
            "$.deltas[0].content",
            "DELETE content does not match bullet 'shr-00001'",
        ),
        (DeltaContextItem(type="ADD", section="nowhere", content="x"), "$.deltas[0].section", "unknown section"),
        (DeltaContextItem(type="ADD", section="others", content="  "), "$.deltas[0].content", "needs content"),
    ],
)
def test_a_callers_invalid_deltas_are_named(delta: DeltaContextItem, path: str, message: str) -> None:
    (problem,) = delta_problems([delta], real_playbook(), APPWORLD)
    assert problem.path == path
    assert message in problem.message


def test_updating_a_bullet_deleted_earlier_is_a_problem() -> None:
    deltas = [
        DeltaContextItem(type="DELETE", section=SHR, bullet_id="shr-00001"),
        DeltaContextItem(type="UPDATE", section=SHR, bullet_id="shr-00001", content="x"),
    ]
    assert [p.path for p in delta_problems(deltas, real_playbook(), APPWORLD)] == ["$.deltas[1].bullet_id"]


@pytest.mark.parametrize(
    "deltas",
    [
        [DeltaContextItem(type="DELETE", section=SHR, bullet_id="shr-00001", content=f"  {SHR_00001}\n")],
        [
            DeltaContextItem(type="UPDATE", section=SHR, bullet_id="shr-00001", content="End code blocks with ```."),
            DeltaContextItem(type="DELETE", section=SHR, bullet_id="shr-00001", content="End code blocks with ```."),
        ],
    ],
    ids=["its-content", "its-content-after-an-update"],
)
def test_a_delete_may_confirm_the_content_it_removes(deltas: list[DeltaContextItem]) -> None:
    assert delta_problems(deltas, real_playbook(), APPWORLD) == []


def reflection(*lessons: str, evaluations: list[BulletEvaluation] | None = None) -> ReflectionResult:
    return ReflectionResult(
        insights=[
            Insight(
                reasoning="r", error_identification="e", root_cause_analysis="c", correct_approach="a", key_insight=k
            )
            for k in lessons
        ],
        bullet_evaluations=evaluations or [],
        trajectory_query="q",
        trajectory_dataset="appworld",
    )


SEARCH = HybridSearch(EMBEDDINGS, alpha=float(ENV_DEFAULTS["SEARCH_ALPHA"]), cache=IndexCache())


def test_the_heuristic_files_each_lesson_in_the_section_it_fits() -> None:
    p = real_playbook()
    lessons = reflection(
        "For Venmo payment requests, check show_venmo_balance and add funds from a payment card first.",
        "For Venmo payment requests, check show_venmo_balance and add funds from a payment card first.",
        "東京タワーの高さは333メートル",
    )
    deltas = asyncio.run(propose_deltas(lessons, p, APPWORLD, SEARCH))
    assert [d.type for d in deltas] == ["ADD", "ADD"]  # the repeated lesson once
    assert deltas[0].section in {"strategies_and_hard_rules", "apis_to_use_for_specific_information"}
    assert deltas[1].section == "others"  # nothing in the playbook or the section descriptions fits


def test_the_heuristic_uses_section_descriptions_for_an_empty_playbook() -> None:
    deltas = asyncio.run(
        propose_deltas(reflection("Verification checklist: verify the results"), Playbook(), APPWORLD, SEARCH)
    )
    assert deltas[0].section == "verification_checklist"
    permissive = asyncio.run(propose_deltas(reflection("anything"), Playbook(), PERMISSIVE, SEARCH))
    assert permissive[0].section == "general"


def test_the_heuristic_deletes_a_persistently_harmful_bullet() -> None:
    p = playbook(
        bullet("general-00001", "misleading", helpful=1, harmful=4),
        bullet("general-00002", "fine", harmful=4, helpful=3),
    )
    evaluations = [BulletEvaluation(bullet_id=i, tag="harmful") for i in ("general-00001", "general-00002")]
    deltas = asyncio.run(propose_deltas(reflection(evaluations=evaluations), p, PERMISSIVE, SEARCH))
    assert [(d.type, d.bullet_id) for d in deltas] == [("DELETE", "general-00001")]


@pytest.mark.parametrize(
    ("section", "prefix"),
    [("strategies_and_hard_rules", "strategies-and-hard-rule"), ("My Section!", "my-section"), ("戦略", "s")],
)
def test_sections_without_a_configured_prefix_get_a_slug(section: str, prefix: str) -> None:
    assert slug_prefix(section).startswith(prefix)
    assert slug_prefix(section) == slug_prefix(section)


@pytest.mark.parametrize(
    ("mark", "issued"),
    [(MAX_BULLET_NUMBER - 2, 2), (MAX_BULLET_NUMBER - 1, 1), (MAX_BULLET_NUMBER, 0)],
)
def test_the_allocator_stops_at_the_contracts_maximum(mark: int, issued: int) -> None:
    allocator = IdAllocator(Playbook(metadata=PlaybookMetadata(last_bullet_number=mark)), dataset="hw")
    issued_ids = [allocator.issue("general") for _ in range(issued)]
    assert issued_ids[-1:] == ([f"general-{MAX_BULLET_NUMBER}"] if issued else [])
    with pytest.raises(BulletIdsExhausted) as refused:
        allocator.issue("general")
    assert allocator.last == MAX_BULLET_NUMBER
    assert refused.value.status_code == 422
    assert [d.path for d in refused.value.details] == ["$.playbook.metadata.last_bullet_number"]
    assert "'hw' has no bullet id left" in refused.value.message


def test_a_full_playbook_refuses_an_add_and_returns_nothing() -> None:
    full = playbook(bullet("general-00001", "Always paginate."))
    full.metadata.last_bullet_number = MAX_BULLET_NUMBER
    add = DeltaContextItem(type="ADD", section="general", content="Count the results before answering.")
    with pytest.raises(BulletIdsExhausted):
        run_merge(full, [add])
    update = DeltaContextItem(type="UPDATE", section="general", bullet_id="general-00001", content="Paginate.")
    assert run_merge(full, [update]).playbook.metadata.last_bullet_number == MAX_BULLET_NUMBER  # no id needed


@pytest.mark.parametrize(
    ("bullet_id", "number"),
    [
        ("shr-00042", 42),
        ("a-b-0007", 7),
        ("shr", None),
        ("shr-", None),
        ("shr-1e5", None),
        (f"gen-{MAX_BULLET_NUMBER}", MAX_BULLET_NUMBER),
        (f"gen-{MAX_BULLET_NUMBER + 1}", None),  # past the maximum: no id the allocator issues
        ("doc-20240101120000", None),
        ("gen-" + "0" * 120 + "3", 3),
        ("gen-" + "9" * 120, None),
    ],
)
def test_an_ids_number_is_read_up_to_the_maximum(bullet_id: str, number: int | None) -> None:
    assert id_number(bullet_id) == number


def test_an_id_past_the_maximum_moves_no_mark_and_is_never_issued() -> None:
    """Counting it would block every ADD for good; no issued id can equal it, so leaving it out is safe."""
    held = playbook(bullet("gen-1000000000001", "Always paginate."), bullet("gen-00004", "Count first."))
    assert high_water(held) == 4
    allocator = IdAllocator(held)
    allocator.reserve(["ticket-20240101120000"])  # a trajectory's used id, which has no pattern
    assert allocator.issue("gen") == "gen-00005"


def test_the_allocator_skips_taken_ids() -> None:
    allocator = IdAllocator(playbook(bullet("a-00002", "x"), bullet("a-00001-x", "y")))
    assert allocator.issue("a") == "a-00003"
    allocator.reserve(["b-00010"])
    assert allocator.issue("b") == "b-00011"


# --- grow-and-refine never merges opposites (issue 13, item 7) -----------------------------------------------

PAGINATE = "Always paginate: loop over page_index until the API returns an empty page."


def cosine(first: str, second: str) -> float:
    a, b = (np.asarray(v) for v in EMBEDDINGS.embed_documents([first, second]))
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


@pytest.mark.parametrize(
    ("existing", "added", "threshold"),
    [
        (PAGINATE, "Never paginate: do not loop over page_index until the API returns an empty page.", 0.85),
        (PAGINATE, "Do not paginate: never loop over page_index until the API returns an empty page.", 0.85),
        (
            "Sort the songs by play_count in ascending order before picking the top ones.",
            "Sort the songs by play_count in descending order before picking the top ones.",
            0.85,
        ),
        (
            "Enable two-factor login for the admin account before the migration.",
            "Disable two-factor login for the admin account before the migration.",
            0.85,
        ),
        (
            "A Spotify queue holds at most 1000 songs, so split longer playlists.",
            "A Spotify queue holds at most 500 songs, so split longer playlists.",
            0.85,
        ),
        (
            "Call complete_task once at the very end of the task.",
            "Call complete_task twice at the very end of the task.",
            0.85,
        ),
        ("東京タワーの高さは333メートルである。", "東京タワーの高さは334メートルである。", 0.85),
        ("本番環境では必ずデバッグログを有効にする。", "本番環境では必ずデバッグログを無効にする。", 0.85),
        ("支払いの前に必ず残高を確認する。", "支払いの前に残高を確認しない。", 0.7),
        ("支払いの前に必ず残高を確認する。", "支払いの前に残高を確認してはいけない。", 0.7),
    ],
)
def test_an_add_that_contradicts_its_near_duplicate_stays_a_separate_add(
    existing: str, added: str, threshold: float
) -> None:
    assert cosine(existing, added) >= threshold  # without the check this ADD would become an UPDATE
    p = playbook(
        bullet("api-00001", existing, section="apis", helpful=5), bullet("api-00002", "unrelated", section="apis")
    )
    delta = DeltaContextItem(type="ADD", section="apis", content=added, reasoning="lesson")
    outcome = run_merge(p, [delta], dedup_threshold=threshold)
    (applied,) = outcome.applied
    assert (applied.type, applied.bullet_id) == ("ADD", "apis-00003")
    assert "contradicts api-00001" in applied.reasoning
    kept = {b.id: b for b in outcome.playbook.bullets}
    assert (kept["api-00001"].content, kept["api-00001"].helpful) == (existing, 5)
    assert (kept["apis-00003"].content, kept["apis-00003"].helpful) == (added, 0)
    assert any("api-00001" in note and "contradicts" in note for note in outcome.notes)


@pytest.mark.parametrize(
    "added",
    [
        "Do not forget to paginate: loop over page_index until the API returns an empty page.",
        "Always paginate: loop over page_index until the API returns an empty page, with page_size 20.",
    ],
)
def test_an_agreeing_near_duplicate_still_refines_the_bullet_and_keeps_its_votes(added: str) -> None:
    p = playbook(bullet("api-00001", PAGINATE, section="apis", helpful=5))
    outcome = run_merge(p, [DeltaContextItem(type="ADD", section="apis", content=added)])
    (applied,) = outcome.applied
    assert (applied.type, applied.bullet_id) == ("UPDATE", "api-00001")
    (refined,) = outcome.playbook.bullets
    assert (refined.content, refined.helpful) == (added, 5)


def test_a_contradicted_neighbour_is_skipped_for_an_agreeing_one() -> None:
    never = "Never paginate: do not loop over page_index until the API returns an empty page."
    agreeing = "Always paginate: loop over page_index until an API returns an empty page."
    p = playbook(
        bullet("api-00001", never, section="apis", harmful=4),
        bullet("api-00002", agreeing, section="apis", helpful=2),
    )
    added = "Paginate: loop over page_index until the API returns an empty page."
    assert cosine(never, added) > cosine(agreeing, added) >= 0.85  # the contradicted one is the nearest
    outcome = run_merge(p, [DeltaContextItem(type="ADD", section="apis", content=added)])
    assert [(d.type, d.bullet_id) for d in outcome.applied] == [("UPDATE", "api-00002")]
    assert outcome.playbook.bullets[0].content == never
    assert any("kept apart from api-00001" in note for note in outcome.notes)


@pytest.mark.parametrize(
    ("new_content", "votes"),
    [
        ("Never paginate: do not loop over page_index.", (0, 0)),  # the meaning changed: votes do not carry
        ("東京タワーの高さは334メートルである。", (0, 0)),
        ("Always paginate: loop over page_index until a page comes back empty.", (5, 1)),  # a rewording keeps them
    ],
)
def test_an_update_that_changes_the_meaning_does_not_inherit_the_votes(
    new_content: str, votes: tuple[int, int]
) -> None:
    old = "東京タワーの高さは333メートルである。" if "メートル" in new_content else PAGINATE
    p = playbook(bullet("api-00001", old, section="apis", helpful=5, harmful=1))
    outcome = run_merge(
        p, [DeltaContextItem(type="UPDATE", section="apis", bullet_id="api-00001", content=new_content)]
    )
    (updated,) = outcome.playbook.bullets
    assert updated.content == new_content
    assert (updated.helpful, updated.harmful) == votes
    assert any("votes" in note for note in outcome.notes) is (votes == (0, 0))


@pytest.mark.parametrize("caller", ["UPDATE", "DELETE"])
@pytest.mark.parametrize("curator", ["UPDATE", "DELETE"])
def test_the_callers_update_or_delete_of_a_bullet_settles_it_against_the_curators(
    caller: DeltaType, curator: DeltaType
) -> None:
    """The curator's UPDATE or DELETE of that bullet is left out with a note; its deltas on others still apply."""
    p = playbook(bullet("general-00001", "Paginate."), bullet("general-00002", "Count first."))
    deltas = [
        DeltaContextItem(type=caller, section="general", bullet_id="general-00001", content="Always paginate."),
        DeltaContextItem(type=curator, section="general", bullet_id="general-00001", content="Never mind."),
        DeltaContextItem(type=curator, section="general", bullet_id="general-00002", content="Count twice."),
    ]
    outcome = run_merge(p, deltas, caller_deltas=1)
    assert [(d.type, d.bullet_id) for d in outcome.applied] == [(caller, "general-00001"), (curator, "general-00002")]
    assert (
        f"the curator's {curator} of general-00001 was left out: this request's own {caller} of that bullet comes first"
        in outcome.notes
    )


def test_a_curators_add_does_not_become_an_update_of_a_bullet_the_caller_updated() -> None:
    """Its lesson near-duplicates the caller's correction: dropped with a note, not written over it."""
    p = playbook(bullet("general-00001", "東京タワーの高さは300メートルである。"))
    corrected = "東京タワーの高さは333メートルである。"
    deltas = [
        DeltaContextItem(type="UPDATE", section="general", bullet_id="general-00001", content=corrected),
        DeltaContextItem(type="ADD", section="general", content="東京タワーの高さは333メートルです。"),
    ]
    settled = run_merge(p, deltas, caller_deltas=1)
    assert [d.type for d in settled.applied] == ["UPDATE"]
    assert [b.content for b in settled.playbook.bullets] == [corrected]
    assert any("which this request's own UPDATE settles" in note for note in settled.notes)
    both_callers = run_merge(p, deltas, caller_deltas=2)  # the caller's own ADD may refine its own UPDATE
    assert [d.type for d in both_callers.applied] == ["UPDATE", "UPDATE"]
