"""A chat completion's HTTP request as the OpenAI SDK builds it, built once per client and sent again with each body.

Why: the SDK's `post` spends about 0.45 ms of CPU a call around the HTTP exchange itself (against 0.2 ms for
the exchange; `python -m bench.model_step_cpu --sdk-post` measures it in a model-backed think step): it
copies and validates the request options, parses and merges the URL, merges and normalises some twenty
headers through httpx2's `Headers`, and wraps the request and the reply in httpx2 models, on every call, to
arrive at the same URL and headers each time. For a client whose credentials cannot change between calls (a
static API key), nothing of that depends on the call but the body, the model named in it (Azure puts it in
the URL when no deployment is configured) and the call's request options.

So the SDK builds the request once for each such combination (its own `_prepare_options` and
`_build_request`: the URL with Azure's deployment and `api-version`, the auth, platform and timeout headers,
the timeout), and every call sends that URL and those headers with its own body, serialised by the SDK's
`openapi_dumps` after merging `extra_body` as the SDK merges it, through the connection pool of the SDK's
own aiohttp transport, with the options that transport gives aiohttp. What the request is built from and a
caller may reassign (the client's attributes: `api_key`, `base_url`, `timeout`, `organization`..., and the
httpx2 client's headers and query) is part of the key, so a client changed after a call gets its request built
anew. The cookies of the httpx2 client's jar are left out of the built request and added on each call as
httpx2 adds them (its own code; the jar decides, a `Cookie` header of the caller's wins): OpenAI's API sets
cookies on its replies, and they go back as through the SDK. A reply is read as the SDK reads it:

- a 2xx JSON reply (content type ending in `json`) that is not encoded and sets no cookie is the parsed
  JSON, which is what the SDK's `post` with `cast_to=ReplyJson` returns;
- any other reply is handed over as httpx2's `send` hands it to the SDK, with httpx2's own code: its cookies
  kept in the httpx2 client's jar, its body read and decoded, a redirect followed (`follow_redirects`:
  301/302/303/307/308 with a `Location`, the next request built by httpx2); then a status outside 2xx raises
  the SDK's typed error (`_make_status_error_from_response`) and anything else goes through the SDK's
  response processing;
- a failure is raised as the SDK's request loop raises it: aiohttp's errors mapped as the SDK's transport
  maps them, then a timeout as `APITimeoutError` and any other failure (a body that does not decode, too)
  as `APIConnectionError`.

Only a client the SDK would send the same request for on every call takes this path (`reusable` and `post`,
asked on every call): an open `AsyncOpenAI` or `AsyncAzureOpenAI` itself, SDK retries off (`max_retries=0`, as
the service configures every model), no idempotency header, credentials that are a static key (no key
provider, Azure AD token provider, workload identity or provider runtime, no custom auth), and an httpx2
client with no auth, no response hooks and no request hooks but Azure's (which depends on the request alone
and is run on the built request), whose transport for the URL is the SDK's aiohttp transport without a
proxy; request options are `create`'s only, and no raw response asked for. Any other call posts through the
SDK (a closed client too, even one closed while its request was being built: the SDK refuses it).

Left different, none of it read by the service: httpx2's INFO line per request (the service silences it),
a redirected response's `history` (the first response is not in it), and which request the SDK's
`max_redirects` counts from (one more redirect allowed).

The tests (`tests/graphs/llm/test_openai_chat.py`, `tests/graphs/llm/test_reused_request.py`) send every
request both ways and compare what the server received (method, path, query, headers, body) and what came
back, replies and errors alike.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, NamedTuple
from weakref import WeakKeyDictionary

import httpx2
import openai
from aiohttp import ClientSession, ClientTimeout
from aiohttp.typedefs import RawHeaders
from openai._base_client import _merge_mappings, get_platform
from openai._constants import RAW_RESPONSE_HEADER
from openai._httpx2 import request_exceptions, timeout_exceptions
from openai._models import FinalRequestOptions
from openai._types import RequestOptions
from openai._utils import asyncify
from openai._utils._json import openapi_dumps
from openai._vendor.httpx_aiohttp.transport import AiohttpTransport, map_aiohttp_exceptions
from openai.lib.azure import _async_strip_azure_api_key_on_redirect

if TYPE_CHECKING:
    from multidict import CIMultiDictProxy

MAX_REQUESTS_PER_CLIENT = 32
"""Built requests kept per client (one per model name and request options; the service uses one)."""
_MISSING = object()
_STATIC_CREDENTIALS = (
    "_api_key_provider",
    "_provider_runtime",
    "_workload_identity_auth",
)
"""Client attributes that must be None for the credentials to be the same on every call (OpenAI and Azure)."""
_AZURE_STATIC_CREDENTIALS = ("_azure_ad_token_provider",)
"""Azure's as well: a token provider is asked on every call."""
_REQUEST_ALONE_HOOKS = (_async_strip_azure_api_key_on_redirect,)
"""Request hooks the SDK installs itself whose effect depends on the request alone (Azure's drops the key from a
request redirected to another origin): run once on the built request, as the SDK's client runs them on each."""
REUSABLE_OPTIONS = frozenset({"headers", "params", "extra_json", "timeout", "security"})
"""The request options a reused request honours (`create`'s); any other (`max_retries`, `follow_redirects`...)
is the SDK's to apply."""
_NOT_STATE = frozenset({"_client", "_platform", "_default_stream_cls"})
"""Client attributes requests are not built from (the platform, read once, never changes)."""


