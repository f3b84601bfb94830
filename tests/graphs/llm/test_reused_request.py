"""Which clients send the SDK's request again, and that the service's models are among them.

What a reused request sends and what comes back is compared with the SDK's own path, reply by reply and
error by error, in `test_openai_chat.py`; these tests pin which path a client takes: a client whose request
may change between calls (retries, credentials asked for on each call, hooks, another transport) posts
through the SDK, and each provider's model as the service builds it reuses the request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Literal, get_args
from unittest import mock

import httpx2
import openai
import pytest
from aiohttp import ClientSession
from langchain_core.messages import HumanMessage
from langchain_openai.chat_models.base import BaseChatOpenAI
from openai._base_client import make_request_options

from graphs.llm import reused_request as reused_module
from graphs.llm.config import LLMConfig
from graphs.llm.openai_chat import CHAT_COMPLETIONS_PATH, CREATE_SECURITY, ReplyJson
from graphs.llm.providers import _openai_http_client
from graphs.llm.retry import classify
from graphs.llm.reused_request import ReusedRequest, post, reusable, reused_request
from tests.fakes.fixtures import ChatModelFactory, fake_azure_config, fake_openai_config
from tests.fakes.llm_server import FakeLLMServer, RecordedRequest, Reply

Provider = Literal["openai", "openai-compatible", "azure"]
ClientFactory = Callable[[FakeLLMServer], openai.AsyncOpenAI]


FAKE_STAMPS = {"id": "?", "created": 0}
"""Masks what the fake stamps on each completion: a running id and the second it answered (two calls can
straddle a second: CI saw `created` differ by one)."""


def _config(provider: Provider, server: FakeLLMServer) -> LLMConfig:
    return fake_azure_config(server) if provider == "azure" else fake_openai_config(server, provider=provider)


@pytest.mark.parametrize("provider", get_args(Provider))
async def test_the_services_models_send_the_sdks_request_again(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, provider: Provider
) -> None:
    """The path `test_openai_chat.py` compares with the SDK's is the one the service takes, for every provider."""
    model = chat_model_factory(_config(provider, llm_server))
    assert isinstance(model, BaseChatOpenAI)
    client = model.root_async_client
    assert reusable(client)
    llm_server.script(Reply(content="one"), Reply(content="two"))
    first = await model._agenerate([HumanMessage("hi")])
    second = await model._agenerate([HumanMessage("a longer question")])
    assert [first.generations[0].message.content, second.generations[0].message.content] == ["one", "two"]
    (built,) = reused_module._built[client].values()  # one request built, sent twice
    assert isinstance(built, ReusedRequest)
    one, two = llm_server.calls
    assert one.path == two.path
    assert {k: v for k, v in one.headers.items() if k != "content-length"} == {
        k: v for k, v in two.headers.items() if k != "content-length"
    }
    assert int(two.headers["content-length"]) > int(one.headers["content-length"])


async def _no_hook(_: object) -> None:
    return None


async def _key() -> str:
    return "k-from-a-provider"


def _with_http(http_client: Callable[[], httpx2.AsyncClient], **client: Any) -> ClientFactory:
    """A client as the service's (static key, SDK retries off) but for its HTTP client and `client`'s settings."""
    settings: dict[str, Any] = {"api_key": "k", "max_retries": 0} | client
    return lambda server: openai.AsyncOpenAI(base_url=server.url, http_client=http_client(), **settings)


CHANGING_CLIENTS: dict[str, ClientFactory] = {
    "the SDK's retries on": _with_http(_openai_http_client, max_retries=2),
    "a key asked for on each call": _with_http(_openai_http_client, api_key=_key),
    "an Azure AD token provider": lambda server: openai.AsyncAzureOpenAI(
        azure_ad_token_provider=lambda: "token",
        azure_endpoint=server.azure_endpoint,
        api_version="2024-10-21",
        http_client=_openai_http_client(),
        max_retries=0,
    ),
    "a request hook of the caller's": _with_http(
        lambda: openai.DefaultAioHttpClient(event_hooks={"request": [_no_hook]})
    ),
    "auth on the HTTP client": _with_http(lambda: openai.DefaultAioHttpClient(auth=("user", "secret"))),
    "a response hook": _with_http(lambda: openai.DefaultAioHttpClient(event_hooks={"response": [_no_hook]})),
    "httpx2's own transport": _with_http(httpx2.AsyncClient),
    "a proxy": _with_http(lambda: openai.DefaultAioHttpClient(proxy="http://127.0.0.1:9")),
}
"""Clients whose request the SDK may build differently on each call, or sends another way: never reused."""
_client = _with_http(_openai_http_client)
"""A client as the service configures one: static key, SDK retries off, the SDK's aiohttp transport."""


