"""The committed JSON Schemas are what the code produces (the Go side generates its types from them)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from contracts.export_schema import SCHEMA_DIR, drift, render_schemas
from contracts.registry import EXPORTED


def test_committed_schemas_match_the_code() -> None:
    assert drift() == [], "run `make schema` and commit contracts/schema/"


def test_drift_is_detected(tmp_path: Path) -> None:
    for name, text in render_schemas().items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert drift(tmp_path) == []
    victim = sorted(render_schemas())[0]
    (tmp_path / victim).write_text("{}\n", encoding="utf-8")
    (tmp_path / "Stale.json").write_text("{}\n", encoding="utf-8")
    assert drift(tmp_path) == sorted([victim, "Stale.json"])


@pytest.mark.parametrize("name", sorted(EXPORTED))
def test_every_schema_is_valid_json_with_a_title(name: str) -> None:
    schema = json.loads((SCHEMA_DIR / f"{name}.json").read_text(encoding="utf-8"))
    assert schema["title"] == name
    assert "$schema" in schema


def test_error_body_schema_names_every_error_type() -> None:
    schema = msgspec.json.schema(EXPORTED["ErrorResponse"])
    error = schema["$defs"]["ErrorResponse"]["properties"]["error_type"]
    assert set(error["enum"]) == {"LOOP_LIMIT", "TIMEOUT", "INVALID_INPUT", "MODEL_FAILURE", "OTHER"}


LENIENT = {"DashboardNode"}
"""Objects a request may carry fields of its own in: a dashboard node is another system's document (README)."""


@pytest.mark.parametrize("name", sorted(n for n in EXPORTED if n.endswith("Request") or n == "Playbook"))
def test_every_object_a_request_carries_refuses_unknown_fields(name: str) -> None:
    """A misspelled field anywhere in a request (`helpfull` in a bullet) is a 422, never silently dropped."""
    schema = json.loads((SCHEMA_DIR / f"{name}.json").read_text(encoding="utf-8"))
    open_objects = [
        title
        for title, definition in schema.get("$defs", {}).items()
        if definition.get("type") == "object"
        and "properties" in definition
        and definition.get("additionalProperties") is not False
    ]
    assert sorted(set(open_objects) - LENIENT) == []
