"""What a request must carry, given the state it comes with; checked before the graph runs.

The state is the only memory between calls and comes back from the client, so before anything runs
the server (1) checks that the state is internally consistent — a pending request the plan can
explain, a replan count equal to the replan records and the plan's revision, thresholds ordered and
within their bounds, no id above the ids the session handed out — and (2) checks that the request
answers exactly what that state is waiting for: a `tool_result` for the pending SEARCH's step, a
`user_response` for the pending ASK_USER, nothing else. Each state is bound to its turn: answering a
step that an older or newer state asked for is refused, and a finished session takes no more steps.
Every refusal is an `InvalidInput` (400) naming the JSON path, raised before any state is produced,
so the client's state is untouched and still good for a corrected request.
"""

from __future__ import annotations

from contracts.common import ErrorDetail
from contracts.grace import MAX_PLAN_STEPS, MAX_STEP_ID, GraceRequest, GraceState, PlanStep, SearchCollection
from graphs.config_files import GraceConfig
from graphs.errors import InvalidInput
from graphs.grace.intervention import input_required, thresholds_problem
from graphs.grace.plan_rules import plan_errors
from graphs.text.blank import is_blank
from graphs.text.normalize import normalize


def _refuse(path: str, message: str) -> InvalidInput:
    return InvalidInput(message, [ErrorDetail(path=path, message=message)])


def session_collections(request: GraceRequest, config: GraceConfig) -> list[SearchCollection]:
    """The collections of a new session: the request's, else the configured defaults."""
    if request.collections:
        return list(request.collections)
    return [SearchCollection(name=c.name, description=c.description) for c in config.default_collections]


def check_request(request: GraceRequest, prior: GraceState | None, config: GraceConfig) -> None:
    """Raise `InvalidInput` unless the request is a valid first call or answers what `prior` is waiting for."""
    if prior is None:
        _check_first(request, config)
        return
    check_state(prior, config)
    _check_continuation(request, prior)


def _check_first(request: GraceRequest, config: GraceConfig) -> None:
    if is_blank(request.query):
        raise _refuse("$.query", "query is required on the first call (state: null), with visible text")
    if request.tool_result is not None:
        raise _refuse("$.tool_result", "nothing was asked yet: send tool_result only to answer a SEARCH")
    if request.user_response is not None:
        raise _refuse("$.user_response", "nothing was asked yet: send user_response only to answer an ASK_USER")
    names = [c.name for c in request.collections or []]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise _refuse(f"$.collections[{i}].name", f"collection {name!r} is listed twice")
    collections = session_collections(request, config)
    if not collections:
        raise _refuse("$.collections", "name at least one collection to search (no default is configured)")
    if request.plan_steps is not None:
        errors = plan_errors(
            request.plan_steps,
            collections={c.name for c in collections},
            max_steps=config.planner.max_steps,
            path="$.plan_steps",
        )
        errors += _id_room_errors(request.plan_steps, config)
        if errors:
            raise InvalidInput("plan_steps is not an executable plan: " + "; ".join(e.message for e in errors), errors)


def _id_room_errors(steps: list[PlanStep], config: GraceConfig) -> list[ErrorDetail]:
    """Step ids too high to leave room for the steps replans add above the plan's highest id.

    Each replan numbers its new steps from the session's highest id + 1, up to `planner.max_steps` of them,
    at most `replan.max_replans` times: a plan ending at 1,000,000 got a replanned step 1,000,001, past the
    contract, and its session could not go on.
    """
    highest = MAX_STEP_ID - config.replan.max_replans * config.planner.max_steps
    return [
        ErrorDetail(
            path=f"$.plan_steps[{i}].step_id",
            message=f"step ids go up to {highest:,}: the {MAX_STEP_ID - highest} above are for the steps replans add",
        )
        for i, step in enumerate(steps)
        if step.step_id > highest
    ]


def _inconsistent(path: str, message: str) -> InvalidInput:
    return _refuse(f"$.state.data{path}", f"state is inconsistent: {message}")


def check_state(state: GraceState, config: GraceConfig) -> None:
    """Raise `InvalidInput` unless the state could have been produced by this service (edits show up here)."""
    if state.done:
        raise _refuse("$.state", "this session is finished (COMPLETE was sent); start a new one with state: null")
    if len(state.replans) > config.replan.max_replans or state.plan.revision != len(state.replans):
        raise _inconsistent(".replans", "the replan count does not match the plan's revision or exceeds the limit")
    names = {c.name for c in state.collections}
    if not names:
        raise _inconsistent(".collections", "no collection")
    errors = plan_errors(state.plan.steps, collections=names, max_steps=MAX_PLAN_STEPS, path="$.state.data.plan.steps")
    if errors:
        raise InvalidInput("state is inconsistent: the plan is not executable", errors)
    if any(s.action == "rag_search" and s.collection is None for s in state.plan.steps):
        # The planner gives every search step a collection before a state is issued.
        raise _inconsistent(".plan.steps", "a rag_search step without a collection")
    result_ids = [r.step_id for r in state.results]
    ids = [s.step_id for s in state.plan.steps] + result_ids
    if max(ids) > state.max_step_id or len(set(result_ids)) != len(result_ids):
        raise _inconsistent(".results", "step ids beyond the ones issued, or a step with two results")
    problem = thresholds_problem(state.thresholds, config)
    if problem:
        raise _inconsistent(".thresholds", problem)
    _check_evidence(state)
    _check_pending(state)


