"""The lean OpenAI-family chat models: the library's own requests, replies and errors, without its three costs.

Each case runs langchain-openai's own `_agenerate` and the lean one on the same model instance (so the same
configuration and client) against the loopback fake, and compares what reached the server and what came
back. The library's path is recognisable on the wire: it asks the SDK for the raw response, which sends
`X-Stainless-Raw-Response: true`; the lean path does not.
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Callable
from typing import Any, Literal, get_args

import msgspec
import openai
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatResult
from langchain_openai import AzureChatOpenAI, ChatOpenAI
from langchain_openai.chat_models.base import BaseChatOpenAI
from openai._models import construct_type
from openai._utils._transform import async_maybe_transform
from openai.types.chat import ChatCompletion
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

from graphs.llm.config import LLMConfig
from graphs.llm.openai_chat import (
    REQUEST_OPTION_KEYS,
    LeanAzureChatOpenAI,
    LeanChatOpenAI,
    as_dumped,
    sent_as_built,
)
from graphs.llm.retry import classify
from graphs.llm.structured_output import native_json_kwargs
from tests.fakes.fixtures import ChatModelFactory
from tests.fakes.llm_server import FakeLLMServer, RecordedRequest, Reply
from tests.support.live_service import free_port

Provider = Literal["openai", "openai-compatible", "azure"]
RAW_RESPONSE_HEADER = "x-stainless-raw-response"
"""Sent by the SDK's `with_raw_response`, which only langchain-openai's own `_agenerate` uses."""
PATH_HEADERS = {RAW_RESPONSE_HEADER}
"""The one header that differs between the two paths by design: which path sent the request."""
CALL_OPTIONS: dict[str, dict[str, Any]] = {
    "no options": {},
    "stop": {"stop": ["END", "終"]},
    "request options": {"extra_headers": {"X-Trace": "t-1"}, "extra_query": {"trace": "1"}, "timeout": 5.5},
}
"""Keyword arguments a call may carry: `stop` goes into the body, the others are `create`'s request options."""


def _config(provider: Provider, server: FakeLLMServer) -> LLMConfig:
    common: dict[str, Any] = {"model": "m-1", "api_key": "k-test", "timeout_s": 2.0, "max_output_tokens": 321}
    if provider == "azure":
        return LLMConfig(
            provider="azure",
            azure_endpoint=server.azure_endpoint,
            azure_deployment="m-1",
            api_version="2024-10-21",
            **common,
        )
    return LLMConfig(provider=provider, base_url=server.url, temperature=0.3, **common)


def _library_generate(model: BaseChatOpenAI) -> Callable[..., Any]:
    """langchain-openai's own `_agenerate` for this model's class, bound to the model."""
    library = AzureChatOpenAI if isinstance(model, AzureChatOpenAI) else ChatOpenAI
    return lambda messages, **kwargs: library._agenerate(model, messages, **kwargs)


CONVERSATIONS: dict[str, list[BaseMessage]] = {
    "system and user": [SystemMessage("答えは JSON で。"), HumanMessage("東京タワーの高さは?")],
    "a re-ask": [
        SystemMessage("Reply with JSON."),
        HumanMessage("Which ids?"),
        AIMessage('{"ids": ["c9"]}'),
        HumanMessage("- $.ids[0]: c9 is not a candidate"),
    ],
    "empty and unicode text": [HumanMessage(""), HumanMessage('é\u3000ｶﾀｶﾅ 😀 "quoted" \\ \n tab\t')],
}


def _assert_paths(server: FakeLLMServer) -> None:
    """The server saw two requests: the library path's first, then the lean path's."""
    library_call, lean_call = server.wait_for_calls(2)
    assert library_call.headers.get(RAW_RESPONSE_HEADER) == "true"
    assert RAW_RESPONSE_HEADER not in lean_call.headers


def _request(call: RecordedRequest) -> dict[str, Any]:
    headers = {name: value for name, value in call.headers.items() if name not in PATH_HEADERS}
    return {"method": call.method, "path": call.path, "query": call.query, "headers": headers, "body": call.body}


