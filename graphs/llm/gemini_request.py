"""Gemini's `generateContent` as google-genai sends it, without the SDK rebuilding the whole request on every call.

`AsyncModels.generate_content` spent ~2.1 ms of CPU on each of the service's calls against a model answering at
once, where the exchange itself costs ~0.2 ms (issue 14 item 3; `python -m bench.model_step_cpu --provider gemini`,
and a call timed piece by piece):

- it deep-copies the call's config, JSON schema included, twice (once more in its automatic-function-calling
  loop): ~0.13 ms;
- it validates the call's parameters into pydantic models again: ~0.22 ms;
- it converts the config and the contents to the REST form field by field, each field looked up with `in` on
  pydantic models: ~0.4 ms, of which ~0.3 ms is the config, the same on every call of a given kind;
- its aiohttp session trusts the environment (`trust_env=True`), so aiohttp looks up `~/.netrc` and the
  environment's proxy on worker threads before every request (`run_in_executor`, `asyncio.to_thread`): two
  thread hops a call, ~0.47 ms of CPU, and two more turns of a busy event loop before the request leaves.

`generate_content` here sends the same request and returns the same `GenerateContentResponse`, with the SDK's own
code for everything that shapes them:

- the config's REST form comes from the SDK's converter (`_GenerateContentConfig_to_mldev`), run once per distinct
  config (keyed by its JSON, less the system instruction and the HTTP options, which do not reach that part) and
  kept, a bounded number of them per client; the contents and the system instruction are converted on each call
  by the SDK's `_Content_to_mldev`, then both go through the SDK's `convert_to_dict` and
  `encode_unserializable_types`;
- the request (URL, headers, timeout, `extra_body`) is built by the SDK's `_build_request` and the body serialised
  as the SDK serialises it (`json.dumps`);
- it is posted through an aiohttp session of this client's own, set up as the SDK sets up its own (no connection
  limit, the SDK's read buffer and TLS context). The proxy and netrc credentials that the SDK's session would look
  up on every request are looked up once per scheme and host, on a worker thread, as aiohttp looks them up;
- the reply goes through the SDK's `APIError.raise_for_async_response` (the same `ClientError` / `ServerError`, which
  langchain-google-genai then maps as before), and is parsed by the SDK's `_GenerateContentResponse_from_mldev` and
  `GenerateContentResponse._from_response`; connection failures and timeouts are aiohttp's, as through the SDK
  with a single attempt;
- automatic continuation and the automatic-function-calling history are handled as `generate_content` handles
  them for a call without tools, with the SDK's own helpers.

Which calls take it (`takes`): the Gemini Developer API (`LLM_PROVIDER=gemini`, `cloudrun.yaml`'s provider) on the
SDK's aiohttp transport, with no tools in the config, a single attempt per call (the service sets `max_retries=1`:
its own retry loop retries), no caller's aiohttp session, no mTLS endpoint and no raw HTTP response asked for.
Everything else, Vertex AI included (its per-call OAuth token goes through the SDK's authorised session), goes
through `AsyncModels.generate_content` as before. The tests send each call both ways to the fake Gemini server and
compare what it received (path, query, headers, body) and what came back (the response, or the error).

Differences left, none read by the service: google-genai's INFO line "AFC is enabled with max remote calls" is not
written (the service silences `google_genai` below WARNING anyway); a change to the environment's proxy variables
or to `~/.netrc` after a client's first call is not seen by that client; a redirect would go through the proxy
found for the first URL.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import hdrs
from aiohttp.helpers import BasicAuth, basicauth_from_netrc, get_env_proxy_for_url, netrc_from_env
from google.genai import _common, _extra_utils, errors, types
from google.genai import _transformers as t
from google.genai._api_client import READ_BUFFER_SIZE, BaseApiClient, HttpResponse
from google.genai.models import (
    AsyncModels,
    _Content_to_mldev,
    _GenerateContentConfig_to_mldev,
    _GenerateContentResponse_from_mldev,
)
from yarl import URL

CONFIGS_KEPT = 64
"""Converted configs a client keeps: one per kind of call (schema, temperature, cap), so a handful in practice."""

_CONFIG_LEFT_OUT = frozenset({"http_options", "system_instruction"})
"""Config fields that do not reach the converted part kept: the HTTP options shape the request, not its body, and
the system instruction (which may change with every call) is converted per call."""


@dataclass(frozen=True)
class _Route:
    """What aiohttp's `trust_env` adds to a request to one scheme and host: a proxy, and the netrc login as headers."""

    proxy: URL | None
    proxy_headers: dict[str, str] | None
    authorization: str | None