def _check_evidence(state: GraceState) -> None:
    """Evidence and citations must trace back to searches the state records, or an answer could cite nothing."""
    searched = {r.step_id for r in state.results if r.action == "rag_search"}
    if any(e.step_id not in searched for e in state.evidence):
        raise _inconsistent(".evidence", "evidence from a step that did not search")
    if any(i >= len(state.evidence) or i < 0 for c in state.citations for i in c.evidence):
        raise _inconsistent(".citations", "a citation points past the evidence")


def _check_pending(state: GraceState) -> None:
    pending = state.pending
    if pending is None or pending.turn != state.turn:
        raise _inconsistent(".pending", "the pending request is missing or from another turn")
    steps = {s.step_id: s for s in state.plan.steps}
    results = {r.step_id: r for r in state.results}
    step = steps.get(pending.step_id) if pending.step_id is not None else None
    if pending.kind == "SEARCH":
        ok = step is not None and step.action == "rag_search" and step.step_id not in results
    elif pending.ask_kind == "PLAN":
        ok = pending.step_id is None and state.plan.requires_confirmation and not state.plan_confirmed
    elif pending.ask_kind == "QUESTION":
        ok = step is not None and step.action == "ask_user" and step.step_id not in results
    else:
        result = results.get(pending.step_id) if pending.step_id is not None else None
        ok = (
            step is not None
            and result is not None
            and result.detail is not None
            and result.detail.decision == pending.ask_kind
        )
    if not ok:
        raise _inconsistent(".pending", "the pending request does not match the plan and its results")


def _check_continuation(request: GraceRequest, prior: GraceState) -> None:
    if request.query is not None and normalize(request.query) != normalize(prior.query):
        raise _refuse("$.query", "this state belongs to another question")
    if request.collections is not None and list(request.collections) != prior.collections:
        raise _refuse("$.collections", "collections are fixed by the first call")
    # What only a first call takes, sent at all (confirm_plan: false is its default, the same as leaving it out).
    late = {"plan_steps": request.plan_steps is not None, "confirm_plan": request.confirm_plan}
    if any(late.values()):
        details = [
            ErrorDetail(path=f"$.{name}", message=f"{name} is accepted on the first call only")
            for name, sent in late.items()
            if sent
        ]
        raise InvalidInput("; ".join(d.message for d in details), details)
    pending = prior.pending
    assert pending is not None  # check_state guarantees it
    if pending.kind == "SEARCH":
        _check_tool_result(request, pending.step_id)
    else:
        _check_user_response(request, pending.step_id, pending.ask_kind)
    answer = request.tool_result or request.user_response
    if answer is not None and answer.turn is not None and answer.turn != pending.turn:
        where = "$.tool_result.turn" if request.tool_result is not None else "$.user_response.turn"
        raise _refuse(
            where,
            f"this answers turn {answer.turn}, but the state is waiting for the answer to turn {pending.turn} "
            "(replayed or mixed-up state)",
        )


def _check_tool_result(request: GraceRequest, step_id: int | None) -> None:
    if request.user_response is not None:
        raise _refuse(
            "$.user_response", f"nothing was asked of the user: the pending action is a SEARCH (step {step_id})"
        )
    result = request.tool_result
    if result is None:
        raise _refuse(
            "$.tool_result", f"tool_result is required: the pending SEARCH (step {step_id}) needs its results"
        )
    if result.step_id != step_id:
        raise _refuse(
            "$.tool_result.step_id",
            f"step {result.step_id} is not the pending SEARCH (step {step_id}); "
            "this state was issued for another step (replayed or mixed-up state)",
        )
    if result.error is not None and is_blank(result.error):
        raise _refuse(
            "$.tool_result.error",
            "error must say what failed (it holds only whitespace or invisible characters); "
            "leave it out when the search worked",
        )
    for i, hit in enumerate(result.hits):
        if hit.score is not None and not 0.0 <= hit.score <= 1.0:
            raise _refuse(
                f"$.tool_result.hits[{i}].score",
                f"score {hit.score} is out of range: GRACE scores are relevance in [0, 1] (e.g. cosine similarity)",
            )


def _check_user_response(request: GraceRequest, step_id: int | None, kind: str | None) -> None:
    if request.tool_result is not None:
        raise _refuse("$.tool_result", "no SEARCH is pending: the pending action is an ASK_USER")
    response = request.user_response
    if response is None:
        raise _refuse("$.user_response", "user_response is required: the pending action is an ASK_USER")
    if response.step_id is not None and response.step_id != step_id:
        raise _refuse(
            "$.user_response.step_id",
            f"step {response.step_id} is not the one asked about (step {step_id}); "
            "this state was issued for another question",
        )
    if response.feedback is not None and kind not in ("CONFIRM", "ESCALATE"):
        raise _refuse(
            "$.user_response.feedback",
            f"feedback rates a step's answer and is read after a CONFIRM or ESCALATE ask; this ask is a {kind}, "
            "so nothing would read it",
        )
    if kind == "PLAN" and response.decision == "PROCEED" and not is_blank(response.input):
        raise _refuse(
            "$.user_response.input",
            "PROCEED approves the plan as it is and reads no input; to change the plan, send MODIFY with your input",
        )
    if kind == "PLAN" and response.decision == "MODIFY" and is_blank(response.input):
        raise _refuse(
            "$.user_response.input",
            "MODIFY on a PLAN ask needs input saying what to change (without it the plan would be made again "
            "from the question alone, and a plan you sent in plan_steps would be dropped)",
        )
    if (
        response.decision == "PROCEED"
        and kind in ("ESCALATE", "QUESTION")
        and input_required(kind)  # type: ignore[arg-type]
        and is_blank(response.input)
    ):
        raise _refuse("$.user_response.input", f"input is required to proceed after an ASK_USER of kind {kind}")
