"""Structured output through the real provider clients, over HTTP, against the scripted fake server.

Every behaviour that must not depend on the provider (reply parsing, re-asking, usage, retries, timeouts)
runs once per client through the `provider` fixture: `ChatOpenAI` and `ChatGoogleGenerativeAI`. What each
provider sends differently (OpenAI's `response_format`, Gemini's `generationConfig`) is checked at the end.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import msgspec
import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import Runnable

from graphs.llm.config import LLMConfig
from graphs.llm.errors import ModelFailure, ModelTimeout
from graphs.llm.structured_output import (
    EMPTY_REPLY_ERROR,
    NO_JSON_ERROR,
    REPAIRED_WARNING,
    ainvoke_structured,
    inline_json_schema,
)
from tests.fakes.fixtures import ChatModelFactory, fake_gemini_config, fake_openai_config
from tests.fakes.llm_server import FakeLLMServer, Reply, request_turns
from tests.support.live_service import free_port

pytestmark = pytest.mark.llm


class Step(msgspec.Struct, forbid_unknown_fields=True):
    id: str
    title: Annotated[str, msgspec.Meta(min_length=1)]
    depends_on: list[str] = []


class Plan(msgspec.Struct):
    summary: str
    steps: list[Step]
    confidence: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]


GOOD = '{"summary": "s", "steps": [{"id": "s1", "title": "look"}], "confidence": 0.5}'
GOOD_PLAN = Plan(summary="s", steps=[Step(id="s1", title="look")], confidence=0.5)
WRONG = '{"summary": 1, "steps": [{"id": "s1", "title": "", "depends_on": "s0"}], "confidence": 2}'
WRONG_ERRORS = [
    "$.summary: expected string, got integer",
    "$.steps[0].title: must be at least 1 characters long",
    "$.steps[0].depends_on: expected array, got string",
    "$.confidence: must be <= 1.0",
]
SYSTEM = "Answer with a Plan as JSON."
USER = "Plan the search."
MESSAGES = [SystemMessage(SYSTEM), HumanMessage(USER)]


@dataclass(frozen=True)
class Provider:
    """One provider's real client aimed at the fake server, and what its usage reports."""

    engine: Literal["openai", "gemini"]
    model: str

    def config(self, server: FakeLLMServer, **overrides: object) -> LLMConfig:
        make = fake_openai_config if self.engine == "openai" else fake_gemini_config
        return make(server, **overrides)

    def unreachable(self) -> str:
        """A base URL where nothing listens, in the form the client expects."""
        return f"http://127.0.0.1:{free_port()}" + ("/v1" if self.engine == "openai" else "")


PROVIDERS = {"openai": Provider("openai", "gpt-fake"), "gemini": Provider("gemini", "gemini-fake")}


@pytest.fixture(name="provider", params=sorted(PROVIDERS))
def fixture_provider(request: pytest.FixtureRequest) -> Provider:
    """Each provider-independent test runs once per real client."""
    return PROVIDERS[request.param]


async def test_round_trip_over_the_real_client(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, provider: Provider
) -> None:
    cfg = provider.config(llm_server)
    llm_server.script(GOOD)
    result = await ainvoke_structured(chat_model_factory(cfg), MESSAGES, Plan, cfg=cfg)
    assert result.ok
    assert result.value == GOOD_PLAN
    assert (result.errors, result.warnings, result.attempts, result.raw_text) == ([], [], 1, GOOD)
    assert (result.usage.engine, result.usage.model) == (provider.engine, provider.model)
    (body,) = llm_server.chat_requests
    assert request_turns(body) == [("system", SYSTEM), ("user", USER)]


@pytest.mark.parametrize(
    ("reply", "value", "errors", "warnings"),
    [
        pytest.param(GOOD, GOOD_PLAN, [], [], id="valid-json"),
        pytest.param(f"```json\n{GOOD}\n```", GOOD_PLAN, [], [], id="fenced-json"),
        pytest.param(f"Sure, here is the plan:\n{GOOD}\nAnything else?", GOOD_PLAN, [], [], id="json-in-prose"),
        pytest.param("I could not make a plan, sorry.", None, [NO_JSON_ERROR], [], id="prose-without-json"),
        pytest.param(GOOD[:-1], GOOD_PLAN, [], [REPAIRED_WARNING], id="truncated-repaired"),
        pytest.param(
            '{"summary": "s", "steps": [{"id": "s1", "ti',
            None,
            ["$.steps[0].title: required field missing", "$.confidence: required field missing"],
            [REPAIRED_WARNING],
            id="truncated-beyond-repair",
        ),
        pytest.param(WRONG, None, WRONG_ERRORS, [], id="wrong-schema-lists-every-error"),
        pytest.param("", None, [EMPTY_REPLY_ERROR], [], id="empty-reply"),
    ],
)
async def test_reply_parsing(
    llm_server: FakeLLMServer,
    chat_model_factory: ChatModelFactory,
    provider: Provider,
    reply: str,
    value: Plan | None,
    errors: list[str],
    warnings: list[str],
) -> None:
    cfg = provider.config(llm_server)
    llm_server.script(reply)
    result = await ainvoke_structured(chat_model_factory(cfg), MESSAGES, Plan, cfg=cfg)
    assert (result.value, result.errors, result.warnings) == (value, errors, warnings)
    assert result.attempts == 1
    assert result.raw_text == reply
    assert result.usage.engine == provider.engine