@pytest.mark.parametrize("make", list(CHANGING_CLIENTS.values()), ids=list(CHANGING_CLIENTS))
async def test_a_client_whose_request_may_change_posts_through_the_sdk(
    llm_server: FakeLLMServer, make: ClientFactory
) -> None:
    client = make(llm_server)
    try:
        options = make_request_options(security=CREATE_SECURITY)
        assert await reused_request(client, CHAT_COMPLETIONS_PATH, "m-1", options) is None
    finally:
        await client.close()


async def test_a_reused_client_is_recognised_as_such(llm_server: FakeLLMServer) -> None:
    """The contrast of the cases above: the same client without what changes its request is reused."""
    client = _client(llm_server)
    try:
        options = make_request_options(security=CREATE_SECURITY)
        assert isinstance(await reused_request(client, CHAT_COMPLETIONS_PATH, "m-1", options), ReusedRequest)
    finally:
        await client.close()


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({}, id="none"),
        pytest.param({"extra_headers": {"X-Trace": "t-1"}, "extra_query": {"q": "1"}, "timeout": 5.5}, id="request"),
        pytest.param({"extra_body": {"max_tokens": 7, "seed": 3}}, id="extra-body"),
        pytest.param({"extra_headers": {"Cookie": "gateway=abc"}}, id="a-cookie-header"),
    ],
)
async def test_post_sends_what_the_sdks_post_sends(llm_server: FakeLLMServer, options: dict[str, Any]) -> None:
    """`post` against the SDK's `post` on the same client: the same request on the wire, the same JSON back."""
    client = _client(llm_server)
    body = {"model": "m-1", "messages": [{"role": "user", "content": "東京タワー"}], "temperature": 0.3}
    made = make_request_options(**options, security=CREATE_SECURITY)
    try:
        llm_server.script(Reply(content="a"), Reply(content="a"))
        sdk: object = await client.post(CHAT_COMPLETIONS_PATH, body=body, options=made, cast_to=ReplyJson)
        ours = await post(client, CHAT_COMPLETIONS_PATH, body, made, ReplyJson)
    finally:
        await client.close()
    assert isinstance(reused_module._built[client][next(iter(reused_module._built[client]))], ReusedRequest)
    assert isinstance(ours, dict)
    assert isinstance(sdk, dict)
    assert ours | FAKE_STAMPS == sdk | FAKE_STAMPS
    by_sdk, by_reuse = llm_server.calls
    assert (by_reuse.method, by_reuse.path, by_reuse.query, by_reuse.body) == (
        by_sdk.method,
        by_sdk.path,
        by_sdk.query,
        by_sdk.body,
    )
    assert by_reuse.headers == by_sdk.headers


Outcome = object
"""What a call came to: the reply's JSON (less the fake's stamps), or the exception's type and message."""


async def _outcome(call: Callable[[], Awaitable[object]]) -> Outcome:
    try:
        reply = await call()
    except Exception as error:
        return type(error), str(error), classify(error).retryable
    return reply | FAKE_STAMPS if isinstance(reply, dict) else reply


Session = Callable[[openai.AsyncOpenAI, Callable[[], Awaitable[object]]], Awaitable[list[Outcome]]]


async def _sdk_vs_reused(
    server: FakeLLMServer, replies: list[Reply], session: Session, make: ClientFactory | None = None
) -> tuple[tuple[list[Outcome], list[RecordedRequest]], tuple[list[Outcome], list[RecordedRequest]]]:
    """`session` run twice, each on a client of its own with `replies` scripted: posting through the SDK, then
    through `post`; each run's outcomes and the requests the server saw."""
    body = {"model": "m-1", "messages": [{"role": "user", "content": "hi"}]}
    options = make_request_options(security=CREATE_SECURITY)
    runs = []
    for through_sdk in (True, False):
        client = (make or _client)(server)
        server.reset()
        server.script(*replies)

        def call(client: openai.AsyncOpenAI = client, through_sdk: bool = through_sdk) -> Awaitable[object]:
            if through_sdk:
                return client.post(CHAT_COMPLETIONS_PATH, body=body, options=options, cast_to=ReplyJson)
            return post(client, CHAT_COMPLETIONS_PATH, body, options, ReplyJson)

        try:
            runs.append((await session(client, call), list(server.calls)))
        finally:
            await client.close()
    return runs[0], runs[1]