class Reply(NamedTuple):
    """What came back, read whole."""

    status: int
    headers: CIMultiDictProxy[str]
    raw_headers: RawHeaders
    reason: str | None
    body: bytes

    @property
    def plain_json(self) -> bool:
        """A 2xx JSON reply that is not encoded and sets no cookie: the SDK's `post` returns its parsed JSON."""
        headers = self.headers
        return (
            200 <= self.status < 300
            and "content-encoding" not in headers
            and "set-cookie" not in headers
            and headers.get("content-type", "*").split(";")[0].endswith("json")
        )


@dataclass(frozen=True, slots=True)
class ReusedRequest:
    """The SDK's request for one client, model and set of request options, sent again with each body.

    It holds no reference to its client (`_built` is keyed by the client, weakly): the client is passed in.
    """

    transport: AiohttpTransport
    options: FinalRequestOptions
    """The SDK's prepared options the request was built from (its response processing reads them)."""
    url: httpx2.URL
    headers: tuple[tuple[str, str], ...]
    """Its headers but the body's length, without the cookies of the httpx2 client's jar (added on each call)."""
    timeout: dict[str, float | None]
    """The request's timeout extension."""
    aiohttp_timeout: ClientTimeout
    """That timeout as the SDK's transport gives it to aiohttp."""
    sni_hostname: str | None
    extra_json: Mapping[str, object] | None
    text_url: str
    """`url` as the SDK's transport gives it to aiohttp."""

    async def post(
        self, client: openai.AsyncOpenAI, body: Mapping[str, object], cast_to: type[openai.BaseModel]
    ) -> object:
        """What `client.post` of `body` with these options returns for `cast_to` (a `ReplyJson`), or raises."""
        data = openapi_dumps(_merge_mappings(body, self.extra_json) if self.extra_json is not None else body)
        started = time.perf_counter()
        http = client._client
        headers = self._with_cookies(http.cookies) if http.cookies else self.headers
        reply = await self._exchange(data, headers)
        if reply.plain_json:
            try:
                return json.loads(reply.body)
            except ValueError:
                pass  # the SDK raises its own error for it, below
        response = await self._as_sdk_response(client, reply, self._sent(data, headers), started)
        if not response.is_success:
            raise client._make_status_error_from_response(response) from None
        return await client._process_response(
            cast_to=cast_to, options=self.options, response=response, stream=False, stream_cls=None
        )

    def _with_cookies(self, jar: httpx2.Cookies) -> tuple[tuple[str, str], ...]:
        """The headers with the jar's `Cookie` header for this URL, as httpx2's `build_request` adds it (its code).

        The jar decides (domain, path, `Secure`, expiry) and a `Cookie` header of the caller's wins over it.
        """
        request = httpx2.Request("POST", self.url, headers=self.headers)
        jar.set_cookie_header(request)
        return tuple(item for item in request.headers.multi_items() if item[0] != "content-length")

    async def _as_sdk_response(
        self, client: openai.AsyncOpenAI, reply: Reply, request: httpx2.Request, started: float
    ) -> httpx2.Response:
        """The reply as the SDK's httpx2 client hands it over: read and decoded, its cookies kept, redirects followed.

        What httpx2's `send` does after its transport answers, in its order and with its own code; a failure
        (a body that does not decode, a redirect that fails) raised as the SDK's request loop raises it.
        """
        http = client._client
        extensions: dict[str, Any] = {"http_version": b"HTTP/1.1"}
        if reply.reason:
            extensions["reason_phrase"] = reply.reason.encode()
        response = httpx2.Response(
            reply.status,
            headers=reply.raw_headers,
            stream=httpx2.ByteStream(reply.body),
            request=request,
            extensions=extensions,
        )
        try:
            http.cookies.extract_cookies(response)
            response.default_encoding = http._default_encoding
            await response.aread()
            response.elapsed = timedelta(seconds=time.perf_counter() - started)
            if response.has_redirect_location and http.follow_redirects:
                response = await http.send(http._build_redirect_request(request, response), follow_redirects=True)
        except timeout_exceptions() as error:
            raise openai.APITimeoutError(request=request) from error
        except request_exceptions() as error:
            raise openai.APIConnectionError(request=request) from error
        return response

    async def _exchange(self, data: bytes, headers: tuple[tuple[str, str], ...]) -> Reply:
        """Send the request with this body and read the reply; a failure raised as the SDK raises it."""
        try:
            with map_aiohttp_exceptions():
                async with self._session().request(
                    "POST",
                    self.text_url,
                    headers=(*headers, ("content-length", str(len(data)))),
                    data=data,
                    allow_redirects=False,
                    auto_decompress=False,
                    compress=False,
                    timeout=self.aiohttp_timeout,
                    server_hostname=self.sni_hostname,
                ) as reply:
                    return Reply(reply.status, reply.headers, reply.raw_headers, reply.reason, await reply.read())
        except timeout_exceptions() as error:
            error.request = request = self._sent(data, headers)  # as httpx2's `request_context` sets it
            raise openai.APITimeoutError(request=request) from error
        except request_exceptions() as error:
            request = self._sent(data, headers)
            if isinstance(error, httpx2.RequestError):
                error.request = request
            raise openai.APIConnectionError(request=request) from error

    def _session(self) -> ClientSession:
        """The SDK transport's aiohttp session, created as the transport creates it on its first request."""
        if not isinstance(self.transport.client, ClientSession):
            self.transport.client = self.transport.get_client()
        return self.transport.client

    def _sent(self, data: bytes, headers: tuple[tuple[str, str], ...]) -> httpx2.Request:
        """The request as an httpx2 model, for the SDK's errors and response processing (never on the fast path)."""
        return httpx2.Request("POST", self.url, headers=headers, content=data, extensions={"timeout": self.timeout})


