"""Bounds on what a model may hand the service: the reply's size, and each field's length.

A model is an untrusted writer. Two bounds keep its output from costing more than a request may, or
from breaking the session it is part of:

- a reply longer than `MODEL.reply_chars` (`contracts/limits.py`) is refused before any parsing, as a
  bad reply (re-asked, then the embedded rules stand in): finding the JSON, decoding and repairing it
  are all at least linear in its length, and nothing the agents ask for needs that much;
- every string and list of a decoded reply is clipped to the `max_length` its reply type declares,
  before validation. The reply types declare the lengths the service's own request contract accepts
  back, so a model-written query, reason or description that travels in a response (and in the state
  or history the caller sends back) can never make the next call invalid (a 100,000-character
  `queries_text` once produced a state the next call refused, which killed the session).
"""

from __future__ import annotations

from typing import Any

import msgspec.inspect as mi

from contracts.limits import MODEL
from graphs.llm.validation import type_info

ECHO_CHARS = 2_000
"""Characters of a refused, over-long reply shown back to the model in the re-ask (not the whole of it)."""


def reply_too_long(text: str, limit: int = MODEL.reply_chars) -> str | None:
    """The error for a reply over `limit` characters (refused before parsing), or None when it fits."""
    if len(text) <= limit:
        return None
    return (
        f"$: the reply is {len(text):,} characters; at most {limit:,} are accepted (model reply_chars). "
        "Answer with the JSON value only, with shorter texts"
    )


def echo_of(text: str, limit: int = MODEL.reply_chars) -> str:
    """What of a reply goes back to the model in a re-ask: all of it when it fits, else its start."""
    return text if len(text) <= limit else text[:ECHO_CHARS] + " …(cut)"


def clip_to_schema(value: object, schema: Any) -> object:
    """`value` (decoded JSON) with every string and list cut to the `max_length` the schema gives it.

    Only lengths change; anything of the wrong shape is left as it is for validation to report.
    """
    return _clip(value, type_info(schema))


def _clip(value: object, info: mi.Type) -> object:
    if isinstance(info, mi.Metadata):
        info = info.type
    if isinstance(value, str):
        limit = info.max_length if isinstance(info, mi.StrType) else _string_limit(info)
        return value[:limit] if limit is not None and len(value) > limit else value
    if isinstance(value, list):
        return _clip_list(value, info)
    if isinstance(value, dict):
        return _clip_dict(value, info)
    return value


def _string_limit(info: mi.Type) -> int | None:
    """The max_length of a union's string member (`str | None`), if it has one."""
    if isinstance(info, mi.UnionType):
        for member in info.types:
            inner = member.type if isinstance(member, mi.Metadata) else member
            if isinstance(inner, mi.StrType):
                return inner.max_length
    return None


def _member(info: mi.Type, kind: tuple[type[mi.Type], ...]) -> mi.Type | None:
    """`info` itself or the union member of one of the `kind` types (e.g. the list of `list[X] | None`)."""
    if isinstance(info, kind):
        return info
    if isinstance(info, mi.UnionType):
        for member in info.types:
            inner = member.type if isinstance(member, mi.Metadata) else member
            if isinstance(inner, kind):
                return inner
    return None


def _clip_list(value: list[Any], info: mi.Type) -> object:
    found = _member(info, (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType))
    if found is None:
        return value
    assert isinstance(found, mi.ListType | mi.SetType | mi.FrozenSetType | mi.VarTupleType)
    kept = value[: found.max_length] if found.max_length is not None else value
    return [_clip(item, found.item_type) for item in kept]


def _clip_dict(value: dict[Any, Any], info: mi.Type) -> object:
    found = _member(info, (mi.StructType, mi.DictType))
    if isinstance(found, mi.StructType):
        fields = {f.encode_name: f.type for f in found.fields}
        return {key: _clip(item, fields[key]) if key in fields else item for key, item in value.items()}
    if isinstance(found, mi.DictType):
        return {key: _clip(item, found.value_type) for key, item in value.items()}
    return value
