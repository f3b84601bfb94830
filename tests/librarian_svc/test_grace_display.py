"""GRACE as a user reads it: the request id is optional like every agent's, shown figures never cross a
threshold they did not meet, and a threshold change is reported only when something changed (issue 13 item 13)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from litestar import Litestar
from litestar.testing import TestClient

from contracts.grace import ConfidenceScore
from graphs.grace import confidence, search_results
from graphs.grace.wording import figure, messages, say
from tests.graphs.grace.helpers import MIDDLING_TOWER_HITS, STEP, TOWER_QUESTION, Walker, event_types

THRESHOLDS = (0.9, 0.7, 0.4)


# --- request_id --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        pytest.param({"X-Request-ID": "from-header"}, "from-header", id="header"),
        pytest.param({}, None, id="generated"),
    ],
)
def test_request_id_is_optional_like_every_other_agent(
    client: TestClient[Litestar], headers: dict[str, str], expected: str | None
) -> None:
    response = client.post(STEP, json={"query": TOWER_QUESTION, "state": None}, headers=headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["action"] == "SEARCH"
    if expected is None:
        assert body["request_id"]
        assert body["request_id"] == response.headers["x-request-id"]
    else:
        assert body["request_id"] == expected


def test_a_continuation_without_request_id_answers_with_its_own(client: TestClient[Litestar]) -> None:
    first = client.post(STEP, json={"query": TOWER_QUESTION, "state": None}).json()
    result = {"step_id": first["step_id"], "hits": MIDDLING_TOWER_HITS, "turn": first["turn"]}
    second = client.post(STEP, json={"state": first["state"], "tool_result": result}, headers={"X-Request-ID": "two"})
    assert second.status_code == 200, second.text
    assert second.json()["request_id"] == "two"


# --- figures ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "limits", "shown"),
    [
        (0.6951, THRESHOLDS, "0.695"),  # CONFIRM just under NOTIFY: "0.70" would read as NOTIFY
        (0.6999, THRESHOLDS, "0.6999"),
        (0.69999999, THRESHOLDS, "0.69999999"),
        (0.3951, THRESHOLDS, "0.395"),  # ESCALATE just under CONFIRM
        (0.8996, THRESHOLDS, "0.8996"),  # NOTIFY just under SILENT
        (0.7, THRESHOLDS, "0.70"),
        (0.7049, THRESHOLDS, "0.70"),  # rounding down stays above 0.7: two decimals are truthful
        (0.66, THRESHOLDS, "0.66"),
        (0.0, THRESHOLDS, "0.00"),
        (1.0, THRESHOLDS, "1.00"),
        (0.6951, (), "0.70"),  # nothing to cross
    ],
)
def test_a_figure_never_crosses_a_threshold_it_did_not_meet(
    value: float, limits: tuple[float, ...], shown: str
) -> None:
    assert figure(value, limits) == shown


@pytest.mark.parametrize(("value", "shown"), [(0.675, "0.675"), (0.7, "0.70"), (0.38, "0.38"), (0.123456, "0.123456")])
def test_a_threshold_is_shown_exactly(value: float, shown: str) -> None:
    assert figure(value, exact=True) == shown


@given(
    st.floats(min_value=0, max_value=1, allow_nan=False),
    st.lists(st.floats(min_value=0, max_value=1, allow_nan=False), max_size=3),
)
def test_any_figure_is_on_the_same_side_of_every_threshold(value: float, limits: list[float]) -> None:
    shown = float(figure(value, limits))
    assert all((shown >= limit) == (value >= limit) for limit in limits)


def test_no_message_formats_a_number_itself() -> None:
    """Every number goes through `figure`: a fixed format in messages.yaml could round across a threshold."""
    texts = [text for entry in messages().values() for text in entry.values()]
    assert not [text for text in texts if re.search(r"\{\w+:[^}]*\}", text)]
    with pytest.raises(TypeError, match="figure"):
        say("ev_completed", "q", score=0.5)


@pytest.fixture(name="score_at")
def fixture_score_at(monkeypatch: pytest.MonkeyPatch) -> Callable[[float], None]:
    """Make every search step score exactly `value` (decision recomputed by the real rule)."""

    def pin(value: float) -> None:
        real = confidence.score_step

        def pinned(*args: Any, **kwargs: Any) -> ConfidenceScore:
            detail = real(*args, **kwargs)
            thresholds = args[3]
            decision = next(
                (d for d, t in (("SILENT", thresholds.silent), ("NOTIFY", thresholds.notify)) if value >= t),
                "CONFIRM" if value >= thresholds.confirm else "ESCALATE",
            )
            return msgspec.structs.replace(detail, score=value, decision=decision)

        monkeypatch.setattr(search_results, "score_step", pinned)

    return pin


@pytest.mark.parametrize(
    ("score", "kind", "shown", "misleading"),
    [(0.6951, "CONFIRM", "0.695", "0.70"), (0.39996, "ESCALATE", "0.39996", "0.40")],
)
def test_the_question_shows_the_score_on_the_side_it_fell(
    client: TestClient[Litestar],
    score_at: Callable[[float], None],
    score: float,
    kind: str,
    shown: str,
    misleading: str,
) -> None:
    walker = Walker(client)
    walker.start()
    score_at(score)
    ask = walker.search(MIDDLING_TOWER_HITS)
    assert ask["action"] == "ASK_USER"
    assert ask["kind"] == kind
    assert shown in ask["question"]
    assert misleading not in ask["question"]
    confidence = next(e for e in ask["events"] if e["type"] == "confidence")
    assert shown in confidence["message"]


# --- thresholds_adjusted ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "feedback", "reported"),
    [
        pytest.param({}, "correct", True, id="moved-down"),
        pytest.param({}, "incorrect", True, id="moved-up"),
        pytest.param({"GRACE_THRESHOLDS__CONFIRM": "0.2"}, "correct", False, id="at-the-lower-bound"),
        pytest.param(
            {"GRACE_THRESHOLDS__SILENT": "0.98", "GRACE_THRESHOLDS__NOTIFY": "0.8"},
            "incorrect",
            False,
            id="at-the-upper-bound",
        ),
    ],
)
def test_thresholds_adjusted_only_when_a_threshold_changed(
    make_app: Callable[..., Litestar], env: dict[str, str], feedback: str, reported: bool
) -> None:
    with TestClient(app=make_app(env), raise_server_exceptions=False) as client:
        walker = Walker(client)
        walker.start()
        ask = walker.search(MIDDLING_TOWER_HITS)
        assert ask["kind"] == "CONFIRM", ask["question"]
        after = walker.answer("PROCEED", feedback=feedback)
    assert ("thresholds_adjusted" in event_types(after)) is reported