def _result(result: ChatResult) -> dict[str, Any]:
    (generation,) = result.generations
    message = generation.message
    assert isinstance(message, AIMessage)
    metadata = {key: value for key, value in message.response_metadata.items() if key != "id"}
    return {
        "content": message.content,
        "usage": message.usage_metadata,
        "metadata": metadata,
        "generation_info": generation.generation_info,
        "llm_output": {key: value for key, value in (result.llm_output or {}).items() if key != "id"},
    }


Outcome = ChatResult | BaseException
"""What a call came to: its result, or the exception it raised."""


async def _on_both_paths(
    model: BaseChatOpenAI, server: FakeLLMServer | None = None, reply: Reply | None = None, **kwargs: Any
) -> tuple[Outcome, Outcome]:
    """The library path's outcome of one call, then the lean path's, `reply` scripted before each."""
    outcomes: list[Outcome] = []
    for generate in (_library_generate(model), model._agenerate):
        if server is not None and reply is not None:
            server.script(reply)
        try:
            outcomes.append(await generate([HumanMessage("hi")], **kwargs))
        except Exception as error:
            outcomes.append(error)
    return outcomes[0], outcomes[1]


@pytest.mark.parametrize("provider", get_args(Provider))
@pytest.mark.parametrize("conversation", list(CONVERSATIONS))
@pytest.mark.parametrize("native_json", [True, False], ids=["json-schema", "prompt-only"])
@pytest.mark.parametrize("call_options", list(CALL_OPTIONS))
async def test_the_lean_path_sends_and_returns_what_the_library_path_does(
    llm_server: FakeLLMServer,
    chat_model_factory: ChatModelFactory,
    provider: Provider,
    conversation: str,
    native_json: bool,
    call_options: str,
) -> None:
    model = chat_model_factory(_config(provider, llm_server))
    assert isinstance(model, LeanChatOpenAI | LeanAzureChatOpenAI)
    messages = CONVERSATIONS[conversation]
    cfg = msgspec.structs.replace(_config(provider, llm_server), native_json_schema=native_json)
    kwargs = native_json_kwargs(model, dict[str, list[str]], cfg) | CALL_OPTIONS[call_options]
    reply = Reply(content='{"ids": ["c1"]}', usage=(123, 45))
    llm_server.script(reply, reply)

    library = await _library_generate(model)(messages, **kwargs)
    lean = await model._agenerate(messages, **kwargs)

    _assert_paths(llm_server)
    library_call, lean_call = llm_server.calls
    assert _request(lean_call) == _request(library_call)
    assert _result(lean) == _result(library)


_MESSAGE = {"role": "assistant", "content": '{"ids": ["c1"]}'}
_REQUIRED = {"id": "cc-1", "object": "chat.completion", "created": 1, "model": "m-1"}
REPLY_BODIES: dict[str, dict[str, Any]] = {
    "required fields only": _REQUIRED | {"choices": [{"index": 0, "finish_reason": "stop", "message": _MESSAGE}]},
    "every optional field": _REQUIRED
    | {
        "choices": [
            {
                "index": 0,
                "finish_reason": "length",
                "logprobs": {"content": [{"token": "a", "logprob": -0.1, "bytes": [97], "top_logprobs": []}]},
                "message": _MESSAGE | {"refusal": "no", "annotations": [], "audio": None, "tool_calls": None},
            }
        ],
        "usage": {
            "prompt_tokens": 12,
            "completion_tokens": 5,
            "total_tokens": 17,
            "prompt_tokens_details": {"cached_tokens": 3},
            "completion_tokens_details": {"reasoning_tokens": 2},
        },
        "system_fingerprint": "fp-1",
        "service_tier": "default",
    },
    # llama.cpp's server adds its timings; reasoning servers (vLLM, DeepSeek) a message field of their own.
    "fields the SDK does not declare": _REQUIRED
    | {
        "choices": [{"index": 0, "finish_reason": "stop", "message": _MESSAGE | {"reasoning_content": "hm"}}],
        "usage": {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6},
        "timings": {"predicted_ms": 12.5},
    },
    "no choices": _REQUIRED | {"choices": []},
    # A server may leave out what the API requires: the typed reply has those fields as null.
    "required fields left out": {
        "choices": [{"message": {"content": "ok"}}],
        "usage": {"prompt_tokens": 3},
    },
    "no choices key": _REQUIRED,
}
"""Replies as OpenAI-compatible servers send them: the lean path reads each as the library's typed reply."""


