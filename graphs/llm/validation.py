"""Every schema violation in a decoded JSON value, each with its JSON path, for a re-ask that names them all.

`msgspec.convert` stops at the first problem. When a model's reply is wrong in three places, re-asking
about one of them costs two more round trips, so this walks msgspec's own type description
(`msgspec.inspect.type_info`) next to the value and reports all of them, in msgspec's semantics
(strict types: no bool for int, no float for int, no str for numbers; unknown fields ignored unless the
Struct forbids them; tagged unions dispatched on their tag).

Invariant the tests hold it to: `collect_errors(obj, tp) == []` exactly when `msgspec.convert(obj, tp)`
succeeds. As a safety net for the types walked only loosely here (msgpack extensions, custom types),
a clean walk is confirmed with `msgspec.convert`, whose first error is reported if it disagrees.
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
import re
import uuid
from collections.abc import Sequence, Sized
from functools import cache
from typing import Annotated, Any

import msgspec
import msgspec.inspect as mi

from contracts.base import PATTERN_MEANINGS

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MSGSPEC_PATH = re.compile(r"^(?P<message>.*) - at `(?P<path>[^`]*)`$", re.DOTALL)


def collect_errors(obj: object, tp: Any) -> list[str]:
    """All the ways `obj` (a decoded JSON value) fails to be a `tp`, as `"<JSON path>: <problem>"`.

    Args:
        obj: The decoded JSON: dicts, lists, str, int, float, bool and None.
        tp: Anything `msgspec.convert` accepts as a type: a Struct, `list[Struct]`, a union, ...

    Returns:
        One message per problem (e.g. `$.steps[2].depends_on: expected array, got string`), in
        document order; empty when `msgspec.convert(obj, tp)` will succeed.
    """
    errors = schema_errors(obj, tp)
    if not errors:
        try:
            msgspec.convert(obj, tp)
        except msgspec.ValidationError as exc:
            errors.append(_from_msgspec_error(str(exc), "$"))
    return errors


def schema_errors(obj: object, tp: Any) -> list[str]:
    """The walk alone, without `collect_errors`'s final `msgspec.convert` confirmation.

    Exposed so tests can hold the walk itself to msgspec's semantics; callers want `collect_errors`.
    """
    errors: list[str] = []
    _check(obj, type_info(tp), "$", errors)
    return errors


def type_info(tp: Any) -> mi.Type:
    """`msgspec.inspect.type_info(tp)`, computed once per type: it walks every annotation each call."""
    try:
        return _cached_type_info(tp)
    except TypeError:  # unhashable type expression
        return mi.type_info(tp)


@cache
def _cached_type_info(tp: Any) -> mi.Type:
    return mi.type_info(tp)


# --- messages -------------------------------------------------------------------------------------


def child_path(path: str, key: object) -> str:
    """The JSON path of `key` (a field name or an index) under `path`: `$.a.b`, `$.a["x y"]`, `$.a[3]`."""
    if isinstance(key, str) and _IDENTIFIER.fullmatch(key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=False) if isinstance(key, str) else key}]"


def _kind_of(value: object) -> str:
    match value:
        case None:
            return "null"
        case bool():
            return "boolean"
        case int():
            return "integer"
        case float():
            return "number"
        case str():
            return "string"
        case list() | tuple():
            return "array"
        case dict():
            return "object"
    return type(value).__name__


def _value_kinds(values: Sequence[object]) -> list[str]:
    return list(dict.fromkeys(_kind_of(v) for v in values))


_KINDS: tuple[tuple[type[mi.Type] | tuple[type[mi.Type], ...], list[str]], ...] = (
    ((mi.DictType, mi.TypedDictType, mi.DataclassType), ["object"]),
    ((mi.CollectionType, mi.TupleType, mi.NamedTupleType), ["array"]),
    ((mi.StrType, mi.DateTimeType, mi.DateType, mi.TimeType, mi.UUIDType, mi.BytesType), ["string"]),
    (mi.IntType, ["integer"]),
    (mi.FloatType, ["number"]),
    (mi.DecimalType, ["number", "string"]),
    (mi.BoolType, ["boolean"]),
    (mi.NoneType, ["null"]),
)
"""The JSON kinds a value of each fixed-kind type has (the types whose kinds depend on them are below)."""


def _expected_kinds(info: mi.Type) -> list[str]:
    match info:
        case mi.Metadata():
            return _expected_kinds(info.type)
        case mi.StructType():
            return ["array" if info.array_like else "object"]
        case mi.LiteralType():
            return _value_kinds(info.values)
        case mi.EnumType():
            return _value_kinds([member.value for member in info.cls])
        case mi.UnionType():
            return list(dict.fromkeys(kind for member in info.types for kind in _expected_kinds(member)))
    return next((list(kinds) for types, kinds in _KINDS if isinstance(info, types)), ["a valid value"])


def _kind_error(value: object, info: mi.Type, path: str) -> str:
    return f"{path}: expected {' or '.join(_expected_kinds(info))}, got {_kind_of(value)}"


def _one_of(values: Sequence[object]) -> str:
    return ", ".join(json.dumps(v, ensure_ascii=False) for v in values)


def _from_msgspec_error(message: str, path: str) -> str:
    """Rephrase a msgspec error (`Expected `int`, got `str` - at `$.a``) in this module's style."""
    match = _MSGSPEC_PATH.match(message)
    if match:
        message, inner = match.group("message"), match.group("path")
        path = path + inner[1:] if inner.startswith("$") else f"{path} ({inner})"
    message = message.replace("`", "")
    return f"{path}: {message[:1].lower()}{message[1:]}"


