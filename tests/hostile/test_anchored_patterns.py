"""Ids, datasets, sections and state tokens match their pattern exactly: no trailing newline, no stray whitespace.

msgspec checks a pattern with Python's `re.search`, where `$` matches before a final newline: before the
patterns were anchored, `"appworld\\n"` was a dataset (HTTP 500 on /workflow/run), `"b-1\\n"` a bullet id and
`"general\\n"` a section. Each is now a 422 naming the field, in a request, in a playbook and in state.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
import pytest
from litestar import Litestar
from litestar.testing import TestClient

from contracts.ace import BulletId, DatasetName, SectionName, SectionTitle
from contracts.state import STATE_TOKEN_PATTERN, StateToken

SPACES = ["\n", "\r\n", " ", "\t", "\x0b", "\u3000"]
"""Whitespace a careless client (or a hostile one) appends: newline, CRLF, space, tab, VT, ideographic space."""

FIELDS: list[tuple[str, Any, str]] = [
    ("dataset", DatasetName, "appworld"),
    ("bullet id", BulletId, "shr-00001"),
    ("section", SectionName, "strategies_and_hard_rules"),
    ("section title", SectionTitle, "STRATEGIES AND HARD RULES"),
    ("state token", StateToken, "v1.eyJhIjoxfQ.c2ln"),
]


def _accepts(field_type: Any, value: str) -> bool:
    try:
        msgspec.convert(value, field_type)
    except msgspec.ValidationError:
        return False
    return True


@pytest.mark.parametrize(("name", "field_type", "valid"), FIELDS, ids=[f[0] for f in FIELDS])
def test_the_plain_value_is_accepted(name: str, field_type: Any, valid: str) -> None:
    assert _accepts(field_type, valid)


@pytest.mark.parametrize("space", SPACES, ids=[repr(s) for s in SPACES])
@pytest.mark.parametrize(("name", "field_type", "valid"), FIELDS, ids=[f[0] for f in FIELDS])
def test_whitespace_at_either_end_is_refused(name: str, field_type: Any, valid: str, space: str) -> None:
    assert not _accepts(field_type, valid + space)
    assert not _accepts(field_type, space + valid)


@pytest.mark.parametrize(("name", "field_type", "valid"), FIELDS, ids=[f[0] for f in FIELDS])
def test_a_newline_inside_is_refused(name: str, field_type: Any, valid: str) -> None:
    assert not _accepts(field_type, valid[:3] + "\n" + valid[3:])


def test_the_token_pattern_still_reads_as_ecma_262() -> None:
    """The JSON Schema's reader (Go, a validator) sees a lookahead and `^…$`, both ECMA-262; no Python-only `\\Z`."""
    assert STATE_TOKEN_PATTERN.startswith("^(?!")
    assert STATE_TOKEN_PATTERN.endswith("$")
    assert "\\Z" not in STATE_TOKEN_PATTERN
    assert "\\A" not in STATE_TOKEN_PATTERN
    assert re.fullmatch(STATE_TOKEN_PATTERN.removeprefix("^").removesuffix("$"), "v1.a.b")


# --- end to end: a 422 naming the field, never a 500 -------------------------------------------------

_BULLET = {"id": "shr-00001", "section": "strategies_and_hard_rules", "content": "Check the API docs first."}
_SEARCH = {"query": {"query_text": "api"}, "playbook": {"bullets": [_BULLET]}, "dataset": "appworld"}


@pytest.mark.parametrize("space", ["\n", " ", "\t"], ids=repr)
@pytest.mark.parametrize(
    ("path", "body", "where"),
    [
        pytest.param("/workflow/run", lambda s: {"query": "x", "dataset": "appworld" + s}, "$.dataset", id="workflow"),
        pytest.param("/agent/ace/search", lambda s: {**_SEARCH, "dataset": "appworld" + s}, "$.dataset", id="dataset"),
        pytest.param(
            "/agent/ace/search",
            lambda s: {**_SEARCH, "playbook": {"bullets": [{**_BULLET, "id": "shr-00001" + s}]}},
            "$.playbook.bullets[0].id",
            id="bullet-id",
        ),
        pytest.param(
            "/agent/ace/search",
            lambda s: {**_SEARCH, "playbook": {"bullets": [{**_BULLET, "section": "strategies_and_hard_rules" + s}]}},
            "$.playbook.bullets[0].section",
            id="bullet-section",
        ),
        pytest.param(
            "/agent/ace/search",
            lambda s: {**_SEARCH, "query": {"query_text": "api", "section_filter": ["general" + s]}},
            "$.query.section_filter[0]",
            id="section-filter",
        ),
        pytest.param(
            "/agent/librarian/think",
            lambda s: {"request_id": "r", "user_query": "q", "subject_id": "s", "state": "v1.eyJhIjoxfQ.c2ln" + s},
            "$.state",
            id="librarian-state",
        ),
        pytest.param("/agent/grace/step", lambda s: {"state": "v1.eyJhIjoxfQ.c2ln" + s}, "$.state", id="grace-state"),
    ],
)
def test_trailing_whitespace_is_422_with_the_path(
    client: TestClient[Litestar], path: str, body: Any, where: str, space: str
) -> None:
    response = client.post(path, json=body(space))
    assert response.status_code == 422, response.text
    answer = response.json()
    assert answer["error_type"] == "INVALID_INPUT"
    assert where in [d["path"] for d in answer["details"]]


def test_a_stored_playbook_named_with_a_newline_is_422(client: TestClient[Litestar]) -> None:
    response = client.put(
        "/playbooks/appworld%0A", content=b"## GENERAL\n", headers={"content-type": "text/plain; charset=utf-8"}
    )
    assert response.status_code == 422, response.text
    assert response.json()["details"][0]["path"] == "$.dataset"