@pytest.mark.parametrize("body", list(REPLY_BODIES))
def test_a_reply_reads_as_the_sdks_typed_reply_dumped(body: str) -> None:
    """`as_dumped` gives what `ChatCompletion`, built the SDK's way, gives back as a dict."""
    reply = REPLY_BODIES[body]
    typed = construct_type(type_=ChatCompletion, value=reply)
    assert isinstance(typed, ChatCompletion)
    assert as_dumped(reply, ChatCompletion) == typed.model_dump(warnings=False)


@pytest.mark.parametrize("provider", get_args(Provider))
@pytest.mark.parametrize("body", list(REPLY_BODIES))
async def test_every_reply_shape_fares_as_on_the_library_path(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, provider: Provider, body: str
) -> None:
    """The same result (message, usage, metadata, ids included) or the same error, whatever the reply holds."""
    model = chat_model_factory(_config(provider, llm_server))
    assert isinstance(model, LeanChatOpenAI | LeanAzureChatOpenAI)
    library, lean = await _on_both_paths(model, llm_server, Reply(body=json.dumps(REPLY_BODIES[body]).encode()))
    _assert_paths(llm_server)
    assert _described(lean) == _described(library)


def _described(outcome: Outcome) -> object:
    """An outcome in full: the error's type and message, or every part of the result a caller can read."""
    if isinstance(outcome, BaseException):
        return type(outcome), str(outcome)
    generations = [
        (g.message.content, g.message.additional_kwargs, g.message.response_metadata, g.generation_info)
        for g in outcome.generations
    ]
    return generations, outcome.llm_output


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        pytest.param(json.dumps(REPLY_BODIES["every optional field"]), "text/plain", id="json-as-text"),
        pytest.param("<html>gateway</html>", "text/html", id="html"),
        pytest.param("[1, 2]", "application/json", id="a-list"),
        pytest.param("\ufeff" + json.dumps(REPLY_BODIES["every optional field"]), "application/json", id="bom"),
        pytest.param(json.dumps(REPLY_BODIES["every optional field"])[:40], "application/json", id="truncated"),
    ],
)
async def test_a_reply_that_is_not_a_json_object_fares_as_on_the_library_path(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, body: str, content_type: str
) -> None:
    """A JSON body sent as text is still read; anything else is refused with the library's own error."""
    model = chat_model_factory(_config("openai", llm_server))
    assert isinstance(model, BaseChatOpenAI)
    library, lean = await _on_both_paths(model, llm_server, Reply(body=body.encode(), content_type=content_type))
    _assert_paths(llm_server)
    assert _described(lean) == _described(library)
    assert isinstance(library, ChatResult | ValueError)


@pytest.mark.parametrize("provider", ["openai", "azure"])
async def test_a_call_through_ainvoke_takes_the_lean_path_and_converts_the_reply_on_the_loop(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, provider: Provider
) -> None:
    model = chat_model_factory(_config(provider, llm_server))
    assert isinstance(model, BaseChatOpenAI)
    converted_on: list[int] = []
    convert = model._create_chat_result

    def recording(*args: Any, **kwargs: Any) -> ChatResult:
        converted_on.append(threading.get_ident())
        return convert(*args, **kwargs)

    object.__setattr__(model, "_create_chat_result", recording)
    llm_server.script(Reply(content="hello", usage=(7, 2)))
    reply = await model.ainvoke([HumanMessage("hi")])

    assert reply.content == "hello"
    assert reply.usage_metadata is not None
    assert reply.usage_metadata["total_tokens"] == 9
    (call,) = llm_server.calls
    assert RAW_RESPONSE_HEADER not in call.headers
    assert converted_on == [threading.get_ident()], "the reply must be converted on the event loop's thread"


