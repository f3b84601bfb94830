"""`gemini_reply` drops what google-genai's own walk drops, and parses a reply into the SDK's response."""

from __future__ import annotations

import copy
import typing
from typing import Any

import pydantic
import pytest
from google.genai import _common, types
from google.genai.models import _GenerateContentResponse_from_mldev
from hypothesis import given, settings
from hypothesis import strategies as st

from graphs.llm import gemini_reply
from graphs.llm.gemini_reply import prune, reply_from


def _models(root: type[pydantic.BaseModel]) -> list[type[pydantic.BaseModel]]:
    """`root` and every model its fields name, however deep (the classes a reply's objects are read as).

    Less pydantic's `BaseModel` itself (`parsed` may hold any model): it has no fields, and walking an object
    under a `parsed` key fails in both walks alike (the generated replies check that).
    """
    found: list[type[pydantic.BaseModel]] = []
    waiting = [root]
    while waiting:
        model = waiting.pop()
        if model in found:
            continue
        found.append(model)
        model.model_rebuild(raise_errors=False)
        for info in model.model_fields.values():
            pending = [info.annotation]
            while pending:
                annotation = pending.pop()
                if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
                    if annotation is pydantic.BaseModel:
                        continue
                    waiting.append(annotation)
                pending.extend(typing.get_args(annotation))
    return found


MODELS = _models(types.GenerateContentResponse)
KEYS = sorted(
    {key for model in MODELS for name, info in model.model_fields.items() for key in (name, info.alias) if key}
    | {"unknownField", "newer_api_field", "x"}
)
"""Every field name and alias of every model a reply holds, and a few no model knows: placed at random, each is
known at some depths, unknown at others."""

_scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["STOP", "text", "", "MODE_UNSPECIFIED"])
junk = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=4),
    max_leaves=12,
)
"""Any JSON value, its objects keyed by the models' own field names and aliases (and unknown ones): known at some
depths, unknown at others."""
MAX_DEPTH = 7


def _value_models(annotation: Any) -> tuple[type[pydantic.BaseModel] | None, type[pydantic.BaseModel] | None]:
    """The model of an object this field holds, and the model of the objects in a list it holds (from the types
    alone, not from the walk under test)."""
    for arg in (annotation, *typing.get_args(annotation)):
        if isinstance(arg, type) and issubclass(arg, pydantic.BaseModel) and arg is not pydantic.BaseModel:
            return arg, None
        if typing.get_origin(arg) is list:
            item = typing.get_args(arg)[0]
            if isinstance(item, type) and issubclass(item, pydantic.BaseModel):
                return None, item
    return None, None


@st.composite
def shaped(draw: st.DrawFn, model: type[pydantic.BaseModel], depth: int = 0) -> dict[str, Any]:
    """An object shaped after `model`: some of its fields (by name or alias), objects and lists of objects shaped
    after theirs, a wrong value now and then, and keys no model knows, down to `MAX_DEPTH`."""
    reply: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        value_model, item_model = _value_models(info.annotation)
        if draw(st.integers(0, 1 if value_model or item_model else 5)):  # objects and lists of them more often
            continue
        key = draw(st.sampled_from([name, info.alias] if info.alias else [name]))
        if depth < MAX_DEPTH and value_model is not None:
            reply[key] = draw(shaped(value_model, depth + 1) | junk) if draw(st.integers(0, 5)) else draw(junk)
        elif depth < MAX_DEPTH and item_model is not None:
            items = st.lists(shaped(item_model, depth + 1) | junk, max_size=3)
            reply[key] = draw(items) if draw(st.integers(0, 5)) else draw(junk)
        else:
            reply[key] = draw(junk)
    reply |= draw(st.dictionaries(st.sampled_from(["unknownField", "newer_api_field", "x"]), junk, max_size=2))
    return reply


@settings(max_examples=300, deadline=None)
@given(shaped(types.GenerateContentResponse))
def test_the_same_keys_are_dropped_as_by_the_sdks_walk(reply: dict[str, Any]) -> None:
    assert _walked(prune, reply) == _walked(_common._remove_extra_fields, reply)


def _walked(walk: Any, reply: dict[str, Any]) -> tuple[object, dict[str, Any]]:
    """The type of the error `walk` raises on a copy of `reply` (None), and what it leaves of the copy."""
    kept = copy.deepcopy(reply)
    try:
        walk(types.GenerateContentResponse, kept)
    except Exception as error:
        return type(error), kept
    return None, kept


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.__name__)
def test_each_model_plan_keeps_every_field_name_and_alias(model: type[pydantic.BaseModel]) -> None:
    plan = gemini_reply._plan(model)
    assert set(plan) == {key for name, info in model.model_fields.items() for key in (name, info.alias) if key}


REPLY = {
    "candidates": [
        {
            "content": {"parts": [{"text": '{"a": 1}', "futurePart": {"x": 1}}], "role": "model"},
            "finishReason": "STOP",
            "index": 0,
            "safetyRatings": [{"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "NEGLIGIBLE", "extra": 1}],
            "someNewField": [1, 2],
        }
    ],
    "usageMetadata": {
        "promptTokenCount": 12,
        "candidatesTokenCount": 3,
        "totalTokenCount": 15,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 12, "future": True}],
    },
    "modelVersion": "gemini-2.5-flash",
    "responseId": "r1",
    "brandNewTopLevel": {"nested": {"deeper": 1}},
}
"""A reply with fields no model of the pinned SDK knows, at the top, in a candidate, a part and a rating."""


@pytest.mark.parametrize(
    "config",
    [
        types.GenerateContentConfig(),
        types.GenerateContentConfig(response_mime_type="application/json", response_json_schema={"type": "object"}),
    ],
    ids=["plain", "json schema"],
)
def test_the_response_is_the_one_the_sdk_parses(config: types.GenerateContentConfig) -> None:
    sdk_kwargs: dict[str, object] = {
        "config": {
            "response_schema": config.response_schema,
            "response_json_schema": config.response_json_schema,
            "include_all_fields": None,
        }
    }
    theirs = types.GenerateContentResponse._from_response(
        response=_GenerateContentResponse_from_mldev(copy.deepcopy(REPLY), None, None), kwargs=sdk_kwargs
    )
    ours = reply_from(_GenerateContentResponse_from_mldev(copy.deepcopy(REPLY), None, None), config)
    assert ours == theirs
    assert ours.parsed == theirs.parsed
    assert ours.candidates
    assert ours.candidates[0].content
    assert ours.candidates[0].content.parts
    assert ours.candidates[0].content.parts[0].text == '{"a": 1}'


def test_a_config_asking_for_every_field_keeps_them_as_the_sdk_does() -> None:
    """With `include_all_fields` nothing is dropped, and the SDK's models then refuse the unknown field."""
    config = types.GenerateContentConfig()
    object.__setattr__(config, "include_all_fields", True)  # a field this SDK's config does not declare
    with pytest.raises(pydantic.ValidationError, match="brandNewTopLevel"):
        reply_from(copy.deepcopy(REPLY), config)
