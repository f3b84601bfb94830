"""The one way agents get typed output from a chat model: ask, extract, decode, validate, re-ask.

Per attempt: request provider-native JSON when the config allows it, call through the shared retry
loop, pull the JSON out of the reply, decode it (repairing it as a last resort), convert it to the
msgspec type (when that fails, walk the value to collect *every* schema error, not just msgspec's
first) and run the caller's semantic check (e.g. unknown ids). If anything is wrong and re-asks
remain, the model sees its own reply and the full list of problems (`prompts/common/reask.txt`) and
tries again.

A bad reply is a result (value None, errors listed), never an exception; only transport failures
raise (`ModelFailure` / `ModelTimeout`), which callers map to `MODEL_FAILURE` / `TIMEOUT`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import msgspec
import msgspec.inspect as mi
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from contracts.common import Usage
from graphs.llm import unobserved_call
from graphs.llm.config import LLMConfig
from graphs.llm.json_extract import JsonKind, extract_json_text, unbalanced_json_tail
from graphs.llm.reply_bounds import clip_to_schema, echo_of, reply_too_long
from graphs.llm.retry import call_with_retries
from graphs.llm.usage import UsageMeter, usage_from_message
from graphs.llm.validation import collect_errors, type_info
from graphs.prompt_files import render_prompt

if TYPE_CHECKING:  # type-only: the chat-model stack is imported when a provider is configured
    from langchain_core.language_models import BaseChatModel, LanguageModelInput
    from langchain_core.runnables import Runnable

T = TypeVar("T")

REPAIRED_WARNING = "repaired malformed JSON"
EMPTY_REPLY_ERROR = "$: the reply was empty; expected JSON"
NO_JSON_ERROR = "$: the reply contains no JSON; expected a single JSON value"
UNREPAIRABLE_ERROR = "$: the reply's JSON is malformed and could not be repaired"


class StructuredResult(msgspec.Struct, Generic[T], frozen=True, kw_only=True):
    """What one `ainvoke_structured` call produced, across all its attempts.

    Attributes:
        value: The decoded value; None when no attempt produced one that fits the schema. When only
            the caller's `check` objected on the last attempt, the value is kept (with the objections
            in `errors`) so the caller can drop the offending items rather than lose everything.
        errors: What was wrong with the last attempt; empty on success.
        warnings: Things worth logging about the accepted reply (e.g. its JSON needed repair).
        usage: Tokens and calls summed over every attempt, re-asks included.
        raw_text: The last reply's text, for logs and debugging.
        attempts: How many replies were requested (1 + re-asks used).
    """

    value: T | None
    errors: list[str]
    warnings: list[str]
    usage: Usage
    raw_text: str
    attempts: int

    @property
    def ok(self) -> bool:
        """A value that passed both the schema and the caller's check."""
        return self.value is not None and not self.errors


class ParsedReply(msgspec.Struct, Generic[T], frozen=True, kw_only=True):
    """One reply turned into a value, or into everything wrong with it (before any re-ask)."""

    value: T | None
    errors: list[str]
    warnings: list[str]


async def ainvoke_structured(
    model: BaseChatModel,
    messages: list[BaseMessage],
    schema: type[T],
    *,
    cfg: LLMConfig,
    deadline: float | None = None,
    max_reasks: int = 0,
    check: Callable[[T], list[str]] | None = None,
    meter: UsageMeter | None = None,
) -> StructuredResult[T]:
    """Ask `model` for a `schema`-shaped JSON reply, re-asking up to `max_reasks` times with every error.

    Args:
        model: A chat model from `make_chat_model` (or any LangChain chat model, e.g. a test fake).
        messages: The conversation so far; the prompt should already ask for JSON.
        schema: The msgspec type the reply must decode to (a Struct, `list[Struct]`, ...).
        cfg: Provider settings: native JSON mode, per-attempt timeout, transport retries.
        deadline: Absolute `time.monotonic()` by which the whole exchange must end.
        max_reasks: Extra attempts allowed after a reply that fails validation.
        check: Semantic validation of a schema-valid value (e.g. ids that are not in the input);
            returns error messages, empty when the value is acceptable.
        meter: The request's usage meter; every request and reply is added to it as it happens, so
            what was spent is known even when this raises.

    Raises:
        ModelFailure: The provider failed after transport retries (or on a non-retryable error).
        ModelTimeout: The per-attempt timeout or the deadline ran out.
    """
    native_json = native_json_kwargs(model, schema, cfg)
    history = list(messages)
    usage = Usage(engine=cfg.provider, model=cfg.model)
    attempt = 0
    while True:
        attempt += 1
        text, spent = await call_model(model, history, cfg=cfg, deadline=deadline, meter=meter, call_kwargs=native_json)
        usage = usage.plus(spent)
        parsed = parse_reply(text, schema, check)
        if not parsed.errors or attempt > max_reasks:
            return StructuredResult(
                value=parsed.value,
                errors=parsed.errors,
                warnings=parsed.warnings,
                usage=usage,
                raw_text=text,
                attempts=attempt,
            )
        history += [AIMessage(content=echo_of(text)), HumanMessage(content=reask_message(parsed.errors))]