@pytest.mark.parametrize(
    ("replies", "value", "errors"),
    [
        pytest.param([WRONG, GOOD], GOOD_PLAN, [], id="fixed-on-first-reask"),
        pytest.param([WRONG, "no json, sorry", GOOD], GOOD_PLAN, [], id="fixed-on-second-reask"),
        pytest.param([WRONG, "", GOOD], GOOD_PLAN, [], id="fixed-after-an-empty-reply"),
        pytest.param([WRONG, WRONG, WRONG], None, WRONG_ERRORS, id="never-fixed"),
        pytest.param([WRONG, WRONG, ""], None, [EMPTY_REPLY_ERROR], id="never-fixed-keeps-the-last-errors"),
    ],
)
async def test_reask_until_fixed_or_out_of_attempts(
    llm_server: FakeLLMServer,
    chat_model_factory: ChatModelFactory,
    provider: Provider,
    replies: list[str],
    value: Plan | None,
    errors: list[str],
) -> None:
    cfg = provider.config(llm_server)
    llm_server.script(*replies)
    result = await ainvoke_structured(chat_model_factory(cfg), MESSAGES, Plan, cfg=cfg, max_reasks=2)
    assert (result.value, result.errors, result.attempts) == (value, errors, len(replies))
    assert result.ok is (value is not None)
    bodies = llm_server.chat_requests
    assert len(bodies) == len(replies)
    (system, user, assistant, reask) = request_turns(bodies[1])
    assert (system, user, assistant) == (("system", SYSTEM), ("user", USER), ("assistant", WRONG))
    assert reask[0] == "user"
    for error in WRONG_ERRORS:
        assert f"- {error}" in reask[1]


async def test_usage_is_summed_over_attempts(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, provider: Provider
) -> None:
    cfg = provider.config(llm_server)
    llm_server.script(Reply(content=WRONG, usage=(100, 20)), Reply(content=GOOD, usage=(150, 30)))
    result = await ainvoke_structured(chat_model_factory(cfg), MESSAGES, Plan, cfg=cfg, max_reasks=1)
    usage = result.usage
    assert (usage.engine, usage.model, usage.llm_calls) == (provider.engine, provider.model, 2)
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (250, 50, 300)


async def test_semantic_check_errors_are_reasked(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, provider: Provider
) -> None:
    cfg = provider.config(llm_server)
    unknown = GOOD.replace('"s1"', '"s9"')
    llm_server.script(unknown, GOOD)

    def known_ids(plan: Plan) -> list[str]:
        return [f"$.steps[{i}].id: unknown step id {s.id!r}" for i, s in enumerate(plan.steps) if s.id != "s1"]

    result = await ainvoke_structured(chat_model_factory(cfg), MESSAGES, Plan, cfg=cfg, max_reasks=1, check=known_ids)
    assert result.ok
    role, text = request_turns(llm_server.chat_requests[1])[-1]
    assert role == "user"
    assert "unknown step id 's9'" in text


async def test_semantic_errors_after_the_last_attempt_keep_the_value(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, provider: Provider
) -> None:
    cfg = provider.config(llm_server)
    llm_server.script(GOOD)
    result = await ainvoke_structured(
        chat_model_factory(cfg), MESSAGES, Plan, cfg=cfg, check=lambda plan: ["$.steps[0].id: unknown"]
    )
    assert result.value == GOOD_PLAN
    assert result.errors == ["$.steps[0].id: unknown"]
    assert not result.ok


# --- transport ------------------------------------------------------------------------------------