def _route_from_environment(url: URL) -> _Route:
    """The proxy and netrc credentials aiohttp looks up for `url` when its session trusts the environment.

    The credentials come as the headers aiohttp makes of them (`Proxy-Authorization`, `Authorization`). Blocking
    (it reads `~/.netrc`): run on a worker thread, as aiohttp runs it.
    """
    auth: BasicAuth | None = None
    if url.host is not None:
        try:
            auth = basicauth_from_netrc(netrc_from_env(), url.host)
        except LookupError:
            auth = None
    try:
        proxy, proxy_auth = get_env_proxy_for_url(url)
    except LookupError:
        proxy, proxy_auth = None, None
    proxy_headers = {str(hdrs.PROXY_AUTHORIZATION): proxy_auth.encode()} if proxy_auth is not None else None
    return _Route(proxy, proxy_headers, auth.encode() if auth is not None else None)


def _with_login(headers: dict[str, str], route: _Route) -> dict[str, str]:
    """`headers` with the netrc login aiohttp would add, refused beside the caller's own as aiohttp refuses it."""
    if route.authorization is None:
        return headers
    if any(name.lower() == "authorization" for name in headers):
        raise ValueError("Cannot combine AUTHORIZATION header with AUTH argument or credentials encoded in URL")
    return {**headers, str(hdrs.AUTHORIZATION): route.authorization}


@dataclass
class GeminiTransport:
    """One chat model's aiohttp sessions (one per event loop), the routes they found, and the configs converted."""

    _sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aiohttp.ClientSession] = field(
        default_factory=weakref.WeakKeyDictionary
    )
    _routes: dict[tuple[str, str | None], _Route] = field(default_factory=dict)
    _configs: dict[str, tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=dict)
    closed: bool = False

    def session(self) -> aiohttp.ClientSession:
        """This event loop's session, opened on first use, set up as google-genai sets up its own."""
        loop = asyncio.get_running_loop()
        session = self._sessions.get(loop)
        if session is None or session.closed:
            session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0), read_bufsize=READ_BUFFER_SIZE, trust_env=False
            )
            self._sessions[loop] = session
        return session

    async def route(self, url: URL) -> _Route:
        """The proxy and netrc login for `url`'s scheme and host, looked up once (on a worker thread)."""
        key = (url.scheme, url.host)
        route = self._routes.get(key)
        if route is None:
            route = self._routes[key] = await asyncio.to_thread(_route_from_environment, url)
        return route

    def converted_config(
        self, api_client: BaseApiClient, config: types.GenerateContentConfig
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The REST form of `config` less its system instruction: the request's fields it sets, its `generationConfig`.

        Both are shared between calls: never changed in place.
        """
        try:
            key = config.model_dump_json(exclude=set(_CONFIG_LEFT_OUT))
        except ValueError:  # a value JSON cannot hold (a schema given as a class): converted each time
            return _convert_config(api_client, config)
        converted = self._configs.get(key)
        if converted is None:
            if len(self._configs) >= CONFIGS_KEPT:
                del self._configs[next(iter(self._configs))]
            converted = self._configs[key] = _convert_config(api_client, config)
        return converted

    async def aclose(self) -> None:
        """Close this event loop's session (the others' loops close theirs, or have ended)."""
        self.closed = True
        session = self._sessions.pop(asyncio.get_running_loop(), None)
        if session is not None:
            await session.close()


def _convert_config(
    api_client: BaseApiClient, config: types.GenerateContentConfig
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The SDK's conversion of `config`, system instruction left out: (request fields it sets, generationConfig)."""
    request_fields: dict[str, Any] = {}
    generation = _GenerateContentConfig_to_mldev(
        api_client, config.model_copy(update={"system_instruction": None}), request_fields, None
    )
    return _plain(request_fields), _plain(generation)


def _plain(value: dict[str, Any]) -> dict[str, Any]:
    """`value` as the SDK hands a request to its HTTP layer: models dumped, bytes and dates encoded."""
    converted: dict[str, Any] = _common.encode_unserializable_types(_common.convert_to_dict(value))
    return converted


def _options(route: _Route, caller: dict[str, Any]) -> dict[str, Any]:
    """The request options beyond the request itself: the route's proxy, then what the caller gave the client."""
    return {"proxy": route.proxy, "proxy_headers": route.proxy_headers} | caller


def takes(api_client: BaseApiClient, config: types.GenerateContentConfig | None) -> bool:
    """Whether a call with `config` on `api_client` is one this module sends (see the module's docstring)."""
    if config is None or config.tools or getattr(config, "should_return_http_response", None):
        return False
    retry = config.http_options.retry_options if config.http_options is not None else None
    if retry is None or retry.attempts not in (0, 1):  # anything else retries inside the SDK (tenacity)
        return False
    return (
        not api_client.vertexai
        and api_client._use_aiohttp()
        and not api_client._http_options.aiohttp_client
        and not api_client._aiohttp_use_mtls_endpoint
    )