async def post(
    client: openai.AsyncOpenAI,
    path: str,
    body: Mapping[str, object],
    options: RequestOptions,
    cast_to: type[openai.BaseModel],
) -> object:
    """What `client.post(path, body=body, options=options, cast_to=cast_to)` returns or raises.

    Sent as a `ReusedRequest` where the SDK would build the same request on every call (`reusable`).
    """
    reused = await reused_request(client, path, body.get("model"), options)
    if reused is None or client.is_closed():  # closed (perhaps while the request was built): the SDK refuses
        return await client.post(path, body=body, options=options, cast_to=cast_to)
    return await reused.post(client, body, cast_to)


_built: WeakKeyDictionary[openai.AsyncOpenAI, dict[str, ReusedRequest | None]] = WeakKeyDictionary()


async def reused_request(
    client: openai.AsyncOpenAI, path: str, model: object, options: RequestOptions
) -> ReusedRequest | None:
    """The request to post a body naming `model` to `path` with `options` again, or None: post through the SDK.

    `options` are the request options `post` would be given (`make_request_options`). The SDK builds the
    request on the first call for each path, model and options, and it is kept.
    """
    if not (reusable(client) and options.keys() <= REUSABLE_OPTIONS):
        return None
    built = _built.setdefault(client, {})
    key = repr((path, model, sorted(options.items()), _state(client)))
    if key not in built:
        if len(built) >= MAX_REQUESTS_PER_CLIENT:
            built.clear()
        built[key] = await _build(client, path, model, options)
    return built[key]


