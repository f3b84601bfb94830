"""The official ACE text format: the three real AppWorld playbooks round-trip; any grouped playbook round-trips."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings

from contracts.ace import Playbook
from graphs.ace.playbook.sections import section_rules
from graphs.ace.playbook.text_format import (
    PlaybookTextError,
    export_playbook,
    heading_to_section,
    normalize_newlines,
    parse_playbook,
)
from graphs.config_files import load_sections
from librarian_svc.settings import PROJECT_ROOT
from tests.graphs.ace.helpers import INITIAL, OFFLINE, ONLINE, REAL_PLAYBOOKS, bullet, playbook, read_text
from tests.graphs.ace.strategies import playbooks

APPWORLD = section_rules(load_sections(PROJECT_ROOT / "config"), "appworld")


def non_blank_lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.strip()]


@pytest.mark.parametrize(
    ("path", "count"), [(INITIAL, 8), (OFFLINE, 318), (ONLINE, 359)], ids=lambda p: getattr(p, "stem", p)
)
def test_real_playbooks_round_trip(path: Path, count: int) -> None:
    text = read_text(path)
    parsed = parse_playbook(text)
    assert len(parsed.bullets) == count
    exported = export_playbook(parsed)
    assert non_blank_lines(exported) == non_blank_lines(text)  # every heading and bullet line, byte for byte
    again = parse_playbook(exported)
    assert again.bullets == parsed.bullets
    assert again.metadata.section_titles == parsed.metadata.section_titles
    assert again.metadata.last_bullet_number == parsed.metadata.last_bullet_number
    assert export_playbook(parse_playbook(exported)) == exported


@pytest.mark.parametrize("path", REAL_PLAYBOOKS, ids=lambda p: p.stem)
def test_real_headings_are_the_configured_appworld_sections(path: Path) -> None:
    parsed = parse_playbook(read_text(path))
    assert list(parsed.metadata.section_titles) == APPWORLD.names
    assert all(APPWORLD.allows(b.section) for b in parsed.bullets)
    for b in parsed.bullets:
        assert b.id.startswith(APPWORLD.prefix(b.section) + "-"), b.id


def test_the_real_playbook_keeps_its_id_high_water_mark() -> None:
    parsed = parse_playbook(read_text(ONLINE))
    assert parsed.metadata.last_bullet_number == 359
    assert (
        parsed.metadata.section_titles["apis_to_use_for_specific_information"] == "APIs TO USE FOR SPECIFIC INFORMATION"
    )
    assert parsed.metadata.section_titles["troubleshooting_and_pitfalls"] == "TROUBLESHOOTING AND PITFALLS:"


def grouped(p: Playbook) -> Playbook:
    """The playbook with its bullets grouped by section in first-appearance order (what export writes)."""
    order = list(dict.fromkeys(b.section for b in p.bullets))
    return Playbook(metadata=p.metadata, bullets=sorted(p.bullets, key=lambda b: order.index(b.section)))


@settings(max_examples=100, deadline=None)
@given(playbooks(text_format=True))
def test_any_playbook_round_trips_through_text(original: Playbook) -> None:
    expected = grouped(original)
    again = parse_playbook(export_playbook(expected))
    unix = [msgspec.structs.replace(b, content=normalize_newlines(b.content)) for b in expected.bullets]
    assert again.bullets == unix  # the format's line breaks are \n: a \r in content comes back as one
    assert list(again.metadata.section_titles) == list(dict.fromkeys(b.section for b in expected.bullets))


def test_counters_and_multi_line_content_round_trip() -> None:
    p = playbook(
        bullet(
            "shr-00001", "line one\nline two\n\n  indented", section="strategies_and_hard_rules", helpful=3, harmful=1
        ),
        bullet("shr-00002", "helpful=1 harmful=2 :: looks like counters", section="strategies_and_hard_rules"),
    )
    text = export_playbook(p)
    assert "[shr-00001] helpful=3 harmful=1 :: line one\n  line two\n  \n    indented" in text
    assert "[shr-00002] helpful=0 harmful=0 :: helpful=1 harmful=2 :: looks like counters" in text
    assert parse_playbook(text).bullets == p.bullets


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[a-00001] before any heading", "line 1: bullet 'a-00001' comes before"),
        ("## S\nnot a bullet", "line 2: expected"),
        ("## S\n[a-00001] x\n[a-00001] y", "line 3: id 'a-00001' repeats line 2"),
        ("## S\n[bad id!] x", "line 2"),
        ("## S\n[a-00001] ", "line 2"),
        ("## ???", "line 1: a heading needs a name"),
        ("## S\n[a-1] x\n[a-2] helpful=99999999999 harmful=0 :: x", "line 3: Expected `int` <= 1000000000"),
    ],
)
def test_malformed_text_names_the_line(text: str, message: str) -> None:
    with pytest.raises(PlaybookTextError, match=message.replace("(", r"\(")):
        parse_playbook(text)


@pytest.mark.parametrize(
    "rest",
    [
        "helpful=-1 harmful=0 :: x",
        "harmful=1 helpful=2 :: x",
        "helpful=3 :: x",
        "helpful=0x10 harmful=0 :: x",
        "helpful=1_000 harmful=0 :: x",
        "helpful=+5 harmful=0 :: x",
        "helpful=\uff11\uff12 harmful=0 :: x",  # full-width digits
        "helpful=3  harmful=1 :: x",
        "helpful=3 harmful=1 ::x",
        "helpful=3 harmful=1 ::",
        "Helpful=3 harmful=1 :: x",
        " helpful = 3",
        "helpful\uff1d3 harmful\uff1d1 :: x",  # full-width equals signs
        "\uff48\uff45\uff4c\uff50\uff46\uff55\uff4c=3 harmful=1 :: x",  # full-width letters
        "\u200bhelpful=3 harmful=1 :: x",  # behind a zero-width space
        "\u3000help\u200dful=3 harmful=1 :: x",  # an ideographic space, a zero-width joiner inside
        "helpful" + " " * 50 + "=3 harmful=0 :: x",  # white space does not count toward the window read
        "help" + "\u200b" * 40 + "ful=3",  # nor do invisible characters
    ],
)
def test_a_malformed_vote_prefix_is_refused_not_kept_as_content(rest: str) -> None:
    """Kept as text, its votes would be lost and the bullet would say `helpful=…` to every reader."""
    with pytest.raises(PlaybookTextError, match=r"line 3: bullet 'a-2' starts like vote counters"):
        parse_playbook(f"## S\n[a-1] fine\n[a-2] {rest}")


@pytest.mark.parametrize("content", ["helpful tips first", "Helpful: read the docs", "harmful side effects"])
def test_text_that_only_mentions_votes_is_content(content: str) -> None:
    assert parse_playbook(f"## S\n[a-1] {content}").bullets[0].content == content


@pytest.mark.parametrize(
    "content",
    [
        "helpful=abc",
        "Harmful = 2 :: x",
        " helpful=3 harmful=1 :: x",
        "helpful\uff1d3 harmful\uff1d1 :: x",
        "\u200bhelpful=3 harmful=1 :: x",
    ],
)
def test_content_that_starts_like_counters_is_exported_after_counters(content: str) -> None:
    p = playbook(bullet("shr-00001", content, section="strategies_and_hard_rules"))
    text = export_playbook(p)
    assert f"[shr-00001] helpful=0 harmful=0 :: {content}" in text
    assert parse_playbook(text).bullets == p.bullets


@pytest.mark.parametrize(
    ("heading", "section"),
    [
        ("STRATEGIES AND HARD RULES", "strategies_and_hard_rules"),
        ("APIs TO USE FOR SPECIFIC INFORMATION", "apis_to_use_for_specific_information"),
        ("PROBLEM-SOLVING HEURISTICS AND WORKFLOWS", "problem_solving_heuristics_and_workflows"),
        ("TROUBLESHOOTING AND PITFALLS:", "troubleshooting_and_pitfalls"),
        ("よくある 間違い", "よくある_間違い"),
        ("\u30ac\u30a4\u30c9", "\u30ac\u30a4\u30c9"),  # ガイド, composed
        ("\u30ab\u3099\u30a4\u30c8\u3099", "\u30ac\u30a4\u30c9"),  # ガイド as カ + dakuten: the same section
        ("CAFE\u0301", "caf\u00e9"),  # CAFÉ with a combining accent
        ("\uff27\uff25\uff2e\uff25\uff32\uff21\uff2c", "general"),  # ＧＥＮＥＲＡＬ
        ("\u0130STANBUL TIPS", "i\u0307stanbul_tips"),  # İ folds to i + a combining dot: one word, not i_stanbul
        (
            "\u0939\u093f\u0902\u0926\u0940 \u0928\u094b\u091f\u094d\u0938",
            "\u0939\u093f\u0902\u0926\u0940_\u0928\u094b\u091f\u094d\u0938",
        ),  # Hindi: vowel signs stay
    ],
)
def test_headings_map_to_snake_case_sections(heading: str, section: str) -> None:
    assert heading_to_section(heading) == section


@pytest.mark.parametrize(
    ("newline", "prefix"),
    [("\r\n", ""), ("\r", ""), ("\n", "\ufeff"), ("\r\n", "\ufeff")],
    ids=["crlf", "cr", "bom", "crlf-bom"],
)
def test_line_endings_and_a_byte_order_mark_do_not_reach_the_bullets(newline: str, prefix: str) -> None:
    unix = read_text(ONLINE)
    parsed, plain = parse_playbook(prefix + unix.replace("\n", newline)), parse_playbook(unix)
    assert (parsed.bullets, parsed.metadata.section_titles) == (plain.bullets, plain.metadata.section_titles)
    assert not any("\r" in b.content or "\ufeff" in b.content for b in parsed.bullets)
    assert list(parsed.metadata.section_titles) == APPWORLD.names
