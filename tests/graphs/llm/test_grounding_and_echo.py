"""The shared invented-id check (`graphs.llm.grounding`) and the placeholder-echo check (`graphs.llm.echo`)."""

from __future__ import annotations

from typing import Literal

import msgspec
import pytest
import structlog

from graphs.llm.echo import echo_problems, prompt_phrases
from graphs.llm.grounding import KnownIds, drop_invented, keep_known, unknown_id_problems
from graphs.prompt_files import load_prompt


class Delta(msgspec.Struct):
    type: Literal["ADD", "DELETE"]
    bullet_id: str | None = None
    section: str = ""


class Deltas(msgspec.Struct):
    deltas: list[Delta]
    used: list[str] = []


RULES = [
    KnownIds("deltas", {"b1"}, "an existing bullet", key="bullet_id", when=lambda d: d.type != "ADD"),
    KnownIds("deltas", {"general"}, "a listed section", key="section", when=lambda d: d.type == "ADD"),
    KnownIds("used", {"b1", "b2"}, "a listed bullet"),
]
REPLY = Deltas(
    deltas=[
        Delta(type="DELETE", bullet_id="b1"),
        Delta(type="DELETE", bullet_id="ghost"),
        Delta(type="ADD", bullet_id="anything", section="general"),  # an ADD names no bullet
        Delta(type="ADD", section="made-up"),
    ],
    used=["b2", "b7"],
)


def test_every_invented_id_is_named_with_its_path() -> None:
    assert unknown_id_problems(REPLY, RULES) == [
        "$.deltas[1].bullet_id: 'ghost' is not an existing bullet",
        "$.deltas[3].section: 'made-up' is not a listed section",
        "$.used[1]: 'b7' is not a listed bullet",
    ]


def test_items_naming_invented_ids_are_dropped_and_logged() -> None:
    with structlog.testing.capture_logs() as logs:
        grounded = drop_invented(REPLY, RULES, agent="ace.curator")
    assert grounded.deltas == [REPLY.deltas[0], REPLY.deltas[2]]
    assert grounded.used == ["b2"]
    dropped = [(e["agent"], e["dropped"], e["log_level"]) for e in logs]
    assert dropped == [
        ("ace.curator", ["ghost"], "warning"),
        ("ace.curator", ["made-up"], "warning"),
        ("ace.curator", ["b7"], "warning"),
    ]


def test_keep_known_on_raw_json_items() -> None:
    items = [{"from": "n1", "to": "n2"}, {"from": "n1", "to": "ghost"}, "not an object"]
    kept = keep_known(
        items,
        {"n1", "n2"},
        agent="proposal_quality",
        ids_of=lambda i: [i.get("from"), i.get("to")] if isinstance(i, dict) else [],
    )
    assert kept == [items[0], items[2]]


def test_nothing_is_logged_when_nothing_is_invented() -> None:
    with structlog.testing.capture_logs() as logs:
        assert keep_known(["b1"], {"b1"}, agent="x") == ["b1"]
    assert logs == []


# --- placeholder echoes -----------------------------------------------------------------------------


def test_the_librarian_prompts_placeholders_are_found_and_real_ids_are_not() -> None:
    phrases = prompt_phrases(load_prompt("librarian/think")).exact
    assert "葉緑体光合成" in phrases  # the other-domain example's query
    assert "葉で行われることは確認できた。器官は未確認" in phrases  # its coverage notes
    assert "c4" not in phrases  # a real candidate id the model is meant to repeat


@pytest.mark.parametrize(
    ("value", "copied"),
    [
        pytest.param({"queries_vector": ["光合成を行う細胞小器官の名前"]}, True, id="placeholder"),
        pytest.param({"coverage_notes": "葉で行われることは確認できた。器官は未確認。"}, True, id="example-notes"),
        pytest.param({"rationale": "Queries must differ from the queries already run"}, True, id="instruction-piece"),
        pytest.param({"selected": [{"id": "c1", "why_relevant": "states the height in one line"}]}, False, id="ok"),
        pytest.param({"queries_text": ["東京タワー 高さ"], "missing": []}, False, id="real-queries"),
    ],
)
def test_echoes_of_the_librarian_prompt(value: object, copied: bool) -> None:
    assert bool(echo_problems(value, load_prompt("librarian/think"))) is copied


def test_japanese_placeholders_are_found_too() -> None:
    template = load_prompt("reflector/default")
    problems = echo_problems(
        {"insights": [{"reasoning": "丸めた数値が誤答につながった", "key_insight": "高さは333m"}]}, template
    )
    assert problems == [
        "$.insights[0].reasoning: '丸めた数値が誤答につながった' repeats the prompt's example or instruction text; "
        "write the actual content for this request"
    ]
