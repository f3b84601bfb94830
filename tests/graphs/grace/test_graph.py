"""The GRACE graph's wiring: every `Command` destination is declared in `build_graph`, and replan routes itself."""

from __future__ import annotations

import asyncio
import typing
from typing import Any, Literal, get_args, get_origin

import msgspec
import pytest
from langgraph.runtime import Runtime
from langgraph.types import Command

from contracts.grace import ReplanRecord
from graphs.grace import nodes
from graphs.grace.graph import build_graph
from graphs.grace.replan import Trigger
from graphs.grace.state import GraceGraphState
from tests.graphs.grace.test_replan import CONTEXT, PLAN, session


def _command_destinations(node: Any) -> tuple[str, ...]:
    """The targets a node's `Command[Literal[...]]` return annotation names (empty for a plain update)."""
    returned = typing.get_type_hints(node)["return"]
    if get_origin(returned) is not Command:
        return ()
    (literal,) = get_args(returned)
    assert get_origin(literal) is Literal
    return get_args(literal)


def test_every_command_destination_is_declared_in_build_graph() -> None:
    builder = build_graph().builder
    routing = {name: spec for name, spec in builder.nodes.items() if _command_destinations(spec.runnable.afunc)}
    assert set(routing) == {"make_plan", "take_tool_result", "take_user_response", "reason", "replan"}
    for name, spec in routing.items():
        assert set(spec.ends) == set(_command_destinations(spec.runnable.afunc)), name


@pytest.mark.parametrize(("used", "goto"), [(0, "emit_search"), (2, "finish")])
def test_replan_runs_the_new_plan_or_finishes_at_the_limit(used: int, goto: str) -> None:
    record = ReplanRecord(trigger="STEP_FAILURE", strategy="PARTIAL", step_id=1, turn=1)
    state = msgspec.structs.replace(session(PLAN, []), replans=[record] * used)
    update: GraceGraphState = {"session": state, "trigger": Trigger("STEP_FAILURE", PLAN[0]), "max_replans": 2}
    command = asyncio.run(nodes.replan_node(update, Runtime(context=CONTEXT)))
    assert command.goto == goto
    assert isinstance(command.update, dict)
    if goto == "finish":
        assert command.update["finish"] == "replan_limit"
        assert [e.type for e in command.update["events"]] == ["replan_limit"]
    else:
        assert len(command.update["session"].replans) == 1
        assert command.update["trigger"] is None
