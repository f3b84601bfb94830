"""What makes a plan executable, checked the same way for the model's plans, the caller's and our own.

A plan is valid when its step ids are unique, every `depends_on` names another step that exists and
comes earlier (so there is no cycle), each action has what it needs (a search has a query and a known
collection, a question has its text, either with a visible character: `graphs.text.blank`) and there are
at most `max_steps` steps. Problems come back as
`ErrorDetail`s with JSON paths, so the same list serves a 400 for the caller and a re-ask for a model.

`normalize_steps` fixes what can be fixed without guessing (duplicate entries in `depends_on`, steps
listed out of dependency order), so a model that writes a correct DAG in the wrong order is not
re-asked for it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import msgspec

from contracts.common import ErrorDetail
from contracts.grace import PlanStep
from graphs.text.blank import is_blank

KNOWN_ACTIONS = ("rag_search", "reasoning", "ask_user")


def normalize_steps(steps: Sequence[PlanStep]) -> list[PlanStep]:
    """De-duplicate each `depends_on` and, when the dependencies form a DAG, order the steps topologically.

    The order is stable: a step moves only when it depends on a step listed after it. A plan with
    unknown ids or a cycle is returned in its own order, for `plan_errors` to report.
    """
    cleaned = [msgspec.structs.replace(s, depends_on=list(dict.fromkeys(s.depends_on))) for s in steps]
    ids = [s.step_id for s in cleaned]
    if len(set(ids)) != len(ids) or any(d not in ids or d == s.step_id for s in cleaned for d in s.depends_on):
        return cleaned
    ordered: list[PlanStep] = []
    placed: set[int] = set()
    remaining = list(cleaned)
    while remaining:
        ready = next((s for s in remaining if set(s.depends_on) <= placed), None)
        if ready is None:  # a cycle: leave the order alone
            return cleaned
        ordered.append(ready)
        placed.add(ready.step_id)
        remaining.remove(ready)
    return ordered


def find_cycle(steps: Sequence[PlanStep]) -> list[int]:
    """One dependency cycle as a list of step ids (first id repeated at the end), or [] when there is none."""
    graph = {s.step_id: [d for d in s.depends_on if d != s.step_id] for s in steps}
    state: dict[int, int] = {}  # 1 = on the current path, 2 = finished
    path: list[int] = []

    def visit(node: int) -> list[int]:
        state[node] = 1
        path.append(node)
        for nxt in graph.get(node, []):
            if nxt not in graph:
                continue
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return []

    for node in graph:
        if node not in state and (cycle := visit(node)):
            return cycle
    return []


def plan_errors(
    steps: Sequence[PlanStep], *, collections: Collection[str], max_steps: int, path: str = "$.steps"
) -> list[ErrorDetail]:
    """Every reason the plan cannot run, each with the JSON path of the offending field."""
    errors: list[ErrorDetail] = []
    if not steps:
        return [ErrorDetail(path=path, message="a plan needs at least one step")]
    if len(steps) > max_steps:
        errors.append(ErrorDetail(path=path, message=f"a plan may have at most {max_steps} steps, got {len(steps)}"))
    position: dict[int, int] = {}
    for i, step in enumerate(steps):
        if step.step_id in position:
            errors.append(ErrorDetail(path=f"{path}[{i}].step_id", message=f"duplicate step_id {step.step_id}"))
        else:
            position[step.step_id] = i
    for i, step in enumerate(steps):
        errors += _step_errors(step, f"{path}[{i}]", collections)
        errors += _dependency_errors(step, i, f"{path}[{i}]", position)
    cycle = find_cycle(steps)
    if cycle:
        chain = " -> ".join(map(str, cycle))
        errors.append(ErrorDetail(path=path, message=f"depends_on forms a cycle: {chain}"))
    return errors


def _dependency_errors(step: PlanStep, index: int, where: str, position: dict[int, int]) -> list[ErrorDetail]:
    """A step may only wait for an earlier step, so a plan runs in its written order without a scheduler."""
    errors: list[ErrorDetail] = []
    for j, dep in enumerate(step.depends_on):
        at = f"{where}.depends_on[{j}]"
        if dep == step.step_id:
            errors.append(ErrorDetail(path=at, message=f"step {dep} cannot depend on itself"))
        elif dep not in position:
            errors.append(ErrorDetail(path=at, message=f"depends on step {dep}, which does not exist"))
        elif position[dep] > index:
            errors.append(ErrorDetail(path=at, message=f"depends on step {dep}, which comes later"))
    return errors


def _step_errors(step: PlanStep, where: str, collections: Collection[str]) -> list[ErrorDetail]:
    errors: list[ErrorDetail] = []
    # Blank as a caller's query is blank (`is_blank`): a zero-width space has nothing to search for or ask.
    if step.action == "rag_search" and is_blank(step.query):
        errors.append(ErrorDetail(path=f"{where}.query", message="a rag_search step needs a query"))
    # Any step's collection, not only a search's: the plan is echoed back, and a reasoning step naming a
    # collection nobody has would be shown as if it drew on it.
    if step.collection is not None and step.collection not in collections:
        known = ", ".join(sorted(collections)) or "(none)"
        errors.append(
            ErrorDetail(path=f"{where}.collection", message=f"unknown collection {step.collection!r}; known: {known}")
        )
    if step.action == "ask_user" and is_blank(step.description) and is_blank(step.query):
        errors.append(ErrorDetail(path=f"{where}.description", message="an ask_user step needs the question"))
    if step.fallback == step.action and step.action != "rag_search":
        errors.append(
            ErrorDetail(path=f"{where}.fallback", message=f"fallback must differ from the action {step.action!r}")
        )
    return errors


def renumber(steps: Sequence[PlanStep], start: int) -> list[PlanStep]:
    """Give the steps the ids start, start+1, ... in order, rewriting `depends_on` that point among them.

    Dependencies on ids outside `steps` (steps kept from an earlier plan) are left as they are.
    """
    mapping = {s.step_id: start + i for i, s in enumerate(steps)}
    return [
        msgspec.structs.replace(s, step_id=mapping[s.step_id], depends_on=[mapping.get(d, d) for d in s.depends_on])
        for s in steps
    ]


def as_messages(errors: Sequence[ErrorDetail]) -> list[str]:
    """The errors as `path: message` lines, the form a re-ask lists them in."""
    return [f"{e.path}: {e.message}" for e in errors]