# --- the walk -------------------------------------------------------------------------------------


def _check(value: object, info: mi.Type, path: str, errors: list[str]) -> None:
    match info:
        case mi.Metadata():
            _check(value, info.type, path, errors)
        case mi.AnyType():
            pass
        case mi.NoneType() | mi.BoolType() | mi.IntType() | mi.FloatType() | mi.StrType():
            _check_scalar(value, info, path, errors)
        case mi.LiteralType():
            _check_choice(value, info, list(info.values), path, errors)
        case mi.EnumType():
            _check_choice(value, info, [member.value for member in info.cls], path, errors)
        case mi.UnionType():
            _check_union(value, info, path, errors)
        case _:
            _check_container(value, info, path, errors)


def _check_scalar(
    value: object,
    info: mi.NoneType | mi.BoolType | mi.IntType | mi.FloatType | mi.StrType,
    path: str,
    errors: list[str],
) -> None:
    """null, boolean, integer, number, string: the JSON kind first (a boolean is no number), then the bounds."""
    match info, value:
        case mi.NoneType(), None:
            pass
        case mi.BoolType(), bool():
            pass
        case (mi.IntType(), int()) if not isinstance(value, bool):
            _check_number(value, info, path, errors)
        case (mi.FloatType(), int() | float()) if not isinstance(value, bool):
            _check_number(value, info, path, errors)
        case mi.StrType(), str():
            _check_str(value, info, path, errors)
        case _:
            errors.append(_kind_error(value, info, path))


def _check_container(value: object, info: mi.Type, path: str, errors: list[str]) -> None:
    """Objects and arrays, walked field by field and item by item; anything else is confirmed by msgspec."""
    match info:
        case mi.StructType():
            _check_struct(value, info, path, errors)
        case mi.TypedDictType() | mi.DataclassType():
            _check_object_fields(value, info, info.fields, path, errors)
        case mi.NamedTupleType():
            _check_positional_fields(value, info, info.fields, 0, path, errors)
        case mi.DictType():
            _check_dict(value, info, path, errors)
        case mi.TupleType():
            _check_tuple(value, info, path, errors)
        case mi.CollectionType():
            _check_collection(value, info, path, errors)
        case _:
            _check_leaf(value, info, path, errors)


def _check_number(value: float, info: mi.IntType | mi.FloatType, path: str, errors: list[str]) -> None:
    if info.ge is not None and not value >= info.ge:
        errors.append(f"{path}: must be >= {info.ge}")
    if info.gt is not None and not value > info.gt:
        errors.append(f"{path}: must be > {info.gt}")
    if info.le is not None and not value <= info.le:
        errors.append(f"{path}: must be <= {info.le}")
    if info.lt is not None and not value < info.lt:
        errors.append(f"{path}: must be < {info.lt}")
    if info.multiple_of is not None:
        remainder = value % info.multiple_of if isinstance(info, mi.IntType) else math.fmod(value, info.multiple_of)
        if remainder != 0:
            errors.append(f"{path}: must be a multiple of {info.multiple_of}")


