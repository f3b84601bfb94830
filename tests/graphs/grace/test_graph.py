"""The GRACE graph's wiring: every `Command` destination is declared in `build_graph`; what the nodes run."""

from __future__ import annotations

import asyncio
import dataclasses
import typing
from typing import Any, Literal, get_args, get_origin

import msgspec
import pytest
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Command

from contracts.grace import GraceRequest, GraceState, ReplanRecord, ToolResult
from contracts.librarian import SearchHit
from graphs.context import AgentContext
from graphs.grace import nodes, routing
from graphs.grace import run as grace_run
from graphs.grace.graph import build_graph
from graphs.grace.replan import Trigger
from graphs.grace.state import GraceGraphState
from tests.graphs.grace.helpers import STRONG_TOWER_HITS, TOWER_QUESTION
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


def _answer_the_search(context: AgentContext) -> Command[Any]:
    """The tower question planned (search, then reasoning), then its search answered in `context`."""
    sealed: list[GraceState] = []

    def seal(state: GraceState) -> str:
        sealed.append(state)
        return "v1.x.y"

    embedded = CONTEXT.for_request(timeout_s=30, seal_state=seal)
    asking = grace_run._inputs(embedded, GraceRequest(query=TOWER_QUESTION), None)
    asyncio.run(nodes.take_request(asking, Runtime(context=embedded)))
    (prior,) = sealed  # the state the SEARCH action carries
    assert prior.pending is not None
    assert prior.pending.kind == "SEARCH"
    assert prior.pending.step_id is not None
    assert [s.action for s in prior.plan.steps] == ["rag_search", "reasoning"]
    hits = msgspec.convert(STRONG_TOWER_HITS, list[SearchHit])
    answered = GraceRequest(state="v1.x.y", tool_result=ToolResult(step_id=prior.pending.step_id, hits=hits))
    return asyncio.run(nodes.take_request(grace_run._inputs(context, answered, prior), Runtime(context=context)))


def test_the_embedded_engine_reasons_in_the_node_that_took_the_search() -> None:
    """No model: the reasoning step after the search runs in `take_request`, which then ends the request."""
    command = _answer_the_search(CONTEXT.for_request(timeout_s=30, seal_state=_sealed))
    assert command.goto == END
    assert isinstance(command.update, dict)
    assert msgspec.to_builtins(command.update["outcome"])["action"] == "COMPLETE"
    finished = [e.step_id for e in command.update["events"] if e.type == "step_finished"]
    assert finished == [1, 2]  # the search's step, then the reasoning step's


def test_with_a_model_reasoning_stays_a_graph_step_of_its_own() -> None:
    """A model's reasoning waits for its answer: the search's records reach the stream before it starts."""
    model = typing.cast(Any, object())  # never called: the node stops before the reasoning step
    with_model = dataclasses.replace(CONTEXT, llm=model).for_request(timeout_s=30, seal_state=_sealed)
    command = _answer_the_search(with_model)
    assert command.goto == "reason"
    assert isinstance(command.update, dict)
    assert "outcome" not in command.update


def test_reasoning_in_place_stops_at_the_end_of_the_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug that kept routing to reasoning cannot loop for ever: past the plan's last step it is an error."""

    async def again(state: GraceGraphState, runtime: Runtime[AgentContext]) -> Command[Any]:
        return Command(update={"events": []}, goto="reason")

    monkeypatch.setattr(nodes, "_reasoned", again)
    with pytest.raises(RuntimeError, match="past the plan's last step"):
        _answer_the_search(CONTEXT.for_request(timeout_s=30, seal_state=_sealed))
