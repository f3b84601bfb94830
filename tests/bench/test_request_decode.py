"""The decode benchmark measures real requests: each body is its contract's, with no key given twice."""

from __future__ import annotations

import msgspec

from bench.request_decode import bodies, measure
from librarian_svc.json_duplicate_keys import duplicate_key_paths


def test_every_body_is_a_valid_request_without_repeated_keys() -> None:
    found = bodies()
    assert set(found) == {"librarian", "grace", "organizer", "advisor", "validate"}
    for body, request_type in found.values():
        msgspec.json.decode(body, type=request_type)
        assert duplicate_key_paths(body.decode("utf-8")) == []


def test_measure_reports_both_costs_for_each_body() -> None:
    figures = measure(runs=2, rounds=1)
    for name, figure in figures.items():
        assert figure["typed_decode_us"] > 0, name
        assert figure["duplicate_key_check_us"] > 0, name
        assert figure["bytes"] > 10_000, name