@pytest.mark.parametrize(
    ("status", "library_error"),
    [
        pytest.param(400, "OpenAIInvalidRequestError", id="400"),
        pytest.param(401, "OpenAIAuthenticationError", id="401"),
        pytest.param(404, "OpenAIModelNotFoundError", id="404"),
        pytest.param(429, "OpenAIRateLimitError", id="429"),
        pytest.param(500, "OpenAIAPIError", id="500"),
        pytest.param(503, "OpenAIAPIError", id="503"),
    ],
)
async def test_errors_are_the_library_paths_errors(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, status: int, library_error: str
) -> None:
    model = chat_model_factory(_config("openai", llm_server))
    assert isinstance(model, BaseChatOpenAI)
    library, lean = await _on_both_paths(model, llm_server, Reply(status=status, headers={"Retry-After": "3"}))
    _assert_paths(llm_server)
    assert type(lean) is type(library)
    assert type(lean).__name__ == library_error
    assert isinstance(lean, openai.APIStatusError)
    assert isinstance(library, openai.APIStatusError)
    assert (lean.status_code, lean.message) == (library.status_code, library.message)
    # What the shared retry loop reads off the error: retryable or not, and Retry-After.
    assert classify(lean) == classify(library)


async def test_a_timeout_is_the_library_paths_timeout(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory
) -> None:
    model = chat_model_factory(msgspec.structs.replace(_config("openai", llm_server), timeout_s=0.2))
    assert isinstance(model, BaseChatOpenAI)
    library, lean = await _on_both_paths(model, llm_server, Reply(content="late", delay_s=1.0))
    _assert_paths(llm_server)
    assert isinstance(library, openai.APITimeoutError)
    assert type(lean) is type(library)


@pytest.mark.parametrize(
    ("kwargs", "messages"),
    [
        pytest.param({"response_format": {"type": "json_object"}}, [HumanMessage("hi")], id="response_format"),
        pytest.param(
            {"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]},
            [HumanMessage("hi")],
            id="tools",
        ),
        pytest.param({}, [HumanMessage(content=[{"type": "text", "text": "hi"}])], id="content-parts"),
    ],
)
async def test_what_the_library_does_more_for_takes_its_path(
    llm_server: FakeLLMServer,
    chat_model_factory: ChatModelFactory,
    kwargs: dict[str, Any],
    messages: list[BaseMessage],
) -> None:
    model = chat_model_factory(_config("openai", llm_server))
    assert isinstance(model, BaseChatOpenAI)
    llm_server.script(Reply(content='{"a": 1}'))
    await model._agenerate(messages, **kwargs)
    (call,) = llm_server.calls
    assert call.headers.get(RAW_RESPONSE_HEADER) == "true"


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        pytest.param({"messages": [{"role": "user", "content": "x"}], "stream": False}, True, id="plain"),
        pytest.param({"messages": [{"role": "assistant", "content": None}]}, True, id="no-content"),
        pytest.param({"messages": [{"role": "user", "content": "x"}], "stream": True}, False, id="stream"),
        pytest.param({"messages": [{"role": "user", "content": [{"type": "text"}]}]}, False, id="parts"),
        pytest.param({"messages": [{"role": "user", "content": "x"}], "response_format": {}}, False, id="format"),
        pytest.param({"messages": [{"role": "user", "content": "x"}], "tools": []}, False, id="tools"),
        pytest.param({"messages": "x"}, False, id="not-a-list"),
        pytest.param({}, False, id="no-messages"),
    ],
)
def test_sent_as_built(payload: dict[str, Any], expected: bool) -> None:
    assert sent_as_built(payload) is expected


async def test_a_refused_connection_is_the_library_paths_connection_error(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory
) -> None:
    closed = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    model = chat_model_factory(msgspec.structs.replace(_config("openai", llm_server), base_url=closed))
    assert isinstance(model, BaseChatOpenAI)
    library, lean = await _on_both_paths(model)
    assert isinstance(library, openai.APIConnectionError)
    assert type(lean) is type(library)