async def generate_content(
    transport: GeminiTransport,
    models: AsyncModels,
    *,
    model: str,
    contents: Any,
    config: types.GenerateContentConfig | None = None,
) -> types.GenerateContentResponse:
    """`models.generate_content(model=..., contents=..., config=...)`, sent by this module when `takes` says so."""
    api_client = models._api_client
    if transport.closed or not takes(api_client, config):
        return await models.generate_content(model=model, contents=contents, config=config)
    assert config is not None  # `takes` refuses a call without one
    response = await _with_continuation(transport, api_client, model, contents, config)
    # What `generate_content`'s automatic-function-calling loop leaves on a reply to a call without tools.
    if not _extra_utils.should_disable_afc(config) and _extra_utils.should_append_afc_history(config):
        response.automatic_function_calling_history = []
    return response


async def _with_continuation(
    transport: GeminiTransport,
    api_client: BaseApiClient,
    model: str,
    contents: Any,
    config: types.GenerateContentConfig,
) -> types.GenerateContentResponse:
    """The SDK's `_generate_content_with_continuation`, each hop sent by `_generate_once`."""
    enabled = _extra_utils.should_enable_automatic_continuation(config, default_enabled=True)
    token: bytes | None = None
    responses: list[types.GenerateContentResponse] = []
    while not responses or (enabled and token):
        hop_config = _extra_utils.prepare_continuation_config(config, token)
        assert hop_config is not None  # a copy of `config`, never None for a config
        responses.append(await _generate_once(transport, api_client, model, contents, hop_config))
        token = _extra_utils.should_continue_generation(responses[-1])
    return _extra_utils.merge_continuation_responses(responses, config=config)


def request_body(
    transport: GeminiTransport, api_client: BaseApiClient, contents: Any, config: types.GenerateContentConfig
) -> dict[str, Any]:
    """The body the SDK's `_GenerateContentParameters_to_mldev` makes of a call, before `_build_request`.

    The SDK's converters read each field with `in` on pydantic models, which walks the model; on the contents'
    plain dumps (the same fields, `None` ones left out, which the converters skip) they find them at once.
    """
    request_fields, generation = transport.converted_config(api_client, config)
    body: dict[str, Any] = {"contents": [_converted_content(item) for item in t.t_contents(contents)]}
    if config.system_instruction is not None:
        body["systemInstruction"] = _converted_content(t.t_content(config.system_instruction))
    body.update(request_fields)
    body["generationConfig"] = generation
    return body


def _converted_content(content: object) -> dict[str, Any]:
    plain = content.model_dump(exclude_none=True) if isinstance(content, types.Content) else content
    return _plain(_Content_to_mldev(plain, None, None))


async def _generate_once(
    transport: GeminiTransport,
    api_client: BaseApiClient,
    model: str,
    contents: Any,
    config: types.GenerateContentConfig,
) -> types.GenerateContentResponse:
    """One `generateContent` exchange: what the SDK's `AsyncModels._generate_content` does, at less cost."""
    http_options = config.http_options
    body = request_body(transport, api_client, contents, config)
    if (http_options is not None and http_options.extra_body) or api_client._http_options.extra_body:
        body = json.loads(
            json.dumps(body)
        )  # `_build_request` merges `extra_body` into it in place: not the shared parts
    path = f"{t.t_model(api_client, model)}:generateContent"
    request = api_client._build_request("post", path, body, http_options)
    data = json.dumps(request.data).encode("utf-8") if request.data else None
    url = URL(request.url)
    route = await transport.route(url)
    response = await transport.session().request(
        request.method,
        url,
        headers=_with_login(request.headers, route),
        data=data,
        timeout=aiohttp.ClientTimeout(total=request.timeout),
        # The caller's own request options (`client_args`: a proxy, say) win, as they do over `trust_env`.
        **_options(route, api_client._async_client_session_request_args),
    )
    try:
        await errors.APIError.raise_for_async_response(response)
        raw = HttpResponse(response.headers, [await response.text()])
    finally:
        response.release()
    text = raw.response_stream[0]
    reply = types.GenerateContentResponse._from_response(
        response=_GenerateContentResponse_from_mldev(json.loads(text) if text else {}, None, None),
        kwargs={
            "config": {
                "response_schema": config.response_schema,
                "response_json_schema": config.response_json_schema,
                "include_all_fields": getattr(config, "include_all_fields", None),
            }
        },
    )
    reply.sdk_http_response = types.HttpResponse(headers=raw.headers)
    api_client._verify_response(reply)
    return reply