async def test_429_is_retried(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, provider: Provider
) -> None:
    cfg = provider.config(llm_server, max_retries=2)
    llm_server.script(Reply(status=429, headers={"Retry-After": "0"}), GOOD)
    result = await ainvoke_structured(chat_model_factory(cfg), MESSAGES, Plan, cfg=cfg)
    assert result.value == GOOD_PLAN
    assert result.attempts == 1
    assert result.usage.llm_calls == 2  # every request counts, the rate-limited one too
    assert len(llm_server.chat_requests) == 2


async def test_500_burst_then_success(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, provider: Provider
) -> None:
    cfg = provider.config(llm_server, max_retries=3)
    llm_server.script(Reply(status=500), Reply(status=503, body=b"<html>busy</html>", content_type="text/html"), GOOD)
    result = await ainvoke_structured(chat_model_factory(cfg), MESSAGES, Plan, cfg=cfg)
    assert result.value == GOOD_PLAN
    assert len(llm_server.chat_requests) == 3


async def test_persistent_500_is_a_model_failure(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, provider: Provider
) -> None:
    cfg = provider.config(llm_server, max_retries=2)
    llm_server.default_reply = Reply(status=500)
    with pytest.raises(ModelFailure, match="HTTP 500") as caught:
        await ainvoke_structured(chat_model_factory(cfg), MESSAGES, Plan, cfg=cfg)
    assert not isinstance(caught.value, ModelTimeout)
    assert len(llm_server.chat_requests) == 3  # our retries only: the SDKs' own are off


async def test_an_unreachable_provider_is_a_model_failure_not_a_timeout(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, provider: Provider
) -> None:
    # The OpenAI SDK's aiohttp transport reports a refused connection as ConnectTimeout; the caller must
    # still learn that the provider is down (MODEL_FAILURE), not that it was slow.
    cfg = provider.config(llm_server, base_url=provider.unreachable(), max_retries=1)
    with pytest.raises(ModelFailure, match="connection error") as caught:
        await ainvoke_structured(chat_model_factory(cfg), MESSAGES, Plan, cfg=cfg)
    assert not isinstance(caught.value, ModelTimeout)


@pytest.mark.parametrize("status", [400, 401, 403, 404])
async def test_client_errors_fail_at_once(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, provider: Provider, status: int
) -> None:
    cfg = provider.config(llm_server, max_retries=3)
    llm_server.default_reply = Reply(status=status)
    with pytest.raises(ModelFailure, match=f"HTTP {status}"):
        await ainvoke_structured(chat_model_factory(cfg), MESSAGES, Plan, cfg=cfg)
    assert len(llm_server.chat_requests) == 1


async def test_slow_reply_is_a_timeout(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, provider: Provider
) -> None:
    cfg = provider.config(llm_server, timeout_s=0.3)
    llm_server.script(Reply(content=GOOD, delay_s=3))
    model = chat_model_factory(cfg)  # built (and its client imported) before the clock starts
    started = time.monotonic()
    with pytest.raises(ModelTimeout):
        await ainvoke_structured(model, MESSAGES, Plan, cfg=cfg)
    assert time.monotonic() - started < 0.3 + 0.4


async def test_deadline_bounds_retries_and_reasks(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, provider: Provider
) -> None:
    cfg = provider.config(llm_server, timeout_s=2.0, max_retries=5)
    llm_server.default_reply = Reply(content=GOOD, delay_s=3)
    model = chat_model_factory(cfg)  # built (and its client imported) before the clock starts
    started = time.monotonic()
    with pytest.raises(ModelTimeout):
        await ainvoke_structured(model, MESSAGES, Plan, cfg=cfg, deadline=started + 0.3, max_reasks=3)
    assert time.monotonic() - started < 0.3 + 0.4


# --- what each provider is asked for: OpenAI's response_format, Gemini's generationConfig ----------


def _request(llm_server: FakeLLMServer) -> dict[str, Any]:
    (body,) = llm_server.chat_requests
    return body


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        pytest.param(
            {},
            {
                "type": "json_schema",
                "json_schema": {"name": "Plan", "schema": inline_json_schema(Plan), "strict": False},
            },
            id="openai-json-schema",
        ),
        pytest.param(
            {"provider": "openai-compatible", "native_json_schema": True},
            {
                "type": "json_schema",
                "json_schema": {"name": "Plan", "schema": inline_json_schema(Plan), "strict": False},
            },
            id="compatible-json-schema",
        ),
        pytest.param(
            {"provider": "openai-compatible", "native_json_schema": True, "json_object_only": True},
            {"type": "json_object"},
            id="compatible-json-object",
        ),
        pytest.param({"native_json_schema": False}, None, id="openai-native-off"),
        pytest.param({"provider": "openai-compatible", "native_json_schema": False}, None, id="compatible-native-off"),
    ],
)
async def test_openai_response_format(
    llm_server: FakeLLMServer,
    chat_model_factory: ChatModelFactory,
    overrides: dict[str, Any],
    expected: dict[str, Any] | None,
) -> None:
    cfg = fake_openai_config(llm_server, **overrides)
    llm_server.script(GOOD)
    result = await ainvoke_structured(chat_model_factory(cfg), MESSAGES, Plan, cfg=cfg)
    assert result.ok
    assert _request(llm_server).get("response_format") == expected