async def call_model(
    model: Runnable[LanguageModelInput, BaseMessage],
    messages: list[BaseMessage],
    *,
    cfg: LLMConfig,
    deadline: float | None,
    meter: UsageMeter | None = None,
    call_kwargs: Mapping[str, Any] | None = None,
) -> tuple[str, Usage]:
    """One reply's text through the shared retry loop, and what it cost.

    `call_kwargs` go to every attempt's `ainvoke` (the provider's JSON-output parameters,
    `native_json_kwargs`).

    Every request sent counts as a call, the ones that failed and were retried too (a provider may
    bill them, and the caller should see that the model was tried); tokens come from the reply.
    Each is added to `meter` the moment it happens, so a caller still sees the spend when this raises.

    Raises:
        ModelFailure: The provider failed after transport retries (or on a non-retryable error).
        ModelTimeout: The per-attempt timeout or the deadline ran out.
    """
    one_call = Usage(engine=cfg.provider, model=cfg.model, llm_calls=1)
    kwargs = call_kwargs or {}
    spent = Usage(engine=cfg.provider, model=cfg.model)

    async def request() -> BaseMessage:
        nonlocal spent
        spent = spent.plus(one_call)
        if meter is not None:
            meter.add(one_call)
        # Through the provider call alone when nothing observes langchain-core's run of it (`unobserved_call`).
        return await unobserved_call.reply(model, messages, **kwargs)

    reply = await call_with_retries(request, max_retries=cfg.max_retries, timeout_s=cfg.timeout_s, deadline=deadline)
    if isinstance(reply, AIMessage):
        tokens = usage_from_message(reply, engine=cfg.provider, model=cfg.model, calls=0)
        spent = spent.plus(tokens)
        if meter is not None:
            meter.add(tokens)
    return str(reply.text), spent


def reask_message(errors: list[str]) -> str:
    """The human turn that sends the model back to fix every listed problem."""
    listing = "\n".join(f"- {error}" for error in errors)
    return render_prompt("common/reask", errors=listing)


def parse_reply(text: str, schema: type[T], check: Callable[[T], list[str]] | None = None) -> ParsedReply[T]:
    """Turn one reply's text into a value of `schema`, or into the list of everything wrong with it.

    A reply over the size limit is refused unread; a decoded one has its strings and lists clipped to
    the lengths `schema` declares (`reply_bounds`), so only its shape and content are judged.
    """
    if not text.strip():
        return ParsedReply(value=None, errors=[EMPTY_REPLY_ERROR], warnings=[])
    too_long = reply_too_long(text)
    if too_long is not None:
        return ParsedReply(value=None, errors=[too_long], warnings=[])
    obj, errors, warnings = _decode_json(text, _json_kind(schema))
    if errors:
        return ParsedReply(value=None, errors=errors, warnings=warnings)
    obj = clip_to_schema(obj, schema)
    try:
        value = msgspec.convert(obj, schema)
    except msgspec.ValidationError:
        # msgspec stops at the first problem; the walk names every one, for the re-ask.
        return ParsedReply(value=None, errors=collect_errors(obj, schema), warnings=warnings)
    return ParsedReply(value=value, errors=check(value) if check else [], warnings=warnings)


_NOTHING = object()


def _decode_json(text: str, want: JsonKind | None) -> tuple[object, list[str], list[str]]:
    """Decoded JSON builtins, errors and warnings; repairs (with a warning) only when decoding fails."""
    candidate = extract_json_text(text, want=want)
    if candidate is not None:
        try:
            return msgspec.json.decode(candidate), [], []
        except msgspec.DecodeError:
            pass
    broken = candidate if candidate is not None else unbalanced_json_tail(text, want=want)
    if broken is None:
        return None, [NO_JSON_ERROR], []
    repaired = _repair(broken, want)
    if repaired is _NOTHING:
        return None, [UNREPAIRABLE_ERROR], []
    return repaired, [], [REPAIRED_WARNING]


def _repair(broken: str, want: JsonKind | None) -> object:
    try:
        import json_repair  # only needed for the rare malformed reply: not on the start-up path

        repaired = json_repair.repair_json(broken, return_objects=True)
    except Exception:  # a repair library failing just means "could not repair"
        return _NOTHING
    expected: tuple[type, ...] = {"object": (dict,), "array": (list,), None: (dict, list)}[want]
    return repaired if isinstance(repaired, expected) and repaired else _NOTHING


