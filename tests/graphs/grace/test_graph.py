"""The GRACE graph's wiring: every `Command` destination is declared in `build_graph`; what the nodes run."""

from __future__ import annotations

import asyncio
import typing
from typing import Any, Literal, get_args, get_origin

import msgspec
import pytest
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Command

from contracts.grace import GraceState, ReplanRecord
from graphs.grace import nodes, routing
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
    assert set(routing) == {"take_request", "reason", "replan"}
    for name, spec in routing.items():
        assert set(spec.ends) == set(_command_destinations(spec.runnable.afunc)), name


def test_every_ending_and_entry_a_move_names_has_a_function() -> None:
    """`_settle` runs an ending by name and `take_request` an entry by name: none may be missing."""
    assert set(nodes.ENDINGS) == set(get_args(nodes.Ending))
    assert nodes.RUN_END == END
    entries = get_args(typing.get_type_hints(routing.route_entry)["return"])
    assert set(nodes.ENTRIES) == set(entries)


def _sealed(state: GraceState) -> str:
    return f"sealed:{state.turn}:{state.pending.kind if state.pending else None}"


@pytest.mark.parametrize(("used", "action", "ended"), [(0, "SEARCH", "step_started"), (2, "ERROR", "replan_limit")])
def test_replan_runs_the_new_plan_or_finishes_at_the_limit(used: int, action: str, ended: str) -> None:
    """Either way this request ends here: the node runs the ending its move leads to and goes to END.

    A new plan starts with a search (SEARCH for the caller); at the limit with nothing found, `finish`
    has no answer to give (ERROR LOOP_LIMIT).
    """
    record = ReplanRecord(trigger="STEP_FAILURE", strategy="PARTIAL", step_id=1, turn=1)
    state = msgspec.structs.replace(session(PLAN, []), replans=[record] * used)
    update: GraceGraphState = {
        "session": state,
        "trigger": Trigger("STEP_FAILURE", PLAN[0]),
        "max_replans": 2,
        "prior": None,
        "events": [],
    }
    context = CONTEXT.for_request(timeout_s=30, seal_state=_sealed)
    command = asyncio.run(nodes.replan_node(update, Runtime(context=context)))
    assert command.goto == END
    assert isinstance(command.update, dict)
    outcome = command.update["outcome"]
    wire = msgspec.to_builtins(outcome)
    assert wire["action"] == action
    types = [e.type for e in command.update["events"]]
    assert types[-1] == ended
    if action != "ERROR":  # an action carries every event of the request, numbered
        assert [e["type"] for e in wire["events"]] == types
        assert [e["index"] for e in wire["events"]] == list(range(len(types)))
    if used == 2:
        assert command.update["finish"] == "replan_limit"
        assert types == ["replan_limit"]
    else:
        assert len(command.update["session"].replans) == 1
        assert command.update["trigger"] is None
        assert types[0] == "replanned"
