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

- the config's REST form comes from the SDK's converter (`_GenerateContentConfig_to_mldev`, on a deep copy, as
  the SDK converts one), run once per distinct config (keyed by its values as JSON, NaN and infinities spelled
  out, less the system instruction and the HTTP options, which do not reach that part) and kept, a bounded number
  of them per client; the contents and the system instruction are converted on each call by the SDK's
  `_Content_to_mldev`, then both go through the SDK's `convert_to_dict` and `encode_unserializable_types`;
- the request (URL, headers, timeout, `extra_body`) is built by the SDK's `_build_request` and the body serialised
  as the SDK serialises it (`json.dumps`);
- it is posted through an aiohttp session of this client's own, set up as the SDK sets up its own (no connection
  limit, the SDK's read buffer, TLS context and request options; sessions of ended event loops let go of quietly)
  except that it does not trust the environment: it is used only when the environment names no proxy and no
  netrc file (`environment_adds_nothing`, read when the model is built), where trusting it adds nothing;
- the reply goes through the SDK's `APIError.raise_for_async_response` (the same `ClientError` / `ServerError`, which
  langchain-google-genai then maps as before), and is parsed by the SDK's `_GenerateContentResponse_from_mldev` and
  `GenerateContentResponse._from_response`, the fields its models do not know dropped beforehand by
  `gemini_reply` as the SDK drops them, at half the cost; connection failures and timeouts are aiohttp's, as
  through the SDK with a single attempt;
- automatic continuation and the automatic-function-calling history are handled as `generate_content` handles
  them for a call without tools, with the SDK's own helpers.