def _seen(calls: list[RecordedRequest]) -> list[tuple[str, str, dict[str, str]]]:
    """What the server saw of each request: method, path and headers (less the body's length)."""
    return [(c.method, c.path, {k: v for k, v in c.headers.items() if k != "content-length"}) for c in calls]


async def _calls(times: int, client: openai.AsyncOpenAI, call: Callable[[], Awaitable[object]]) -> list[Outcome]:
    return [await _outcome(call) for _ in range(times)]


COMPLETION = Reply(body=b'{"id": "cc-1", "object": "chat.completion", "choices": []}')
REPLIES: dict[str, list[Reply]] = {
    # The fake listens on 127.0.0.1: aiohttp's own jar refuses cookies from an IP address, httpx2's keeps them.
    "a cookie set by the server": [
        Reply(body=COMPLETION.body, headers={"Set-Cookie": "sticky=1; Path=/"}),
        COMPLETION,
        COMPLETION,
    ],
    "a body that does not decode": [Reply(body=b"not gzip", headers={"Content-Encoding": "gzip"}), COMPLETION],
    "303, then GET": [Reply(status=303, headers={"Location": "/v1/chat/completions"}), COMPLETION, COMPLETION],
    "307, then POST again": [Reply(status=307, headers={"Location": "/v1/chat/completions"}), COMPLETION, COMPLETION],
    "300 with a Location: not followed": [Reply(status=300, headers={"Location": "/v1/x"}), COMPLETION],
    "302 without a Location": [Reply(status=302), COMPLETION],
    "500": [Reply(status=500), COMPLETION],
}
"""Replies whose handling is httpx2's or the SDK's: cookies kept and sent back, decoding, redirects, errors."""


@pytest.mark.parametrize("replies", list(REPLIES.values()), ids=list(REPLIES))
async def test_replies_fare_as_through_the_sdk(llm_server: FakeLLMServer, replies: list[Reply]) -> None:
    """The same outcomes, the same requests seen by the server (redirects followed, cookies sent back)."""
    (sdk, sdk_seen), (ours, our_seen) = await _sdk_vs_reused(llm_server, replies, partial(_calls, 2))
    assert ours == sdk
    assert _seen(our_seen) == _seen(sdk_seen)


RETRIED = Reply(status=500, headers={"Retry-After": "0"})
Change = Callable[[openai.AsyncOpenAI], None]


def _changed_between_calls(change: Change) -> Session:
    """A session of two calls with the client changed in between."""

    async def session(client: openai.AsyncOpenAI, call: Callable[[], Awaitable[object]]) -> list[Outcome]:
        first = await _outcome(call)
        change(client)
        return [first, await _outcome(call)]

    return session


def _set(name: str, value: object) -> Change:
    return lambda client: setattr(client, name, value)


def _http_header(name: str, value: str) -> Change:
    def change(client: openai.AsyncOpenAI) -> None:
        client._client.headers[name] = value

    return change


def _http_params(value: str) -> Change:
    def change(client: openai.AsyncOpenAI) -> None:
        client._client.params = httpx2.QueryParams(value)

    return change


CHANGES: dict[str, tuple[Change, list[Reply]]] = {
    "api_key": (_set("api_key", "k-rotated"), [COMPLETION, COMPLETION]),
    "organization": (_set("organization", "org-1"), [COMPLETION, COMPLETION]),
    "timeout": (_set("timeout", 5.0), [COMPLETION, COMPLETION]),
    # The SDK's retries switched on: the 500 is retried, by the SDK on both paths.
    "max_retries": (_set("max_retries", 1), [COMPLETION, RETRIED, COMPLETION]),
    "the HTTP client's headers": (_http_header("X-Gateway-Token", "t-2"), [COMPLETION, COMPLETION]),
    "the HTTP client's query": (_http_params("tenant=t2"), [COMPLETION, COMPLETION]),
}
"""What a caller may change on a client after its first call, and the replies the two calls then get."""


