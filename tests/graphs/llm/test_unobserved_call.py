"""A chat model asked through its provider call alone: the same request and reply as `ainvoke`, taken only unobserved.

Each provider's real client (langchain-openai's, Azure's, langchain-google-genai's) asks the loopback fake
once through `ainvoke` and once through `unobserved_call.reply`; the server must see the same request and
the caller the same message. Every way langchain-core could be observing or changing the run (a handler
from the run's config or the model, `verbose`, a tracer from the environment, a cache, a rate limiter,
streaming, the v1 output format, non-text content) must send the call back through `ainvoke`, which the
cases check by what a handler or the cache saw.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import pytest
from langchain_core.caches import InMemoryCache
from langchain_core.callbacks import AsyncCallbackHandler, AsyncCallbackManagerForLLMRun
from langchain_core.globals import set_debug, set_llm_cache
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatResult
from langchain_core.rate_limiters import InMemoryRateLimiter
from langchain_core.runnables import RunnableLambda
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from graphs.llm import unobserved_call
from graphs.llm.config import LLMConfig
from graphs.llm.retry import classify
from graphs.llm.structured_output import native_json_kwargs
from tests.fakes.chat_model import ScriptedChatModel
from tests.fakes.fixtures import ChatModelFactory, fake_azure_config, fake_gemini_config, fake_openai_config
from tests.fakes.llm_server import FakeLLMServer, RecordedRequest, Reply
from tests.support.fresh_interpreter import last_json_line
from tests.support.live_service import PROJECT_ROOT

MESSAGES: list[BaseMessage] = [SystemMessage("答えは JSON で。"), HumanMessage("東京タワーの高さは?")]
REPLY = Reply(content='{"height_m": 333}', usage=(123, 45))
CONFIGS: dict[str, Callable[[FakeLLMServer], LLMConfig]] = {
    "openai": fake_openai_config,
    "openai-compatible": lambda server: fake_openai_config(server, provider="openai-compatible"),
    "azure": fake_azure_config,
    "gemini": fake_gemini_config,
}


class GraphState(TypedDict):
    answer: str


class Recorder(AsyncCallbackHandler):
    """Counts the LLM runs it was told about."""

    def __init__(self) -> None:
        self.starts = 0
        self.ends = 0

    async def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        self.starts += 1

    async def on_llm_end(self, *args: Any, **kwargs: Any) -> None:
        self.ends += 1


@pytest.fixture(name="no_global_cache")
def no_global_cache_fixture() -> Iterator[None]:
    set_llm_cache(None)
    yield
    set_llm_cache(None)


def _request(call: RecordedRequest) -> dict[str, Any]:
    return {"method": call.method, "path": call.path, "query": call.query, "body": call.body}


def _message(message: BaseMessage) -> dict[str, Any]:
    """Everything of a reply but its id (the library's names the run, which the direct call does not open)."""
    assert isinstance(message, AIMessage)
    metadata = {key: value for key, value in message.response_metadata.items() if key != "id"}
    return {
        "type": type(message),
        "content": message.content,
        "usage": message.usage_metadata,
        "metadata": metadata,
        "additional_kwargs": message.additional_kwargs,
        "tool_calls": message.tool_calls,
    }


@pytest.fixture(name="no_library_run")
def no_library_run_fixture(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """`forbid()`: from then on, langchain-core's run of a call (`agenerate`) fails the test."""

    def forbid() -> None:
        async def refused(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("the call went through langchain-core's LLM run")

        monkeypatch.setattr(BaseChatModel, "agenerate", refused)

    return forbid


CALL_KWARGS: dict[str, Callable[[BaseChatModel, LLMConfig], dict[str, Any]]] = {
    "no options": lambda model, cfg: {},
    "stop": lambda model, cfg: {"stop": ["END"]},
    "the service's JSON schema": lambda model, cfg: native_json_kwargs(
        model, dict[str, int], msgspec.structs.replace(cfg, native_json_schema=True)
    ),
}
"""What `call_model` passes: nothing, a stop sequence, or the provider's JSON-output parameters."""


@pytest.mark.parametrize("provider", list(CONFIGS))
@pytest.mark.parametrize("call_kwargs", list(CALL_KWARGS))
async def test_the_direct_call_sends_and_returns_what_ainvoke_does(
    llm_server: FakeLLMServer,
    chat_model_factory: ChatModelFactory,
    provider: str,
    call_kwargs: str,
    no_global_cache: None,
    no_library_run: Callable[[], None],
) -> None:
    cfg = CONFIGS[provider](llm_server)
    model = chat_model_factory(cfg)
    kwargs = CALL_KWARGS[call_kwargs](model, cfg)
    llm_server.script(REPLY, REPLY)

    assert unobserved_call.unobserved(model, MESSAGES, kwargs)
    library = await model.ainvoke(MESSAGES, **kwargs)
    no_library_run()
    direct = await unobserved_call.reply(model, MESSAGES, **kwargs)

    library_call, direct_call = llm_server.calls
    assert _request(direct_call) == _request(library_call)
    assert _message(direct) == _message(library)
    assert direct.content == '{"height_m": 333}'
    assert isinstance(direct, AIMessage)
    assert direct.usage_metadata is not None
    assert (direct.usage_metadata["input_tokens"], direct.usage_metadata["output_tokens"]) == (123, 45)


async def test_a_handler_in_the_runs_config_sees_the_call(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, no_global_cache: None
) -> None:
    """A graph or chain run with callbacks passes them down by context: the call goes through `ainvoke`."""
    model = chat_model_factory(fake_openai_config(llm_server))
    recorder = Recorder()
    llm_server.script(REPLY)

    async def ask(_: object) -> BaseMessage:
        return await unobserved_call.reply(model, MESSAGES)

    answer = await RunnableLambda(ask).ainvoke(None, config={"callbacks": [recorder]})

    assert answer.content == REPLY.content
    assert (recorder.starts, recorder.ends) == (1, 1)


async def test_inside_a_run_without_handlers_the_call_is_direct(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, no_global_cache: None
) -> None:
    """The service's case: a graph node's run carries no handler, so nothing would see the LLM run."""
    model = chat_model_factory(fake_openai_config(llm_server))
    llm_server.script(REPLY)
    seen: list[bool] = []

    async def ask(_: object) -> BaseMessage:
        seen.append(unobserved_call.unobserved(model, MESSAGES, {}))
        return await unobserved_call.reply(model, MESSAGES)

    answer = await RunnableLambda(ask).ainvoke(None)

    assert answer.content == REPLY.content
    assert seen == [True]


async def test_a_handler_on_the_model_sees_the_call(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, no_global_cache: None
) -> None:
    model = chat_model_factory(fake_openai_config(llm_server))
    recorder = Recorder()
    model.callbacks = [recorder]
    llm_server.script(REPLY)

    answer = await unobserved_call.reply(model, MESSAGES)

    assert answer.content == REPLY.content
    assert (recorder.starts, recorder.ends) == (1, 1)


def _model_cache(model: BaseChatModel) -> None:
    model.cache = InMemoryCache()


def _global_cache(model: BaseChatModel) -> None:
    set_llm_cache(InMemoryCache())


@pytest.mark.parametrize("cache", [_model_cache, _global_cache], ids=["on the model", "global"])
async def test_a_configured_cache_answers_the_second_call(
    llm_server: FakeLLMServer,
    chat_model_factory: ChatModelFactory,
    cache: Callable[[BaseChatModel], None],
    no_global_cache: None,
) -> None:
    """The second call is a cache hit: only the library path looks there, so only one request is sent."""
    model = chat_model_factory(fake_openai_config(llm_server))
    cache(model)
    llm_server.script(REPLY, Reply(content="a second answer"))

    first = await unobserved_call.reply(model, MESSAGES)
    second = await unobserved_call.reply(model, MESSAGES)

    assert first.content == second.content == REPLY.content
    assert len(llm_server.calls) == 1


def _rate_limited(model: BaseChatModel) -> None:
    model.rate_limiter = InMemoryRateLimiter(requests_per_second=100)


def _streaming(model: BaseChatModel) -> None:
    model.streaming = True  # type: ignore[attr-defined]


def _v1_output(model: BaseChatModel) -> None:
    model.output_version = "v1"


def _verbose(model: BaseChatModel) -> None:
    model.verbose = True


OBSERVED_MODELS: dict[str, Callable[[BaseChatModel], None]] = {
    "rate limiter": _rate_limited,
    "streaming": _streaming,
    "v1 output": _v1_output,
    "verbose": _verbose,
}


@pytest.mark.parametrize("change", list(OBSERVED_MODELS))
def test_what_ainvoke_does_more_for_keeps_its_path(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, change: str, no_global_cache: None
) -> None:
    model = chat_model_factory(fake_openai_config(llm_server))
    assert unobserved_call.unobserved(model, MESSAGES, {})
    OBSERVED_MODELS[change](model)
    assert not unobserved_call.unobserved(model, MESSAGES, {})


@pytest.mark.parametrize(
    ("messages", "kwargs"),
    [
        pytest.param([HumanMessage(content=[{"type": "text", "text": "hi"}])], {}, id="content blocks"),
        pytest.param(MESSAGES, {"stream": True}, id="stream asked for"),
        pytest.param(MESSAGES, {"ls_structured_output_format": {"schema": {}}}, id="structured-output tracing"),
    ],
)
def test_calls_ainvoke_does_more_for_keep_its_path(
    llm_server: FakeLLMServer,
    chat_model_factory: ChatModelFactory,
    messages: list[BaseMessage],
    kwargs: dict[str, Any],
    no_global_cache: None,
) -> None:
    model = chat_model_factory(fake_openai_config(llm_server))
    assert not unobserved_call.unobserved(model, messages, kwargs)


TRACED_PROCESS = """
import json
from langchain_core.messages import HumanMessage
from graphs.llm import unobserved_call
from graphs.llm.config import LLMConfig
from graphs.llm.providers import make_chat_model

model = make_chat_model(LLMConfig(provider="openai", model="m", api_key="k", base_url="http://127.0.0.1:9/v1"))
print(json.dumps(unobserved_call.unobserved(model, [HumanMessage("hi")], {})))
"""
"""A process started with LangSmith tracing on (langsmith reads its switches once per process)."""


@pytest.mark.parametrize(("tracing", "expected"), [("true", False), ("false", True)])
def test_a_tracer_switched_on_by_the_environment_keeps_the_library_path(tracing: str, expected: bool) -> None:
    # The endpoint is a closed loopback port, so the tracer the library builds never reaches a network.
    env = (
        os.environ
        | {"PYTHONPATH": str(PROJECT_ROOT)}
        | {
            "LANGSMITH_TRACING": tracing,
            "LANGSMITH_API_KEY": "lsv2-test-not-a-key",
            "LANGSMITH_ENDPOINT": "http://127.0.0.1:9",
        }
    )
    assert last_json_line(TRACED_PROCESS, env=env, timeout=60) is expected


async def test_a_runnable_that_is_not_a_chat_model_is_invoked(no_global_cache: None) -> None:
    def count(messages: LanguageModelInput) -> BaseMessage:
        assert isinstance(messages, list)
        return AIMessage(content=f"{len(messages)} messages")

    echo: RunnableLambda[LanguageModelInput, BaseMessage] = RunnableLambda(count)

    answer = await unobserved_call.reply(echo, MESSAGES)

    assert answer.content == "2 messages"


async def test_a_graph_nodes_call_is_direct(
    llm_server: FakeLLMServer,
    chat_model_factory: ChatModelFactory,
    no_global_cache: None,
    no_library_run: Callable[[], None],
) -> None:
    """The service's agents ask their model inside a LangGraph node, whose run carries no handler."""
    model = chat_model_factory(fake_openai_config(llm_server))
    llm_server.script(REPLY)
    no_library_run()

    async def node(state: GraphState) -> GraphState:
        direct = unobserved_call.unobserved(model, MESSAGES, {})
        answer = await unobserved_call.reply(model, MESSAGES)
        return {"answer": f"{direct} {answer.content}"}

    graph = StateGraph(GraphState)
    graph.add_node("ask", node)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    result = await graph.compile().ainvoke({"answer": ""})

    assert result["answer"] == f"True {REPLY.content}"


async def test_a_deadline_cancels_the_provider_calls_task(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, no_global_cache: None
) -> None:
    """The provider call runs on a task of its own: a timeout around `reply` must cancel it, not leave it running."""
    model = chat_model_factory(fake_openai_config(llm_server))
    llm_server.script(Reply(content="late", delay_s=5.0))
    before = asyncio.all_tasks()

    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.3):
            await unobserved_call.reply(model, MESSAGES)

    await asyncio.sleep(0)
    assert asyncio.all_tasks() - before == set()


@pytest.mark.parametrize("provider", list(CONFIGS))
@pytest.mark.parametrize("status", [400, 429, 500])
async def test_a_provider_error_is_the_same_error_on_both_paths(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, provider: str, status: int, no_global_cache: None
) -> None:
    model = chat_model_factory(CONFIGS[provider](llm_server))
    llm_server.script(Reply(status=status), Reply(status=status))

    with pytest.raises(Exception) as library:
        await model.ainvoke(MESSAGES)
    with pytest.raises(Exception) as direct:
        await unobserved_call.reply(model, MESSAGES)

    assert type(direct.value) is type(library.value)
    assert classify(direct.value) == classify(library.value)


def test_langchain_debug_mode_keeps_the_library_path(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, no_global_cache: None
) -> None:
    model = chat_model_factory(fake_openai_config(llm_server))
    try:
        set_debug(True)
        assert not unobserved_call.unobserved(model, MESSAGES, {})
    finally:
        set_debug(False)
    assert unobserved_call.unobserved(model, MESSAGES, {})


def test_a_run_config_passed_to_the_call_keeps_the_library_path(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, no_global_cache: None
) -> None:
    """`ainvoke` reads `config` itself; sent to the provider call it would become a request parameter."""
    model = chat_model_factory(fake_openai_config(llm_server))
    assert not unobserved_call.unobserved(model, MESSAGES, {"config": {"callbacks": [Recorder()]}})


class Stubborn(ScriptedChatModel):
    """The scripted model, whose provider call swallows its cancellation and then answers anyway."""

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(5)
        return await super()._agenerate(messages, stop=stop, run_manager=run_manager, **kwargs)


async def test_a_deadline_holds_when_the_provider_swallows_its_cancellation(no_global_cache: None) -> None:
    """As through `ainvoke` (its `asyncio.gather`): the timeout is raised, the late answer is not returned."""
    model = Stubborn(messages=iter(["late"]))
    assert unobserved_call.unobserved(model, MESSAGES, {})

    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.1):
            await unobserved_call.reply(model, MESSAGES)