Which calls take it (`takes`): the Gemini Developer API (`LLM_PROVIDER=gemini`, `cloudrun.yaml`'s provider) on the
SDK's aiohttp transport, with no tools in the config, a single attempt per call (the service sets `max_retries=1`:
its own retry loop retries), no caller's aiohttp session, no mTLS endpoint, no raw HTTP response asked for, and no
proxy variable or netrc file in the environment. Everything else, Vertex AI included (its per-call OAuth token
goes through the SDK's authorised session), goes through `AsyncModels.generate_content` as before, and so does
every call after the model is closed. The tests send each call both ways to the fake Gemini server and
compare what it received (path, query, headers, body) and what came back (the response, or the error).

Differences left, none read by the service: google-genai's INFO line "AFC is enabled with max remote calls" is not
written (the service silences `google_genai` below WARNING anyway); a proxy variable or netrc file that appears
after a model is built does not send that model's calls back through the SDK, and aiohttp's warning about a netrc
file it cannot parse is logged once, when the model is built, instead of on every call; the first call to a host
is not slowed by aiohttp's look-ups on a busy thread pool (through the SDK, a short timeout can run out there).
A config holding a value JSON does not hold as such (bytes, a date, a schema given as a class) is converted on
every call, as the SDK converts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import threading
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any
from urllib.request import getproxies

import aiohttp
from aiohttp.helpers import netrc_from_env
from google.genai import _common, _extra_utils, errors, types
from google.genai import _transformers as t
from google.genai._api_client import READ_BUFFER_SIZE, BaseApiClient, HttpResponse
from google.genai.models import (
    AsyncModels,
    _Content_to_mldev,
    _GenerateContentConfig_to_mldev,
    _GenerateContentResponse_from_mldev,
)

from graphs.llm.gemini_reply import reply_from

CONFIGS_KEPT = 64
"""Converted configs a client keeps: one per kind of call (schema, temperature, cap), so a handful in practice."""

_CONFIG_LEFT_OUT = frozenset({"http_options", "system_instruction"})
"""Config fields that do not reach the converted part kept: the HTTP options shape the request, not its body, and
the system instruction (which may change with every call) is converted per call."""

_PROXIED_SCHEMES = ("http", "https", "ws", "wss")
"""The schemes whose proxy variables aiohttp reads when its session trusts the environment."""


def environment_adds_nothing() -> bool:
    """Whether aiohttp's `trust_env` would add nothing to any request: no proxy it reads, no netrc file it can read.

    The proxy variables it reads are http, https, ws and wss (upper or lower case). Then a session that does not
    trust the environment sends what google-genai's (which does) sends, redirects included, without aiohttp's two
    lookups on worker threads before each request. An environment this cannot read (a netrc file that does not
    decode) counts as adding something: the SDK's path meets it as it would.
    """
    try:
        proxies = getproxies()
        return netrc_from_env() is None and not any(scheme in proxies for scheme in _PROXIED_SCHEMES)
    except Exception:
        return False


class _QuietConnector(aiohttp.TCPConnector):
    """A connector that, like google-genai's, closes its sockets when dropped, without reporting it."""

    def __del__(self, _warnings: Any = warnings) -> None:  # aiohttp's own signature
        """Close the pooled connections of a connector dropped unclosed (its event loop ended, say)."""
        if not self._closed and self._conns:
            self._close()


def _drop(session: aiohttp.ClientSession) -> None:
    """Let go of a session that cannot be closed (its loop has ended, or the model is dropped) without a report.

    Detached, it counts as closed, and its connector closes its sockets when dropped (`_QuietConnector`).
    """
    session.detach()


@dataclass
class GeminiTransport:
    """One chat model's aiohttp sessions (one per event loop), whether it may use them, and the configs converted.

    Whether the environment adds anything to a request (`environment_adds_nothing`) is read once, when the model
    is built: proxy variables or a netrc file set later are not seen by that model.
    """

    _sessions: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession] = field(default_factory=dict)
    _configs: dict[str, tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    """Held to change `_sessions` or `_configs` (a model may be shared by threads, each with its own loop)."""
    usable: bool = field(default_factory=environment_adds_nothing)
    """False when the environment names a proxy or a netrc file: every call then goes through the SDK."""

    def session(self) -> aiohttp.ClientSession:
        """This event loop's session, opened on first use, set up as google-genai sets up its own.

        Sessions of loops that have ended are dropped (their sockets close with their connector), as google-genai
        drops its own: a caller that runs each call on a fresh loop does not pile them up.
        """
        loop = asyncio.get_running_loop()
        session = self._sessions.get(loop)
        if session is None or session.closed:
            with self._lock:
                for ended in [other for other in self._sessions if other.is_closed()]:
                    _drop(self._sessions.pop(ended))
                session = self._sessions[loop] = aiohttp.ClientSession(
                    connector=_QuietConnector(limit=0), read_bufsize=READ_BUFFER_SIZE, trust_env=False
                )
        return session

    def converted_config(
        self, api_client: BaseApiClient, config: types.GenerateContentConfig
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The REST form of `config` less its system instruction: the request's fields it sets, its `generationConfig`.

        Both are shared between calls: never changed in place. A continuation hop's config (its token is new each
        time) and one holding what JSON cannot (a schema given as a class) are converted each time, not kept.
        """
        if config.continuation_token is not None:
            return _convert_config(api_client, config)
        try:
            # The config's values as JSON holds them, NaN and infinities spelled out; any other value (bytes, a
            # date, a set, a schema given as a class) is refused, and the config converted each time instead.
            key = json.dumps(
                config.model_dump(exclude=set(_CONFIG_LEFT_OUT), warnings=False), allow_nan=True, default=_refuse
            )
        except (TypeError, ValueError):
            return _convert_config(api_client, config)
        converted = self._configs.get(key)
        if converted is None:
            converted = _convert_config(api_client, config)
            with self._lock:
                if len(self._configs) >= CONFIGS_KEPT:
                    self._configs.pop(next(iter(self._configs)), None)
                self._configs[key] = converted
        return converted

    def __del__(self) -> None:
        """A model dropped unclosed lets go of its sessions without a report, as google-genai's client does."""
        for session in getattr(self, "_sessions", {}).values():
            _drop(session)

    async def aclose(self) -> None:
        """Close every session, as google-genai closes its own: this loop's now, another running loop's on it.

        An ended loop's session is let go of. Calls after this go through the SDK, as the library's own calls after
        `aclose` do.
        """
        self.usable = False
        current = asyncio.get_running_loop()
        with self._lock:
            sessions, self._sessions = self._sessions, {}
        for loop, session in sessions.items():
            if loop is current:
                await session.close()
            elif loop.is_running():
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    asyncio.run_coroutine_threadsafe(session.close(), loop)
            else:
                _drop(session)


def _refuse(value: object) -> object:
    """`json.dumps`'s `default` for a cache key: a value JSON does not hold as such has no key."""
    raise TypeError(f"{type(value).__name__} is not JSON")


def _convert_config(
    api_client: BaseApiClient, config: types.GenerateContentConfig
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The SDK's conversion of `config`, system instruction left out: (request fields it sets, generationConfig).

    The converter rewrites a schema given as a dict in place; the SDK converts a deep copy of the caller's config,
    and so does this.
    """
    request_fields: dict[str, Any] = {}
    generation = _GenerateContentConfig_to_mldev(
        api_client, config.model_copy(update={"system_instruction": None}, deep=True), request_fields, None
    )
    return _plain(request_fields), _plain(generation)


def _plain(value: dict[str, Any]) -> dict[str, Any]:
    """`value` as the SDK hands a request to its HTTP layer: models dumped, bytes and dates encoded."""
    converted: dict[str, Any] = _common.encode_unserializable_types(_common.convert_to_dict(value))
    return converted


def takes(transport: GeminiTransport, api_client: BaseApiClient, contents: object, config: object) -> bool:
    """Whether a call of `contents` with `config` on `api_client` is one this module sends (the module's docstring)."""
    if not transport.usable or contents is None or not isinstance(config, types.GenerateContentConfig):
        return False
    if config.tools or getattr(config, "should_return_http_response", None):
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
    if not takes(transport, api_client, contents, config):
        return await models.generate_content(model=model, contents=contents, config=config)
    assert isinstance(config, types.GenerateContentConfig)  # `takes` refuses any other
    response = await _with_continuation(config, partial(_generate_once, transport, api_client, model, contents))
    # What `generate_content`'s automatic-function-calling loop leaves on a reply to a call without tools.
    if not _extra_utils.should_disable_afc(config) and _extra_utils.should_append_afc_history(config):
        response.automatic_function_calling_history = []
    return response


async def _with_continuation(
    config: types.GenerateContentConfig,
    send: Callable[[types.GenerateContentConfig], Awaitable[types.GenerateContentResponse]],
) -> types.GenerateContentResponse:
    """The SDK's `_generate_content_with_continuation`, each hop's config sent by `send` (`_generate_once`)."""
    enabled = _extra_utils.should_enable_automatic_continuation(config, default_enabled=True)
    token: bytes | None = None
    responses: list[types.GenerateContentResponse] = []
    while not responses or (enabled and token):
        hop_config = _extra_utils.prepare_continuation_config(config, token)
        assert hop_config is not None  # a copy of `config`, never None for a config
        responses.append(await send(hop_config))
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
        # `_build_request` merges `extra_body` into the body in place: into a copy, not the parts kept.
        body = copy.deepcopy(body)
    path = f"{t.t_model(api_client, model)}:generateContent"
    request = api_client._build_request("post", path, body, http_options)
    data = json.dumps(request.data).encode("utf-8") if request.data else None
    response = await transport.session().request(
        request.method,
        request.url,
        headers=request.headers,
        data=data,
        timeout=aiohttp.ClientTimeout(total=request.timeout),
        **api_client._async_client_session_request_args,
    )
    try:
        await errors.APIError.raise_for_async_response(response)
        text = await response.text()
    finally:
        response.release()
    reply = reply_from(_GenerateContentResponse_from_mldev(json.loads(text) if text else {}, None, None), config)
    # The headers as the SDK's `HttpResponse` flattens them (repeated ones joined).
    reply.sdk_http_response = types.HttpResponse(headers=HttpResponse(response.headers).headers)
    api_client._verify_response(reply)
    return reply
