"""schemathesis against the service's own OpenAPI document: every operation, valid and invalid data.

Property: no generated request gets a 5xx, and every 4xx carries the structured ERROR body.
`FUZZ_EXAMPLES` sets the examples per operation and mode (CI default keeps the suite fast;
`FUZZ_EXAMPLES=500 pytest tests/fuzz` is the long run).
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.generation import GenerationMode

from librarian_svc.app import create_app
from librarian_svc.settings import load_settings

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "60"))

schema = schemathesis.openapi.from_asgi("/schema/openapi.json", create_app(load_settings()))
schema.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE])


def _assert_contract(response: object) -> None:
    status = response.status_code  # type: ignore[attr-defined]
    assert status < 500, f"{status}: {response.text[:500]}"  # type: ignore[attr-defined]
    if status >= 400:
        body = response.json()  # type: ignore[attr-defined]
        assert body["action"] == "ERROR", body
        assert body["error_type"] == "INVALID_INPUT", body
        assert isinstance(body["details"], list), body


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_5xx_and_structured_4xx(case: schemathesis.Case) -> None:
    response = case.call()
    _assert_contract(response)
