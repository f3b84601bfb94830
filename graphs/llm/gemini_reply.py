"""Gemini's reply parsed as google-genai parses it, with the fields its models do not know dropped by a plan made once.

google-genai drops the fields of a reply that its models do not know (they forbid extra fields, and a newer API
may send more) with `_common._remove_extra_fields` before validating. At every object of the reply that walk
rebuilds the object's model and works out the model's table of aliases again for every key: on one of the
service's replies (`python -m bench.model_step_cpu --provider gemini`), about 70 µs of a 140 µs parse, the same
work on every call. `reply_from` drops exactly the keys that walk drops, walking the reply the same way, with each
model's keys looked up in a table worked out once per model (`_plan`), then hands the reply to the SDK's own
`GenerateContentResponse._from_response`, told that nothing is left to drop. The tests compare the two walks on
replies generated after the SDK's own models (objects and lists of objects down to seven levels, unknown fields at
every depth, wrong values in known ones), so an SDK whose walk drops something else fails them.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any, Union

import pydantic
from google.genai import _common, types


@dataclass(frozen=True, slots=True)
class _Key:
    """What the SDK's walk does with the value of a key its model knows."""

    value_model: type[pydantic.BaseModel] | None
    """The model of a value that is an object (walked in turn), or None: the object is left as it is."""
    item_model: type[pydantic.BaseModel] | None
    """The model of each object in a value that is a list, or None: the list is left as it is."""


_PLANS: dict[type[pydantic.BaseModel], dict[str, _Key]] = {}
"""Each model's plan, once the model is built (its annotations then name classes, not forward references)."""


def _plan(model: type[pydantic.BaseModel]) -> dict[str, _Key]:
    """Every key `_remove_extra_fields` keeps in an object of `model` (field names and aliases), and what it does next.

    Worked out as that function works it out key by key: the alias wins over a field of the same name, an
    `Optional[X]` is read as `X`, and only an object or a list of objects whose model is known is walked.
    """
    plan = _PLANS.get(model)
    if plan is not None:
        return plan
    model.model_rebuild(raise_errors=False)  # as the SDK's walk does at every object
    fields = model.model_fields
    aliases = {info.alias: name for name, info in fields.items()}
    plan = {}
    for key in {*fields, *aliases}:
        if not isinstance(key, str):  # a field without an alias: `None` names no key of a JSON object
            continue
        annotation = fields[aliases.get(key, key)].annotation
        if typing.get_origin(annotation) is Union:
            annotation = typing.get_args(annotation)[0]
        # A list of `dict[str, Any]` (a Struct), which the SDK's walk skips by name, has no model here either.
        items = typing.get_args(annotation)
        item_model = _common._as_base_model_type(items[0] if items else None)
        plan[key] = _Key(_common._as_base_model_type(annotation), item_model)
    if model.__pydantic_complete__:  # a model that could not be built is planned again next time, as the SDK does
        _PLANS[model] = plan
    return plan


def prune(model: type[pydantic.BaseModel], reply: dict[str, Any]) -> None:
    """Drop, in place, every key of `reply` that `_common._remove_extra_fields(model, reply)` drops."""
    plan = _plan(model)
    for key, value in list(reply.items()):
        known = plan.get(key)
        if known is None:
            del reply[key]
        elif isinstance(value, dict):
            if known.value_model is not None:
                prune(known.value_model, value)
        elif isinstance(value, list) and known.item_model is not None:
            for item in value:
                if isinstance(item, dict):
                    prune(known.item_model, item)


def reply_from(reply: dict[str, Any], config: types.GenerateContentConfig) -> types.GenerateContentResponse:
    """`GenerateContentResponse._from_response` of a reply in the SDK's form, as `generate_content` calls it.

    A config asking for every field (`include_all_fields`) keeps them, as the SDK keeps them.
    """
    include_all_fields = getattr(config, "include_all_fields", None)
    if not include_all_fields:
        prune(types.GenerateContentResponse, reply)
    return types.GenerateContentResponse._from_response(
        response=reply,
        kwargs={
            "config": {
                "response_schema": config.response_schema,
                "response_json_schema": config.response_json_schema,
                # Dropped already: the SDK's own walk would find nothing more to drop.
                "include_all_fields": True,
            }
        },
    )