async def test_response_headers_asked_for_take_the_library_path(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory
) -> None:
    model = chat_model_factory(_config("openai", llm_server))
    assert isinstance(model, BaseChatOpenAI)
    model.include_response_headers = True
    llm_server.script(Reply(content="hi"))
    result = await model._agenerate([HumanMessage("hi")])
    (call,) = llm_server.calls
    assert call.headers.get(RAW_RESPONSE_HEADER) == "true"
    assert "content-type" in (result.generations[0].generation_info or {})["headers"]


async def test_a_payload_create_would_refuse_is_refused_as_create_refuses_it(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory
) -> None:
    model = chat_model_factory(_config("openai", llm_server))
    assert isinstance(model, BaseChatOpenAI)
    for outcome in await _on_both_paths(model, temprature=0.5):
        assert isinstance(outcome, TypeError)
        assert "unexpected keyword argument 'temprature'" in str(outcome)
    assert llm_server.calls == []


async def test_without_an_api_key_neither_path_sends_an_admin_key(
    llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_ADMIN_KEY", "admin-key-not-for-chat")
    models = (
        ChatOpenAI(model="m", base_url=llm_server.url),
        LeanChatOpenAI(model="m", base_url=llm_server.url),  # the SDK's retries on: posted through the SDK
        LeanChatOpenAI(model="m", base_url=llm_server.url, max_retries=0),  # as the service's: the request reused
    )
    for model in models:
        with pytest.raises(TypeError, match="Could not resolve authentication method"):
            await model.ainvoke([HumanMessage("hi")])
    assert llm_server.calls == []


@pytest.mark.parametrize("provider", get_args(Provider))
@pytest.mark.parametrize("conversation", list(CONVERSATIONS))
@pytest.mark.parametrize("call_options", list(CALL_OPTIONS))
async def test_the_sdks_transform_leaves_the_payloads_as_built(
    llm_server: FakeLLMServer,
    chat_model_factory: ChatModelFactory,
    provider: Provider,
    conversation: str,
    call_options: str,
) -> None:
    """What the lean path skips is an identity on what it sends: if an SDK release gave these types aliases or
    formats, this fails, and the lean path must then apply them too (or leave such payloads to the library)."""
    model = chat_model_factory(_config(provider, llm_server))
    assert isinstance(model, BaseChatOpenAI)
    kwargs = native_json_kwargs(model, dict[str, list[str]], _config(provider, llm_server)) | CALL_OPTIONS[call_options]
    payload = model._get_request_payload(CONVERSATIONS[conversation], **kwargs)
    assert sent_as_built(payload)
    body = {key: value for key, value in payload.items() if key not in REQUEST_OPTION_KEYS}
    assert await async_maybe_transform(body, CompletionCreateParamsNonStreaming) == body


async def test_a_compressed_reply_fares_as_on_the_library_path(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory
) -> None:
    """A gzip body is decoded by the SDK's own response on both paths (the reused request's short cut skips it)."""
    model = chat_model_factory(_config("openai", llm_server))
    assert isinstance(model, BaseChatOpenAI)
    body = gzip.compress(json.dumps(REPLY_BODIES["every optional field"]).encode())
    library, lean = await _on_both_paths(model, llm_server, Reply(body=body, headers={"Content-Encoding": "gzip"}))
    _assert_paths(llm_server)
    assert isinstance(library, ChatResult)
    assert _described(lean) == _described(library)


async def test_a_redirect_is_followed_as_on_the_library_path(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory
) -> None:
    """The SDK's client follows a redirect; the reused request hands the call back to the SDK, which follows it."""
    model = chat_model_factory(_config("openai", llm_server))
    assert isinstance(model, BaseChatOpenAI)
    moved = Reply(status=307, headers={"Location": f"{llm_server.url}/chat/completions"})
    landed = Reply(body=json.dumps(REPLY_BODIES["every optional field"]).encode())
    llm_server.script(moved, landed, moved, moved, landed)
    library = await _library_generate(model)([HumanMessage("hi")])
    lean = await model._agenerate([HumanMessage("hi")])
    assert isinstance(library, ChatResult)
    assert _described(lean) == _described(library)
    assert len(llm_server.calls) == 5  # the library's two requests; the reused one redirected, then the SDK's two
    assert {call.body["messages"][0]["content"] for call in llm_server.calls} == {"hi"}