async def test_the_json_parameters_go_with_every_attempt_without_a_binding_per_call(
    llm_server: FakeLLMServer,
    chat_model_factory: ChatModelFactory,
    provider: Provider,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A `bind` per call cost a pydantic `RunnableBinding` and a config merge on every model call (issue 14)."""

    def no_binding(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("ainvoke_structured bound the model instead of passing the call's parameters")

    monkeypatch.setattr(Runnable, "bind", no_binding)
    cfg = provider.config(llm_server)
    llm_server.script(WRONG, GOOD)
    result = await ainvoke_structured(chat_model_factory(cfg), MESSAGES, Plan, cfg=cfg, max_reasks=1)
    assert (result.value, result.attempts) == (GOOD_PLAN, 2)
    requests = llm_server.chat_requests
    assert len(requests) == 2
    for body in requests:
        if provider.engine == "openai":
            assert body["response_format"]["json_schema"]["schema"] == inline_json_schema(Plan)
        else:
            assert body["generationConfig"]["responseJsonSchema"] == inline_json_schema(Plan)


@pytest.mark.parametrize("native", [True, False])
async def test_gemini_generation_config(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, native: bool
) -> None:
    cfg = fake_gemini_config(llm_server, native_json_schema=native)
    llm_server.script(GOOD)
    assert (await ainvoke_structured(chat_model_factory(cfg), MESSAGES, Plan, cfg=cfg)).ok
    config = _request(llm_server)["generationConfig"]
    assert config["temperature"] == 0.0
    if native:
        assert config["responseMimeType"] == "application/json"
        assert config["responseJsonSchema"] == inline_json_schema(Plan)
    else:
        assert "responseMimeType" not in config
        assert "responseJsonSchema" not in config


async def test_openai_list_schema(llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory) -> None:
    cfg = fake_openai_config(llm_server)
    llm_server.script('The steps: [{"id": "a", "title": "t"}]')
    result = await ainvoke_structured(chat_model_factory(cfg), MESSAGES, list[Step], cfg=cfg)
    assert result.value == [Step(id="a", title="t")]
    assert _request(llm_server)["response_format"]["json_schema"]["name"] == "list"


@pytest.mark.parametrize("engine", ["openai", "openai-compatible"])
async def test_an_openai_reply_cut_off_at_the_token_cap_is_reasked_not_a_model_failure(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, engine: Literal["openai", "openai-compatible"]
) -> None:
    # A schema-constrained reply that hits max_tokens ends mid-JSON with finish_reason "length"; that is bad
    # output to re-ask about, not a provider failure (the SDK's parse path used to raise before we saw it).
    cfg = fake_openai_config(llm_server, provider=engine, max_output_tokens=64)
    llm_server.script(Reply(content='{"summary": "s", "steps": [{"id": "s1", "ti', finish_reason="length"), GOOD)
    result = await ainvoke_structured(chat_model_factory(cfg), MESSAGES, Plan, cfg=cfg, max_reasks=1)
    assert (result.value, result.attempts) == (GOOD_PLAN, 2)
    first = llm_server.chat_requests[0]
    assert first["response_format"]["type"] == "json_schema"
    assert first["max_completion_tokens"] == 64
    assert first.get("max_tokens") == (64 if engine == "openai-compatible" else None)


# --- the schema sent: inlined, never recursive ----------------------------------------------------


class Node(msgspec.Struct):
    name: str
    children: list[Node] = []


def test_inlined_schema_has_no_refs() -> None:
    schema = inline_json_schema(Plan)
    assert "$ref" not in json.dumps(schema)
    assert "$defs" not in schema
    step = schema["properties"]["steps"]["items"]
    assert step["required"] == ["id", "title"]


def test_recursive_schema_is_inlined_without_looping() -> None:
    schema = inline_json_schema(Node)
    assert schema["properties"]["children"]["items"] == {}
