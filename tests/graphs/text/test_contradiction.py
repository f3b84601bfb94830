"""The shared contradiction check: figures (numbers, dates, units) and polarity (negation, opposites), EN + JA."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphs.text.contradiction import (
    MAX_ALIGNED_CLAUSES,
    BareUnits,
    Figure,
    figure_conflicts,
    figures,
    find_contradiction,
    polarity_conflict,
)

CONTRADICTING = [
    # polarity: negation
    (
        "Always paginate: loop over page_index until the API returns an empty page.",
        "Never paginate: do not loop over page_index until the API returns an empty page.",
        "polarity",
    ),
    ("Always paginate: loop over page_index.", "Do not paginate: loop over page_index.", "polarity"),
    ("Enable caching for search results.", "Don't enable caching for search results.", "polarity"),
    ("Cache the access token between calls.", "Avoid caching the access token between calls.", "polarity"),
    ("Retry the request if the page is empty.", "Retry the request unless the page is empty.", "polarity"),
    ("Use the v2 endpoint for uploads.", "No longer use the v2 endpoint for uploads.", "polarity"),
    ("Retry when a page is left.", "Retry when no page is left.", "polarity"),
    ("The API is paginated.", "The API isn't paginated.", "polarity"),
    ("Call the API with a token.", "Call the API without a token.", "polarity"),
    ("Mark the flag as true.", "Mark the flag as false.", "polarity"),
    ("支払いの前に必ず残高を確認する。", "支払いの前に残高を確認しない。", "polarity"),
    ("支払いの前に必ず残高を確認する。", "支払いの前に残高を確認してはいけない。", "polarity"),
    ("ログを出力してから終了する。", "ログを出力せずに終了する。", "polarity"),
    ("本番環境でのデバッグは許可されている。", "本番環境でのデバッグは禁止されている。", "polarity"),
    ("必ずログを確認する", "決してログを確認しない", "polarity"),
    # polarity: opposite words
    (
        "Sort the songs by play_count in ascending order.",
        "Sort the songs by play_count in descending order.",
        "polarity",
    ),
    ("Enable two-factor login before the migration.", "Disable two-factor login before the migration.", "polarity"),
    ("Check the balance before paying.", "Check the balance after paying.", "polarity"),
    ("Add the song to the queue.", "Remove the song from the queue.", "polarity"),
    ("本番環境ではデバッグログを有効にする。", "本番環境ではデバッグログを無効にする。", "polarity"),
    ("結果は昇順に並べる。", "結果は降順に並べる。", "polarity"),
    ("このフィールドは必要です。", "このフィールドは不要です。", "polarity"),
    ("本番環境でデバッグログを出力する。", "本番環境でデバッグログを出力してはならない。", "polarity"),
    ("本番環境でデバッグログを出力する。", "本番環境でデバッグログを出力すべきでない。", "polarity"),
    ("本番環境でデバッグログを出力する。", "本番環境でデバッグログの出力は厳禁。", "polarity"),
    ("本番環境でデバッグログを出力する。", "本番環境でデバッグログを出力できません。", "polarity"),
    ("本番環境でデバッグログを出力する。", "本番環境でデバッグログの出力は避ける。", "polarity"),
    # figures
    ("東京タワーの高さは334メートル", "東京タワーの高さは333メートル", "figures"),
    ("東京タワーの高さは３３３メートル", "東京タワーの高さは334メートル", "figures"),
    ("東京タワーの高さは三百三十三メートル", "東京タワーの高さは三百三十四メートル", "figures"),
    ("A Spotify queue holds at most 1,000 songs.", "A Spotify queue holds at most 500 songs.", "figures"),
    ("Retry a failed request 3 times.", "Retry a failed request five times.", "figures"),
    ("Call complete_task once at the end.", "Call complete_task twice at the end.", "figures"),
    ("梅雨は5月から7月", "梅雨は6月から7月", "figures"),
    ("The release is on 2024-01-02.", "The release is on 2024-01-03.", "figures"),
    ("The release is on March 3, 2024.", "The release is on March 4, 2024.", "figures"),
    ("Up to 50% of the budget.", "Up to 40% of the budget.", "figures"),
    ("人口は3万人", "人口は4万人", "figures"),
]
AGREEING = [
    ("Always paginate: loop over page_index.", "Do not forget to paginate: loop over page_index."),
    ("Disable caching for search results.", "Do not enable caching for search results."),
    ("Always paginate: loop over page_index.", "Always paginate: loop over page_index, with page_size 20."),
    ("Retry a failed request 3 times.", "Retry a failed request 3 times, 2 seconds apart."),
    ("Retry no more than 3 times.", "Retry at most 3 times."),
    ("ページをループして全件取得する。", "ページをループして全件取得しなければならない。"),
    ("支払いの前に必ず残高を確認する。", "支払いの前には必ず残高を確認すること。"),
    ("まず残高を確認する。", "最初に残高を確認する。"),
    ("少ない回数で済ませる。", "少ない回数で済ませること。"),
    ("(1) open the app (2) list the songs", "(1) open the app (2) list the songs (3) verify the count"),
    ("1. Open the app\n2. List the songs", "1. Open the app\n2. List all the songs"),
    ("[shr-00001] Retry 3 times.", "[shr-00002] Retry 3 times."),
    ("Use api-00042 with gpt-4o and page_index2.", "Use api-00043 with gpt-4o and page_index3."),
    ("Step 1: open the app. Step 2: list the songs.", "Step 2: open the app. Step 3: list the songs."),
    ("Pin version 2.5.1 of the client.", "Pin version 2.5.2 of the client."),
    ("十分に確認してから送信する。", "十分に確認してから送信すること。"),
    ("Retry 3 times.", "Retry three times."),
    ("Wait 10 s between calls.", "Wait 10 seconds between calls."),
    ("The limit is 1,000 songs.", "The limit is 1000 songs."),
    ("本番環境でデバッグログを出力しない。", "本番環境でデバッグログを出力しないこと。"),
]


@pytest.mark.parametrize(("first", "second", "kind"), CONTRADICTING)
def test_contradicting_texts_are_found_both_ways(first: str, second: str, kind: str) -> None:
    for a, b in ((first, second), (second, first)):
        found = find_contradiction(a, b)
        assert found is not None, (a, b)
        assert found.kind == kind
        assert found.detail


@pytest.mark.parametrize(("first", "second"), AGREEING)
def test_agreeing_texts_are_not_contradictions(first: str, second: str) -> None:
    assert find_contradiction(first, second) is None
    assert find_contradiction(second, first) is None


@pytest.mark.parametrize("text", [pair[0] for pair in CONTRADICTING + AGREEING])
def test_a_text_never_contradicts_itself(text: str) -> None:
    assert find_contradiction(text, text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("東京タワーの高さは333メートルである。", [("number", "333", "メートル")]),
        ("A queue holds at most 1,000 songs.", [("number", "1000", "song")]),
        ("3万人が参加", [("number", "30000", "人")]),
        ("三百三十三メートル", [("number", "333", "メートル")]),
        ("一般に一人で二つ", [("number", "1", "人"), ("number", "2", "つ")]),
        ("50% of 10k items", [("number", "50", "%"), ("number", "10000", "item")]),
        (
            "In 1958, on March 3, 2024 at 10:30",
            [("number", "1958", ""), ("date", "2024-03-03", ""), ("date", "t10:30", "")],
        ),
        ("2024年5月1日に開始", [("date", "2024-05-01", "")]),
        ("The limit is 3. Then stop.", [("number", "3", "")]),
        ("(1) open (2) list (3) close (4) check (5) done", []),
        ("①開く②一覧③閉じる", []),
        ("1. Open the app\n2. List the songs", []),
        ("Step 1: open. Step 2: close.", []),
        ("[shr-00001] api-00042 gpt-4o page_index2 v2 2.5.1", []),
        ("十分に確認する", []),
        ("the one that works, one of them, one by one", []),
        ("one page at a time", [("number", "1", "page")]),
    ],
)
def test_figures_are_quantities_not_labels(text: str, expected: list[tuple[str, str, str]]) -> None:
    assert [(f.kind, f.value, f.unit) for f in figures(text)] == expected


@pytest.mark.parametrize(
    ("first", "second", "bare", "conflicts"),
    [
        ("東京タワーの高さは300メートル", "333メートル", "either", True),
        ("東京タワーの高さは300メートル", "333", "second", True),  # a bare truth matches any unit
        ("Use page_size 20 when listing.", "1000 songs", "second", False),  # different roles
        ("Use page_size 20 when listing.", "1000 songs", "either", True),
        ("Updated 2024-01-01; limit 1000 songs", "1000 songs", "second", False),  # a date is not a count
        ("(1) open (2) list (3) close", "1000 songs", "either", False),
    ],
)
def test_figure_conflicts_need_the_same_role(first: str, second: str, bare: BareUnits, conflicts: bool) -> None:
    assert bool(figure_conflicts(figures(first), figures(second), bare=bare)) is conflicts


def test_every_cue_is_text() -> None:
    """A bare `no` in YAML is the boolean False: the loader refuses it instead of matching "false"."""
    from graphs.text.contradiction import _only_strings

    with pytest.raises(TypeError, match="quote it"):
        _only_strings({"negation": {"en": ["not", False]}})


def every_pair(first: list[Figure], second: list[Figure], bare: BareUnits) -> list[tuple[Figure, Figure]]:
    """The rule written as its definition: every x against every y (quadratic, as it first was)."""
    first_keys, second_keys = {f.key for f in first}, {f.key for f in second}
    pairs: dict[object, tuple[Figure, Figure]] = {}
    for x in (f for f in first if f.key not in second_keys):
        for y in (f for f in second if f.key not in first_keys):
            if x.kind == y.kind and (x.unit == y.unit or not y.unit or (bare == "either" and not x.unit)):
                pairs.setdefault((x.key, y.key), (x, y))
    return list(pairs.values())


def some_figures(values: list[str]) -> st.SearchStrategy[list[Figure]]:
    """Figures over `values`, with repeats of a value in other units and writings (`#n`)."""
    return st.lists(
        st.builds(
            lambda kind, value, unit, n: Figure(kind, value, unit, f"{value}{unit}#{n}"),
            st.sampled_from(["number", "date"]),
            st.sampled_from(values),
            st.sampled_from(["", "m", "年"]),
            st.integers(0, 3),
        ),
        max_size=20,
    )


# The two sides share a few values, so most figures are ones the other side lacks: up to 400 candidate pairs,
# past _DIRECT_PAIRS (64) in most examples, so the indexed pairing is checked as often as the direct one.
FIRST_SIDE = some_figures([str(v) for v in range(0, 16)])
SECOND_SIDE = some_figures([str(v) for v in range(12, 28)])


@settings(max_examples=400, deadline=None)
@given(FIRST_SIDE, SECOND_SIDE, st.sampled_from(["either", "second"]), st.one_of(st.none(), st.integers(1, 4)))
def test_figure_conflicts_are_every_pairs_first_ones(
    first: list[Figure], second: list[Figure], bare: BareUnits, limit: int | None
) -> None:
    """The indexed pairing gives what comparing every pair gives, in the same order, cut at `limit`."""
    expected = every_pair(first, second, bare)
    assert figure_conflicts(first, second, bare=bare, limit=limit) == expected[:limit]


def test_a_limit_cuts_the_pairs_and_figures_of_other_roles_never_pair() -> None:
    """1,500 numbers a side: the first three pairs when three are asked for; none across units."""
    first = [Figure("number", str(i), "", str(i)) for i in range(1_500)]
    second = [Figure("number", str(i), "", str(i)) for i in range(1_500, 3_000)]
    assert len(figure_conflicts(first, second, limit=3)) == 3
    apart = [Figure("number", str(i), "m", str(i)) for i in range(1_500)]
    other_unit = [Figure("number", str(i), "年", str(i)) for i in range(1_500, 3_000)]
    assert figure_conflicts(apart, other_unit) == []  # no pair shares a role: nothing to walk


def test_only_the_first_clauses_of_a_long_text_are_aligned() -> None:
    """MAX_ALIGNED_CLAUSES bounds the work on texts of thousands of tiny clauses; a snippet has a few dozen."""
    filler = [f"item{i} is listed here" for i in range(MAX_ALIGNED_CLAUSES + 50)]
    early = ". ".join(["Always paginate the results", *filler])
    late = ". ".join([*filler, "Always paginate the results"])
    assert polarity_conflict(early, "Never paginate the results") is not None
    assert polarity_conflict(late, "Never paginate the results") is None  # past the bound: not read
