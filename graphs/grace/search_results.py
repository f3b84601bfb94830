"""The caller's answer to a SEARCH → a StepResult and the evidence kept for later steps (seed 002 §8.6 RAGSearchTool).

The hits are ranked by score (unscored hits after scored ones, in the caller's order), exact repeats
and hits with no visible text (`graphs.text.blank`) dropped, the best `executor.max_hits_per_step` kept
with snippets cut to `executor.snippet_chars`, and the confidence factors measured on what was kept. A
tool error carries the `tool_failure` penalty and, when nothing came back, fails the step.
"""

from __future__ import annotations

from contracts.grace import Evidence, PlanStep, StepResult, Thresholds, ToolResult
from graphs.config_files import GraceConfig
from graphs.grace.confidence import ScoredText, measure, score_step
from graphs.grace.wording import say
from graphs.text.blank import is_blank


def keep_hits(tool_result: ToolResult, config: GraceConfig) -> list[Evidence]:
    """The hits worth keeping for reasoning, best first, as Evidence (no id or text that was not sent)."""
    order = sorted(
        range(len(tool_result.hits)),
        key=lambda i: (tool_result.hits[i].score is None, -(tool_result.hits[i].score or 0.0), i),
    )
    kept: list[Evidence] = []
    seen: set[tuple[str, str | None, int | None, str]] = set()
    for i in order:
        hit = tool_result.hits[i]
        key = (hit.document_id, hit.chunk_id, hit.page, hit.snippet)
        if key in seen or is_blank(hit.snippet):  # nothing visible to quote or to measure
            continue
        seen.add(key)
        kept.append(
            Evidence(
                step_id=tool_result.step_id,
                document_id=hit.document_id,
                snippet=hit.snippet[: config.executor.snippet_chars],
                page=hit.page,
                chunk_id=hit.chunk_id,
                score=hit.score,
            )
        )
        if len(kept) == config.executor.max_hits_per_step:
            break
    return kept


def as_scored(evidence: list[Evidence]) -> list[ScoredText]:
    """Evidence in the form confidence measures."""
    return [ScoredText(document_id=e.document_id, text=e.snippet, score=e.score) for e in evidence]


def search_result(
    step: PlanStep, tool_result: ToolResult, config: GraceConfig, thresholds: Thresholds, query: str
) -> tuple[StepResult, list[Evidence]]:
    """The StepResult of a `rag_search` step and the evidence it contributes.

    An error with no hits fails the step (a replan follows); an error with hits is a partial
    failure: the hits are used and the score carries the `tool_failure` penalty.
    """
    collection = step.collection or ""
    evidence = keep_hits(tool_result, config)
    failed = tool_result.error is not None
    detail = score_step(measure(as_scored(evidence)), "rag_search", config, thresholds, tool_failed=failed)
    if failed and not evidence:
        result = StepResult(
            step_id=step.step_id,
            action="rag_search",
            status="failed",
            confidence=detail.score,
            detail=detail,
            error=tool_result.error or "the search failed",
        )
        return result, []
    documents = list(dict.fromkeys(e.document_id for e in evidence))
    output = (
        say("search_output", query, collection=collection, count=len(evidence), documents=", ".join(documents[:10]))
        if evidence
        else say("search_empty", query, collection=collection)
    )
    result = StepResult(
        step_id=step.step_id,
        action="rag_search",
        status="success",
        output=output,
        confidence=detail.score,
        sources=documents,
        detail=detail,
        error=tool_result.error,
    )
    return result, evidence
