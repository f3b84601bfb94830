"""langchain-openai's chat models, sending the request they built without the three costs that add nothing to it.

`ChatOpenAI._agenerate` hands its payload to the SDK's typed `chat.completions.create`, which builds a typed
reply, then converts the reply on a worker thread. For the service's requests all three are pure cost
(issue 14 item 3; an in-process profile of a model-backed think step, `python -m bench.model_step_cpu`):

- `create` runs the payload through the SDK's request transform, which walks every value against the
  typed-dict annotations of the chat-completions parameters (each message against the six message
  types of the union) to apply field aliases and formats. The chat-completions request types declare
  none (`tests/graphs/llm/test_openai_chat.py` checks the SDK's transform returns our payloads
  unchanged), so it returns what it was given, after ~150 µs per message and ~100 µs for the rest.
- the typed reply (`ChatCompletion`) is built field by field from the reply's JSON, and the conversion
  dumps it straight back to a dict: `as_dumped` gives that dict from the JSON itself (the fields the
  reply leaves out present, as the dump has them), ~10 µs instead of ~80 µs per call.
- the reply's conversion (`_create_chat_result`) runs through `run_in_executor`: a thread hop that costs
  more than the conversion and, on a worker whose event loop is busy, waits for the GIL.

These classes keep everything else of langchain-openai and the SDK: the payload (`_get_request_payload`),
the reply's conversion (`_create_chat_result`, Azure's content-filter override included), callbacks and
usage, and the SDK's client with its HTTP transport, URL building (Azure deployments), authentication,
timeouts and typed errors (mapped by langchain-openai's own handlers). The request is what the SDK's public
`post`, which `create` itself calls, sends with the same body and the same request options: for the
service's clients the SDK builds it once and it is sent again with each body (`graphs.llm.reused_request`),
for any other client `post` sends it. The reply's body is read as for a typed reply (`ReplyJson`) and
reaches `_create_chat_result` as the dict the typed reply dumps to; the first message's `refusal` (and a
`parsed` the server sent) reach the message's `additional_kwargs` as they do from a typed reply. The tests
compare both paths on replies with every optional field, none, required fields left out, fields the SDK
does not declare, a JSON body sent as text or with a byte-order mark, and bodies that are not a JSON object.

Streaming, structured-output parsing (`response_format` passed to langchain), tools, the Responses API,
response headers (`include_response_headers`, the LangSmith gateway), messages whose content is not plain
text and any payload key `create` does not take (it refuses those with a `TypeError`) take the library's own
path. Differences left, none retried either way: a 200 reply that is not JSON fails with the same
`JSONDecodeError` but without the HTTP response attached, so the retry loop names it by its type rather than
"HTTP 200"; a reply that is a JSON list is refused with the same `ValueError`, its preview showing dicts
where the typed path shows models; values of the wrong type stay as sent (`as_dumped`).

Measured (`python -m bench.model_step_cpu --library-client`: the real clients against the lean fake model
answering at once, in one rotation): ~0.4 ms less CPU per model-backed think step, more under load.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from functools import cache
from types import UnionType
from typing import Any, Union, get_args, get_origin

import openai
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from langchain_openai import AzureChatOpenAI, ChatOpenAI
from langchain_openai.chat_models.base import (
    BaseChatOpenAI,
    _handle_openai_api_error,
    _handle_openai_bad_request,
)
from openai._base_client import make_request_options
from openai._models import SecurityOptions
from openai.resources.chat.completions import AsyncCompletions
from openai.types.chat import ChatCompletion
from pydantic.fields import FieldInfo

from graphs.llm.reused_request import post

CHAT_COMPLETIONS_PATH = "/chat/completions"
"""What `chat.completions.create` posts to (Azure's client inserts the deployment)."""
CREATE_SECURITY: SecurityOptions = {"bearer_auth": True}
"""The auth `create` asks for: the API key as a bearer token (the default would also fall back to an admin key)."""
CREATE_PARAMETERS = frozenset(inspect.signature(AsyncCompletions.create).parameters) - {"self"}
"""What `create` accepts; a payload with any other key is refused by it, so it takes the library's path."""
REQUEST_OPTION_KEYS = ("extra_headers", "extra_query", "extra_body", "timeout")
"""`create` keyword arguments that are request options, not body fields."""
LIBRARY_PATH_KEYS = frozenset({"response_format", "tools", "functions", "stream_options"})
"""Payload fields whose handling langchain-openai or the SDK does more for than sending them: left to them."""


def sent_as_built(payload: dict[str, Any]) -> bool:
    """Whether `payload` goes out as built: `create` takes it, not streamed, nothing parsed, messages plain text."""
    if payload.get("stream") or LIBRARY_PATH_KEYS & payload.keys() or not payload.keys() <= CREATE_PARAMETERS:
        return False
    messages = payload.get("messages")
    return isinstance(messages, list) and all(
        isinstance(message, dict) and isinstance(message.get("content"), str | None) for message in messages
    )


class ReplyJson(openai.BaseModel):
    """The SDK's `post` target that hands back the reply's parsed JSON, read exactly as for a typed reply.

    The SDK reads the body as for `cast_to=ChatCompletion` (from its bytes; as JSON whatever the content
    type when it parses, else as text), then asks a target that builds itself (`ModelBuilderProtocol`)
    to do so from the data: this one returns the data as it is.
    """

    @classmethod
    def build(cls, *, response: object, data: object) -> Any:
        """The parsed JSON itself."""
        return data


def as_dumped(value: object, model: type[openai.BaseModel]) -> object:
    """A reply's JSON as the SDK's typed reply of `model` dumps it (`model_dump`), without building that reply.

    The SDK builds the typed reply field by field and langchain-openai dumps it straight back to a dict
    (about 80 µs of CPU per call; this takes about 10). What the round trip changes, this does: every field
    of the model the reply leaves out is present, with its default (`logprobs`, `refusal`,
    `system_fingerprint`: null) or, for a required one, null, in nested models too; fields the model does
    not declare are kept. Values are kept as sent, where the SDK's construction validates the union and
    optional fields it can (a token count sent as `"3"` stays a string here where the typed reply makes
    it 3; the service reads counts through `int()`, `graphs/llm/usage.py`), and a union of models (tool
    calls, which plain chat completions never ask for) is left as sent.
    """
    if not isinstance(value, dict):
        return value
    declared, nested = _fields(model)
    dumped = {
        name: None if field.is_required() else field.get_default(call_default_factory=True)
        for name, field in declared.items()
    } | value
    for name, (inner, many) in nested.items():
        item = dumped.get(name)
        if many and isinstance(item, list):
            dumped[name] = [as_dumped(element, inner) for element in item]
        elif not many and item is not None:
            dumped[name] = as_dumped(item, inner)
    return dumped


Nested = dict[str, tuple[type[openai.BaseModel], bool]]
"""Fields holding a model or a list of models: the model, and whether a list."""


@cache
def _fields(model: type[openai.BaseModel]) -> tuple[dict[str, FieldInfo], Nested]:
    """`model`'s fields, and those of them holding a model or a list of models."""
    nested: Nested = {}
    for name, field in model.model_fields.items():
        inner, many = _unwrapped(field.annotation)
        if isinstance(inner, type) and issubclass(inner, openai.BaseModel):
            nested[name] = (inner, many)
    return dict(model.model_fields), nested


def _unwrapped(annotation: Any) -> tuple[Any, bool]:
    """`X` from `X`, `Optional[X]`, `List[X]` or `Optional[List[X]]`, and whether it was a list."""
    arguments = [argument for argument in get_args(annotation) if argument is not type(None)]
    if get_origin(annotation) in (Union, UnionType) and len(arguments) == 1:
        return _unwrapped(arguments[0])
    if get_origin(annotation) is list and len(arguments) == 1:
        return arguments[0], True
    return annotation, False


Generate = Callable[..., Coroutine[Any, Any, ChatResult]]
"""A chat model's `_agenerate`, unbound: (model, messages, stop=, run_manager=, **kwargs) → result."""


def posting_payload_as_built(library_generate: Generate) -> Generate:
    """An `_agenerate` that posts plain chat completions as built and hands the rest to `library_generate`."""

    async def _agenerate(
        self: BaseChatOpenAI,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        payload = self._get_request_payload(messages, stop=stop, **kwargs)
        reads_headers = self.include_response_headers or self._uses_gateway
        if reads_headers or self._use_responses_api(payload) or not sent_as_built(payload):
            return await library_generate(self, messages, stop=stop, run_manager=run_manager, **kwargs)
        request_options = {key: payload.pop(key) for key in REQUEST_OPTION_KEYS if key in payload}
        options = make_request_options(**request_options, security=CREATE_SECURITY)
        try:
            reply = await post(self.root_async_client, CHAT_COMPLETIONS_PATH, payload, options, ReplyJson)
        except openai.BadRequestError as error:
            _handle_openai_bad_request(error)
            raise
        except openai.APIError as error:
            _handle_openai_api_error(error)
            raise
        # Not a dict (a text or list reply): `_create_chat_result` refuses it with the library's own error.
        dumped: Any = as_dumped(reply, ChatCompletion)
        result = self._create_chat_result(dumped, {})
        if isinstance(dumped, dict) and dumped["choices"]:
            # What the library copies off a typed reply's first message and nowhere else.
            message, extra = dumped["choices"][0]["message"], result.generations[0].message.additional_kwargs
            extra |= {key: message[key] for key in ("parsed", "refusal") if key in message}
        return result

    return _agenerate


class LeanChatOpenAI(ChatOpenAI):
    """`ChatOpenAI` whose plain chat completions skip the SDK's request transform, typed reply and thread hop."""

    _agenerate = posting_payload_as_built(ChatOpenAI._agenerate)


class LeanAzureChatOpenAI(AzureChatOpenAI):
    """`AzureChatOpenAI` whose plain chat completions skip the SDK's request transform, typed reply, thread hop."""

    _agenerate = posting_payload_as_built(AzureChatOpenAI._agenerate)