@pytest.mark.parametrize(("change", "replies"), list(CHANGES.values()), ids=list(CHANGES))
async def test_a_client_changed_after_a_call_sends_what_the_sdk_sends(
    llm_server: FakeLLMServer, change: Change, replies: list[Reply]
) -> None:
    (sdk, sdk_seen), (ours, our_seen) = await _sdk_vs_reused(llm_server, replies, _changed_between_calls(change))
    assert ours == sdk
    assert [(c.query, *seen) for c, seen in zip(our_seen, _seen(our_seen), strict=True)] == [
        (c.query, *seen) for c, seen in zip(sdk_seen, _seen(sdk_seen), strict=True)
    ]
    assert len(our_seen) == len(replies)


async def test_cookies_in_the_jar_before_the_first_call_are_the_jars_as_it_then_is(llm_server: FakeLLMServer) -> None:
    """A jar holding a cookie when the request is built: the cookie the server replaces it with goes out after."""

    holding_a_cookie = _with_http(lambda: openai.DefaultAioHttpClient(cookies={"sticky": "1"}))

    replies = [Reply(body=COMPLETION.body, headers={"Set-Cookie": "sticky=2; Path=/"}), COMPLETION]
    (sdk, sdk_seen), (ours, our_seen) = await _sdk_vs_reused(
        llm_server, replies, partial(_calls, 2), make=holding_a_cookie
    )
    assert ours == sdk
    assert _seen(our_seen) == _seen(sdk_seen)
    assert our_seen[0].headers["cookie"] == "sticky=1"
    assert "sticky=2" in our_seen[1].headers["cookie"]  # with the preset one, as httpx2 keeps both


async def test_cookies_from_the_server_go_back_on_the_reused_request(llm_server: FakeLLMServer) -> None:
    """A server that sets cookies (OpenAI's API sits behind one) still gets the request sent again, with them."""
    client = _client(llm_server)
    body = {"model": "m-1", "messages": [{"role": "user", "content": "hi"}]}
    options = make_request_options(security=CREATE_SECURITY)
    llm_server.script(*REPLIES["a cookie set by the server"])
    try:
        with mock.patch.object(client, "post", side_effect=AssertionError("posted through the SDK")):
            for _ in range(3):
                await post(client, CHAT_COMPLETIONS_PATH, body, options, ReplyJson)
    finally:
        await client.close()
    assert [call.headers.get("cookie") for call in llm_server.calls] == [None, "sticky=1", "sticky=1"]


async def test_a_client_closed_while_its_request_is_built_refuses_as_the_sdk_does(llm_server: FakeLLMServer) -> None:
    client = _client(llm_server)
    build = reused_module._build

    async def build_then_close(*args: Any) -> ReusedRequest | None:
        built = await build(*args)
        await client.close()
        return built

    body = {"model": "m-1", "messages": [{"role": "user", "content": "hi"}]}
    with (
        mock.patch.object(reused_module, "_build", build_then_close),
        pytest.raises(RuntimeError, match="client has been closed"),
    ):
        await post(client, CHAT_COMPLETIONS_PATH, body, make_request_options(security=CREATE_SECURITY), ReplyJson)
    assert llm_server.calls == []
    transport = client._client._transport_for_url(httpx2.URL(llm_server.url))
    assert not isinstance(getattr(transport, "client", None), ClientSession)  # no session opened on a closed client


async def test_a_raw_response_asked_for_posts_through_the_sdk(llm_server: FakeLLMServer) -> None:
    client = _client(llm_server)
    options = make_request_options(extra_headers={"X-Stainless-Raw-Response": "true"}, security=CREATE_SECURITY)
    try:
        assert await reused_request(client, CHAT_COMPLETIONS_PATH, "m-1", options) is None
    finally:
        await client.close()


async def test_a_closed_client_refuses_as_the_sdk_does(llm_server: FakeLLMServer) -> None:
    async def closed(client: openai.AsyncOpenAI, call: Callable[[], Awaitable[object]]) -> list[Outcome]:
        first = await _outcome(call)
        await client.close()
        return [first, await _outcome(call)]

    (sdk, _), (ours, our_seen) = await _sdk_vs_reused(llm_server, [COMPLETION], closed)
    assert ours == sdk
    assert ours[1][0] is RuntimeError  # type: ignore[index]
    assert len(our_seen) == 1