def _state(client: openai.AsyncOpenAI) -> list[tuple[str, object]]:
    """What of the client a request is built from and a caller may reassign (`api_key`, `base_url`, `timeout`...).

    Part of the key of the requests built: a client changed after its first call gets a request built anew.
    """
    http = client._client
    return [(name, value) for name, value in vars(client).items() if name not in _NOT_STATE] + [
        ("http headers", http.headers.raw),  # raw: the repr of `Headers` hides credentials
        ("http params", str(http.params)),
    ]


def reusable(client: openai.AsyncOpenAI) -> bool:
    """Whether the SDK sends the same request on every call of `client` but for the body (module docstring).

    Asked on every call: a client can have its retries switched on after a call. (A closed client is `post`'s
    to send to the SDK, which refuses it: it can close while its request is being built.)
    """
    azure = type(client) is openai.AsyncAzureOpenAI
    credentials = _STATIC_CREDENTIALS + (_AZURE_STATIC_CREDENTIALS if azure else ())
    http = client._client
    return (
        (azure or type(client) is openai.AsyncOpenAI)
        and client.max_retries == 0
        and client._idempotency_header is None
        and client.custom_auth is None
        and all(getattr(client, name, _MISSING) is None for name in credentials)
        and isinstance(http, httpx2.AsyncClient)
        and http.auth is None
        and all(hook in _REQUEST_ALONE_HOOKS for hook in http.event_hooks["request"])
        and not http.event_hooks["response"]
    )


async def _build(client: openai.AsyncOpenAI, path: str, model: object, options: RequestOptions) -> ReusedRequest | None:
    """The SDK's own request for such a call, built as `post` and `request` build it (for a body naming `model`)."""
    if client._platform is None:
        client._platform = await asyncify(get_platform)()  # as the SDK's `request` does, off the loop
    http = client._client
    json_data = {"model": model} if model is not None else {}
    template = FinalRequestOptions.construct(method="post", url=path, json_data=json_data, **options)
    prepared = await client._prepare_options(template)
    # httpx2 adds the jar's cookies as it builds the request: built with the jar empty (no await in between),
    # the request holds only a `Cookie` header of the caller's, and each call adds the jar's as it then is.
    jar, http._cookies = http._cookies, httpx2.Cookies()
    try:
        request = client._build_request(prepared)
    finally:
        http._cookies = jar
    await client._prepare_request(request)
    for hook in http.event_hooks["request"]:
        await hook(request)
    transport = http._transport_for_url(request.url)
    raw_response = request.headers.get(RAW_RESPONSE_HEADER) == "true"  # the SDK answers those with its own type
    if type(transport) is not AiohttpTransport or transport.proxy is not None or raw_response:
        return None
    timeout: dict[str, float | None] = dict(request.extensions.get("timeout", {}))
    headers = tuple((name, value) for name, value in request.headers.multi_items() if name != "content-length")
    return ReusedRequest(
        transport=transport,
        options=prepared,
        url=request.url,
        text_url=str(request.url),
        headers=headers,
        timeout=timeout,
        aiohttp_timeout=ClientTimeout(
            sock_connect=timeout.get("connect"), sock_read=timeout.get("read"), connect=timeout.get("pool")
        ),
        sni_hostname=request.extensions.get("sni_hostname"),
        extra_json=prepared.extra_json,
    )