def _check_str(value: str, info: mi.StrType, path: str, errors: list[str]) -> None:
    if info.min_length is not None and len(value) < info.min_length:
        errors.append(f"{path}: must be at least {info.min_length} characters long")
    if info.max_length is not None and len(value) > info.max_length:
        errors.append(f"{path}: must be at most {info.max_length} characters long")
    if info.pattern is not None and not re.search(info.pattern, value):
        meaning = PATTERN_MEANINGS.get(info.pattern)
        shown = f"be {meaning} (the pattern {info.pattern!r})" if meaning else f"match the pattern {info.pattern!r}"
        errors.append(f"{path}: must {shown}")


def _check_length(value: Sized, info: Any, path: str, noun: str, errors: list[str]) -> None:
    if info.min_length is not None and len(value) < info.min_length:
        errors.append(f"{path}: must have at least {info.min_length} {noun}")
    if info.max_length is not None and len(value) > info.max_length:
        errors.append(f"{path}: must have at most {info.max_length} {noun}")


def _check_choice(value: object, info: mi.Type, choices: list[object], path: str, errors: list[str]) -> None:
    """Literal and Enum: the value's JSON type must be one the choices have, then be one of them."""
    if _kind_of(value) not in _value_kinds(choices):
        errors.append(_kind_error(value, info, path))
    elif not any(type(value) is type(choice) and value == choice for choice in choices):
        errors.append(f"{path}: must be one of {_one_of(choices)}")


def _check_collection(value: object, info: mi.CollectionType, path: str, errors: list[str]) -> None:
    if not isinstance(value, list | tuple):
        errors.append(_kind_error(value, info, path))
        return
    _check_length(value, info, path, "items", errors)
    for index, item in enumerate(value):
        _check(item, info.item_type, f"{path}[{index}]", errors)


def _check_tuple(value: object, info: mi.TupleType, path: str, errors: list[str]) -> None:
    if not isinstance(value, list | tuple):
        errors.append(_kind_error(value, info, path))
        return
    if len(value) != len(info.item_types):
        errors.append(f"{path}: must have exactly {len(info.item_types)} items, got {len(value)}")
        return
    for index, (item, item_type) in enumerate(zip(value, info.item_types, strict=True)):
        _check(item, item_type, f"{path}[{index}]", errors)


def _check_dict(value: object, info: mi.DictType, path: str, errors: list[str]) -> None:
    if not isinstance(value, dict):
        errors.append(_kind_error(value, info, path))
        return
    _check_length(value, info, path, "entries", errors)
    for key, item in value.items():
        child = child_path(path, key)
        _check(key, info.key_type, f"{child} (key)", errors)
        _check(item, info.value_type, child, errors)


def _check_struct(value: object, info: mi.StructType, path: str, errors: list[str]) -> None:
    if info.array_like:
        offset = 0
        if info.tag_field is not None:
            if not isinstance(value, list | tuple):
                errors.append(_kind_error(value, info, path))
                return
            if not value or not _same(value[0], info.tag):
                errors.append(f"{path}[0]: must be {_one_of([info.tag])} (the tag)")
                return
            offset = 1
        _check_positional_fields(value, info, info.fields, offset, path, errors)
        return
    if not isinstance(value, dict):
        errors.append(_kind_error(value, info, path))
        return
    if info.tag_field is not None and info.tag_field in value and not _same(value[info.tag_field], info.tag):
        errors.append(f"{child_path(path, info.tag_field)}: must be {_one_of([info.tag])}")
        return
    _check_object_fields(value, info, info.fields, path, errors)
    if info.forbid_unknown_fields:
        known = {field.encode_name for field in info.fields} | {info.tag_field}
        errors.extend(f"{child_path(path, key)}: unknown field" for key in value if key not in known)