def _json_kind(schema: Any) -> JsonKind | None:
    """Whether the schema's JSON is an object or an array, so prose like `[1]` is not taken for it."""
    info = type_info(schema)
    while isinstance(info, mi.Metadata):
        info = info.type
    if isinstance(info, mi.StructType):
        return "array" if info.array_like else "object"
    if isinstance(info, mi.DictType | mi.TypedDictType | mi.DataclassType):
        return "object"
    if isinstance(info, mi.CollectionType | mi.TupleType | mi.NamedTupleType):
        return "array"
    return None


# --- provider-native JSON mode --------------------------------------------------------------------


def native_json_kwargs(model: BaseChatModel, schema: type[Any], cfg: LLMConfig) -> dict[str, Any]:
    """The provider's JSON-output parameters for one call of `model`, when the config asks for them.

    OpenAI, Azure and OpenAI-compatible servers get a `json_schema` response format (non-strict:
    strict mode rejects schemas with optional fields or open objects; llama.cpp's server, vLLM and
    Ollama enforce it while decoding, which keeps a small local model's reply parseable), or only
    `json_object` when `cfg.json_object_only` says the server refuses a schema; Gemini (both APIs)
    gets `response_mime_type` plus `response_json_schema` (the parameter langchain-google-genai 4.x
    forwards as `generationConfig.responseJsonSchema`).

    They are passed to `ainvoke` as keyword arguments, which LangChain hands to the provider call
    exactly as it would a binding's: a `model.bind(...)` per call built a `RunnableBinding` (a
    pydantic model) and added a config merge to every call: about 50 µs more per call than this, for
    the same request body (the real `ChatOpenAI` against the lean fake model, called inside a graph
    node, alternating the two ways). The dict is new each call; the schema document in it is shared.
    """
    if not cfg.native_json_schema:
        return {}
    match cfg.provider:
        case "openai-compatible" if cfg.json_object_only:
            return _response_format_kwargs(model, {"type": "json_object"})
        case "openai" | "azure" | "openai-compatible":
            return _response_format_kwargs(model, _schema_response_format(schema))
        case "gemini" | "vertex":
            document = _schema_response_format(schema)["json_schema"]["schema"]
            return {"response_mime_type": "application/json", "response_json_schema": document}
    return {}


def _schema_response_format(schema: Any) -> dict[str, Any]:
    """OpenAI's `json_schema` response format for `schema`, built once per type (see `_schema_document`)."""
    return {"type": "json_schema", "json_schema": _schema_json_schema(schema)}


@cache
def _schema_json_schema(schema: Any) -> dict[str, Any]:
    return {"name": schema_name(schema), "schema": _schema_document(schema), "strict": False}


@cache
def _schema_document(schema: Any) -> dict[str, Any]:
    """`inline_json_schema(schema)`, built once per type and shared: it goes into every request as it is.

    msgspec's schema generation re-reads every annotation of every Struct the type reaches (about
    0.4 ms for the Librarian's decision, on each model call); the document never changes for a type.
    The shared dict is only ever serialised into request bodies, never modified. Reply types are
    classes and type aliases, so hashable.
    """
    return inline_json_schema(schema)


def _response_format_kwargs(model: BaseChatModel, response_format: dict[str, Any]) -> dict[str, Any]:
    """`response_format` sent in the request body, next to the model's own `extra_body` (the token cap).

    Passed as langchain-openai's `response_format` argument it would switch the client to the SDK's `parse`
    call, which raises on a reply cut off at the token cap (`finish_reason: length`) before anyone sees it:
    a truncated reply then became MODEL_FAILURE instead of a reply to repair or re-ask.
    """
    extra_body = getattr(model, "extra_body", None) or {}
    return {"extra_body": {**extra_body, "response_format": response_format}}


def schema_name(schema: Any) -> str:
    """A name OpenAI accepts for the schema (`^[a-zA-Z0-9_-]{1,64}$`)."""
    name = getattr(schema, "__name__", None) or "response"
    return re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:64] or "response"


def inline_json_schema(schema: Any) -> dict[str, Any]:
    """`msgspec.json.schema(schema)` with every `$ref` replaced by its definition and `$defs` dropped.

    Provider schema dialects handle `$ref` unevenly. A recursive type cannot be inlined; its inner
    self-reference becomes `{}` (any value), which keeps the request valid and leaves the real check
    to `collect_errors`.
    """
    document = msgspec.json.schema(schema)
    defs: dict[str, Any] = document.pop("$defs", {})

    def resolve(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [resolve(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name in seen or name not in defs:
                return {}
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            return resolve({**defs[name], **siblings}, (*seen, name))
        return {key: resolve(value, seen) for key, value in node.items()}

    resolved: dict[str, Any] = resolve(document, ())
    return resolved
