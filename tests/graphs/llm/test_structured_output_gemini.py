"""Structured output through the real `ChatGoogleGenerativeAI` client, over HTTP, against the fake server.

Same reply-parsing table as the OpenAI module; plus Gemini's own request shape (`contents`, `model`
role, `generationConfig.responseJsonSchema`) and error bodies.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from graphs.llm.errors import ModelFailure, ModelTimeout
from graphs.llm.structured_output import ainvoke_structured, inline_json_schema
from tests.fakes.fixtures import (  # noqa: F401 - fixtures, until tests/conftest.py imports them
    ChatModelFactory,
    chat_model_factory_fixture,
    fake_gemini_config,
    fake_llm_fixture,
    llm_server_fixture,
)
from tests.fakes.llm_server import FakeLLMServer, Reply, request_text
from tests.graphs.llm.test_structured_output_openai import (
    GOOD,
    GOOD_PLAN,
    MESSAGES,
    PARSING_CASES,
    WRONG,
    WRONG_ERRORS,
    Plan,
)

pytestmark = pytest.mark.llm


@pytest.mark.parametrize(("reply", "value", "errors", "warnings"), PARSING_CASES)
async def test_reply_parsing(
    llm_server: FakeLLMServer,
    chat_model_factory: ChatModelFactory,
    reply: str,
    value: Plan | None,
    errors: list[str],
    warnings: list[str],
) -> None:
    cfg = fake_gemini_config(llm_server)
    llm_server.script(reply)
    result = await ainvoke_structured(chat_model_factory(cfg), MESSAGES, Plan, cfg=cfg)
    assert (result.value, result.errors, result.warnings) == (value, errors, warnings)
    assert result.usage.engine == "gemini"


@pytest.mark.parametrize(
    ("replies", "attempts", "value"),
    [
        pytest.param([WRONG, GOOD], 2, GOOD_PLAN, id="fixed-on-first-reask"),
        pytest.param([WRONG, "", GOOD], 3, GOOD_PLAN, id="fixed-on-second-reask"),
        pytest.param([WRONG, WRONG, WRONG], 3, None, id="never-fixed"),
    ],
)
async def test_reask(
    llm_server: FakeLLMServer,
    chat_model_factory: ChatModelFactory,
    replies: list[str],
    attempts: int,
    value: Plan | None,
) -> None:
    cfg = fake_gemini_config(llm_server)
    llm_server.script(*(Reply(content=text, usage=(40, 10)) for text in replies))
    result = await ainvoke_structured(chat_model_factory(cfg), MESSAGES, Plan, cfg=cfg, max_reasks=2)
    assert (result.value, result.attempts) == (value, attempts)
    assert result.errors == ([] if value else WRONG_ERRORS)
    usage = result.usage
    assert (usage.llm_calls, usage.input_tokens, usage.output_tokens) == (attempts, 40 * attempts, 10 * attempts)
    bodies = llm_server.chat_requests
    assert len(bodies) == attempts
    second = bodies[1]
    assert second["systemInstruction"]["parts"][0]["text"] == "Answer with a Plan as JSON."
    assert [turn["role"] for turn in second["contents"]] == ["user", "model", "user"]
    assert second["contents"][1]["parts"][0]["text"] == WRONG
    for error in WRONG_ERRORS:
        assert f"- {error}" in request_text(second)


def _generation_config(llm_server: FakeLLMServer) -> dict[str, Any]:
    (body,) = llm_server.chat_requests
    config: dict[str, Any] = body["generationConfig"]
    return config


async def test_native_json_schema_is_requested(llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory) -> None:
    cfg = fake_gemini_config(llm_server)
    llm_server.script(GOOD)
    assert (await ainvoke_structured(chat_model_factory(cfg), MESSAGES, Plan, cfg=cfg)).ok
    config = _generation_config(llm_server)
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == inline_json_schema(Plan)
    assert config["temperature"] == 0.0


async def test_native_json_off_sends_no_schema(llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory) -> None:
    cfg = fake_gemini_config(llm_server, native_json_schema=False)
    llm_server.script(GOOD)
    assert (await ainvoke_structured(chat_model_factory(cfg), MESSAGES, Plan, cfg=cfg)).ok
    config = _generation_config(llm_server)
    assert "responseMimeType" not in config
    assert "responseJsonSchema" not in config


async def test_429_then_success(llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory) -> None:
    cfg = fake_gemini_config(llm_server, max_retries=2)
    llm_server.script(Reply(status=429, headers={"Retry-After": "0"}), GOOD)
    result = await ainvoke_structured(chat_model_factory(cfg), MESSAGES, Plan, cfg=cfg)
    assert result.value == GOOD_PLAN
    assert len(llm_server.chat_requests) == 2


async def test_500_burst_then_success(llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory) -> None:
    cfg = fake_gemini_config(llm_server, max_retries=3)
    llm_server.script(Reply(status=500), Reply(status=503), GOOD)
    result = await ainvoke_structured(chat_model_factory(cfg), MESSAGES, Plan, cfg=cfg)
    assert result.value == GOOD_PLAN
    assert len(llm_server.chat_requests) == 3


async def test_persistent_500_is_a_model_failure(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory
) -> None:
    cfg = fake_gemini_config(llm_server, max_retries=2)
    llm_server.default_reply = Reply(status=500)
    with pytest.raises(ModelFailure, match="HTTP 500") as caught:
        await ainvoke_structured(chat_model_factory(cfg), MESSAGES, Plan, cfg=cfg)
    assert not isinstance(caught.value, ModelTimeout)
    assert len(llm_server.chat_requests) == 3  # our retries only: google-genai's are off


@pytest.mark.parametrize("status", [400, 403])
async def test_client_errors_fail_at_once(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, status: int
) -> None:
    cfg = fake_gemini_config(llm_server, max_retries=3)
    llm_server.default_reply = Reply(status=status)
    with pytest.raises(ModelFailure, match=f"HTTP {status}"):
        await ainvoke_structured(chat_model_factory(cfg), MESSAGES, Plan, cfg=cfg)
    assert len(llm_server.chat_requests) == 1


async def test_slow_reply_is_a_timeout(llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory) -> None:
    cfg = fake_gemini_config(llm_server, timeout_s=0.3)
    llm_server.script(Reply(content=GOOD, delay_s=3))
    started = time.monotonic()
    with pytest.raises(ModelTimeout):
        await ainvoke_structured(chat_model_factory(cfg), MESSAGES, Plan, cfg=cfg)
    assert time.monotonic() - started < 0.3 + 0.4