def _check_object_fields(
    value: object, info: mi.Type, fields: Sequence[mi.Field], path: str, errors: list[str]
) -> None:
    if not isinstance(value, dict):
        errors.append(_kind_error(value, info, path))
        return
    for field in fields:
        child = child_path(path, field.encode_name)
        if field.encode_name in value:
            _check(value[field.encode_name], field.type, child, errors)
        elif field.required:
            errors.append(f"{child}: required field missing")


def _check_positional_fields(
    value: object, info: mi.Type, fields: Sequence[mi.Field], offset: int, path: str, errors: list[str]
) -> None:
    """Array-like structs and named tuples: fields by position, trailing defaults may be left out."""
    if not isinstance(value, list | tuple):
        errors.append(_kind_error(value, info, path))
        return
    items = value[offset:]
    required = sum(1 for field in fields if field.required)
    if len(items) < required:
        errors.append(f"{path}: must have at least {required + offset} items, got {len(value)}")
    forbid_extra = isinstance(info, mi.NamedTupleType) or (
        isinstance(info, mi.StructType) and info.forbid_unknown_fields
    )
    if forbid_extra and len(items) > len(fields):
        errors.append(f"{path}: must have at most {len(fields) + offset} items, got {len(value)}")
    for index, (item, field) in enumerate(zip(items, fields, strict=False)):
        _check(item, field.type, f"{path}[{index + offset}]", errors)


def _same(value: object, expected: object) -> bool:
    return type(value) is type(expected) and value == expected


def _check_union(value: object, info: mi.UnionType, path: str, errors: list[str]) -> None:
    """Pick the member the value's JSON type selects, as msgspec does, and check against it alone."""
    members = [m.type if isinstance(m, mi.Metadata) else m for m in info.types]
    if any(isinstance(m, mi.AnyType) for m in members):
        return
    candidates = [m for m in members if _kind_of(value) in _accepted_kinds(m)]
    if not candidates:
        errors.append(_kind_error(value, info, path))
        return
    structs = [m for m in candidates if isinstance(m, mi.StructType) and not m.array_like]
    if len(structs) > 1 and isinstance(value, dict):
        _check_tagged(value, structs, path, errors)
        return
    # An integer goes to `int` before `float`, as in msgspec.
    candidates.sort(key=lambda m: 0 if isinstance(m, mi.IntType) else 1)
    _check(value, candidates[0], path, errors)


def _accepted_kinds(info: mi.Type) -> list[str]:
    kinds = _expected_kinds(info)
    if "number" in kinds:
        kinds = [*kinds, "integer"]
    return kinds


def _check_tagged(value: dict[Any, Any], structs: list[mi.StructType], path: str, errors: list[str]) -> None:
    tag_field = structs[0].tag_field
    assert tag_field is not None, "msgspec only allows several structs in a union when they are tagged"
    child = child_path(path, tag_field)
    if tag_field not in value:
        errors.append(f"{child}: required field missing")
        return
    for struct in structs:
        if _same(value[tag_field], struct.tag):
            _check_struct(value, struct, path, errors)
            return
    errors.append(f"{child}: must be one of {_one_of([s.tag for s in structs])}")


def _check_leaf(value: object, info: mi.Type, path: str, errors: list[str]) -> None:
    """String-encoded scalars (datetime, UUID, Decimal, bytes ...): let msgspec parse the one value."""
    tp = _leaf_type(info)
    if tp is None:
        return  # msgpack-only or custom types: left to the final msgspec.convert in collect_errors
    try:
        msgspec.convert(value, tp)
    except msgspec.ValidationError as exc:
        errors.append(_from_msgspec_error(str(exc), path))


def _leaf_type(info: mi.Type) -> Any:
    match info:
        case mi.DateTimeType():
            return Annotated[datetime.datetime, msgspec.Meta(tz=info.tz)]
        case mi.TimeType():
            return Annotated[datetime.time, msgspec.Meta(tz=info.tz)]
        case mi.DateType():
            return datetime.date
        case mi.TimeDeltaType():
            return datetime.timedelta
        case mi.UUIDType():
            return uuid.UUID
        case mi.DecimalType():
            return decimal.Decimal
        case mi.BytesType() | mi.ByteArrayType() | mi.MemoryViewType():
            return Annotated[bytes, msgspec.Meta(min_length=info.min_length, max_length=info.max_length)]
    return None
