"""The one way an agent runs its compiled graph for a whole step: `run_to_output`.

Every agent's graph ends in a node that writes one channel (`outcome`: the response, or the action
with its next state) and the runner needs nothing else from the run. How LangGraph is asked for it
matters for CPU (`python -m bench.graph_invocation` measures each way on the same graphs):

- `ainvoke` streams `["updates", "values"]` under the hood, to collect interrupts none of our graphs
  raise: every superstep builds both an update record and a snapshot of every channel;
- a values stream (`astream(stream_mode="values")`) drops the updates but still snapshots every
  channel after every superstep;
- a values stream restricted to the one output channel (`output_keys=<channel>`) emits only when
  that channel is written, once per run, and yields its value itself: about 8 % less than `ainvoke`
  for a 2-step graph, the cheapest way measured (an updates stream, `durability`, or dropping the
  callbacks did not beat it; there is no checkpointer to switch off).
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from graphs.context import AgentContext

OUTPUT_CHANNEL = "outcome"
"""The channel every agent's last node writes: what the step answers."""


async def run_to_output(
    graph: Any,
    inputs: dict[str, Any],
    context: AgentContext,
    *,
    config: RunnableConfig | None = None,
    channel: str = OUTPUT_CHANNEL,
) -> Any:
    """Run `graph` on `inputs` to the end and return the last value its nodes wrote to `channel`.

    Args:
        graph: A compiled LangGraph graph whose context schema is `AgentContext`.
        inputs: The graph's input state.
        context: The request's context, handed to every node as `runtime.context`.
        config: LangGraph run config (e.g. GRACE's `recursion_limit`).
        channel: The output channel; the graph must write it in every run.

    Raises:
        RuntimeError: The run ended without writing `channel` (a bug in the graph, never the caller's input).
    """
    stream = graph.astream(inputs, config, context=context, stream_mode="values", output_keys=channel)
    written = [value async for value in stream]
    if not written:
        raise missing_output(channel)
    return written[-1]


def missing_output(channel: str = OUTPUT_CHANNEL) -> RuntimeError:
    """The error for a run that ended without writing its output channel: a bug in the graph, never the input.

    Raised, not asserted: `python -O` strips asserts, and the caller would then fail further on, on a None
    or an IndexError, far from the cause.
    """
    return RuntimeError(f"the graph ended without setting `{channel}`: every run must end in a node that does")
