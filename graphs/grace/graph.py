"""The GRACE graph: one step request per invocation, entered where the state left off; compiled once at start-up."""

from __future__ import annotations

from typing import Any, get_args

from langgraph.graph import START, StateGraph

from graphs.context import AgentContext
from graphs.grace.nodes import Onward, reason, replan_node, take_request
from graphs.grace.state import GraceGraphState


def build_graph() -> Any:
    """take_request → (reason | replan)* → END, each node ending the run once the request has its action.

    - `take_request`: a first call plans (`make_plan`); a later one takes the caller's search results
      (`take_tool_result`) or the user's answer (`take_user_response`), by `routing.route_entry`.
    - `reason` runs a reasoning step of the plan that a model answers (the embedded engine's reasoning
      does no I/O and runs in the node that reaches it, `nodes._settle`); `replan` replaces the plan
      after a trigger.
    - After each, the plan goes on to its next step: reasoning runs here (`reason`), a trigger replans
      (`replan`), and anything else ends the request with its action, run by the node that got there
      (`nodes.ENDINGS`: SEARCH for the caller, ASK_USER with a question or for an intervention,
      COMPLETE or ERROR): then the run goes to END.

    Every node returns `Command(goto=...)`; `destinations` names where each can go (checked against its
    `Command[Literal[...]]` return type in the tests). The entry, judging a fresh result, finding the
    plan's next step and the endings are functions the nodes call rather than nodes of their own
    (`nodes`' docstring says why): a request is two or three graph steps.
    """
    onward = get_args(Onward)
    graph = StateGraph(GraceGraphState, context_schema=AgentContext)
    graph.add_node("take_request", take_request, destinations=onward)
    graph.add_node("reason", reason, destinations=onward)
    graph.add_node("replan", replan_node, destinations=onward)
    graph.add_edge(START, "take_request")
    return graph.compile(name="grace")
