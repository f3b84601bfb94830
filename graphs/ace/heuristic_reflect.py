"""The embedded engine's reflector: judge a trajectory by its test report and ground truth, without a model.

Deterministic rules, grounded in the request:

- verdict: the test report decides when it says pass or fail (failure markers win, "0 failed" is not
  one); otherwise the ground truth does: the answer must contain 90 % of its content tokens.
- each used bullet: after a success, `helpful` when it shares content with the query or the answer (it
  was applied), else `neutral`. After a failure with a ground truth, `harmful` when it put a figure into
  the answer that contradicts the ground truth's figures, or when what it put into the answer has almost
  nothing (< 20 %) in common with the ground truth; otherwise `neutral` (it agrees with the ground truth,
  or played no part). After a failure known only from the test report, `harmful` when the failed answer
  applied it. `neutral` when nothing is known.
- insight: after a failure, one lesson naming what was missing or wrong, the failing checks, the bullets
  that misled and the expected result, phrased so the curator can file it as a bullet that the same kind
  of query will find; after a success that used no bullet, the approach that worked; otherwise none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from contracts.ace import Bullet, BulletEvaluation, Insight, Trajectory
from graphs.text.tokenize import is_function_token, terms, tokenize

Outcome = Literal["success", "failure", "unknown"]

MATCH_COVERAGE = 0.9
"""Share of the ground truth's content tokens the answer must contain to count as correct."""
ALIGNED_SHARE = 0.2
"""Below this share of ground-truth tokens among what a bullet put into a failed answer, the bullet misled."""
EXCERPT_CHARS = 300
MAX_LISTED_TERMS = 8
MAX_FAILING_CHECKS = 3

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
# "5 passed, 0 failed", "no errors", "0 failures" are not failures.
_NOT_FAILURE = re.compile(
    r"\b(?:0|no|zero)\s+(?:failed|failures?|errors?|exceptions?)\b|エラーなし|失敗なし", re.IGNORECASE
)
_FAILURE = re.compile(
    r"\b(?:fail(?:s|ed|ure|ures)?|errors?|exceptions?|traceback|assert(?:ion)?(?:error)?|incorrect|wrong|mismatch)\b"
    r"|✗|❌|失敗|エラー|不正解|誤り|例外",
    re.IGNORECASE,
)
_CITATION = re.compile(r"\[[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}\]")
"""`[shr-00001]`: a bullet id cited in an answer (the extractive generator cites every bullet it quotes)."""
_SUCCESS = re.compile(r"\b(?:pass(?:es|ed)?|success(?:ful)?|succeeded|ok|correct)\b|✓|✅|成功|正解|合格", re.IGNORECASE)


def content_tokens(text: str) -> set[str]:
    """The tokens of `text` that carry content (function words and particles left out)."""
    return {token for token in tokenize(text) if not is_function_token(token)}


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def is_japanese(text: str) -> bool:
    """Whether to phrase a lesson in Japanese (the query is)."""
    return _CJK.search(text) is not None


@dataclass(frozen=True)
class Verdict:
    """How the trajectory went and the evidence for it."""

    outcome: Outcome
    missing: list[str]
    """Content terms of the ground truth the answer lacks."""
    unexpected: list[str]
    """Content terms of the answer that neither the ground truth nor the query has."""
    failing_checks: list[str]
    """Lines of the test report that report a failure."""
    coverage: float | None
    """Share of the ground truth's content tokens found in the answer (None without a ground truth)."""


def report_verdict(test_report: str) -> tuple[Outcome, list[str]]:
    """Pass/fail from a test report, with the lines that report failures."""
    failing = [line.strip() for line in test_report.splitlines() if _FAILURE.search(_NOT_FAILURE.sub("", line))]
    if failing:
        return "failure", failing[:MAX_FAILING_CHECKS]
    if _SUCCESS.search(test_report):
        return "success", []
    return "unknown", []


def judge(trajectory: Trajectory, ground_truth: str, test_report: str) -> Verdict:
    """Decide success or failure and collect what differs between the answer and the ground truth."""
    answer = _CITATION.sub(" ", trajectory.generated_answer)  # an id's digits are not a figure in the answer
    coverage: float | None = None
    missing: list[str] = []
    unexpected: list[str] = []
    answer_outcome: Outcome = "unknown"
    if ground_truth.strip():
        truth_tokens = content_tokens(ground_truth)
        answer_tokens = content_tokens(answer)
        coverage = len(truth_tokens & answer_tokens) / len(truth_tokens) if truth_tokens else 1.0
        answer_outcome = "success" if coverage >= MATCH_COVERAGE else "failure"
        answer_terms = set(terms(answer))
        truth_terms = set(terms(ground_truth))
        query_terms = set(terms(trajectory.query))
        missing = [t for t in terms(ground_truth) if t not in answer_terms][:MAX_LISTED_TERMS]
        unexpected = [t for t in terms(answer) if t not in truth_terms and t not in query_terms][:MAX_LISTED_TERMS]
    outcome, failing = report_verdict(test_report)
    if outcome == "unknown":
        outcome = answer_outcome
    return Verdict(outcome=outcome, missing=missing, unexpected=unexpected, failing_checks=failing, coverage=coverage)


def evaluate_bullets(
    trajectory: Trajectory, ground_truth: str, verdict: Verdict, used: list[Bullet]
) -> list[BulletEvaluation]:
    """One evaluation per used bullet (see the module docstring for the rules)."""
    answer = _CITATION.sub(" ", trajectory.generated_answer)
    applied_tokens = content_tokens(f"{trajectory.query}\n{answer}")
    answer_tokens = content_tokens(answer)
    truth_tokens = content_tokens(ground_truth)
    truth_numbers = {t for t in truth_tokens if t[0].isdigit()}
    evaluations = []
    for bullet in used:
        tokens = content_tokens(bullet.content)
        tag: Literal["helpful", "harmful", "neutral"] = "neutral"
        match verdict.outcome:
            case "success":
                if _shares(tokens, applied_tokens):
                    tag, reason = "helpful", "applied in a trajectory that succeeded"
                else:
                    reason = "used, but the successful answer does not draw on it"
            case "failure" if truth_tokens:
                applied = tokens & answer_tokens
                agreeing = tokens & truth_tokens
                conflicting = {t for t in applied if t[0].isdigit()} - truth_numbers if truth_numbers else set()
                if conflicting:
                    tag = "harmful"
                    reason = f"gave the answer {_listing(conflicting)}; expected {_listing(truth_numbers)}"
                elif len(applied) >= 2 and len(agreeing) < ALIGNED_SHARE * len(applied):
                    tag, reason = "harmful", "applied in the failed answer, but unrelated to the expected result"
                elif agreeing:
                    reason = f"agrees with the ground truth ({_listing(agreeing)}); the failure lies elsewhere"
                else:
                    reason = "used, but unrelated to how the answer went wrong"
            case "failure":
                if _shares(tokens, answer_tokens):
                    tag = "harmful"
                    reason = "applied in an answer that failed: " + (
                        "; ".join(verdict.failing_checks) or "the test report"
                    )
                else:
                    reason = "used, but the failed answer does not draw on it"
            case _:
                reason = "neither a ground truth nor a test verdict to judge it by"
        evaluations.append(BulletEvaluation(bullet_id=bullet.id, tag=tag, reason=excerpt(reason)))
    return evaluations


def _shares(tokens: set[str], other: set[str]) -> bool:
    common = len(tokens & other)
    return common >= 2 or (bool(tokens) and common / len(tokens) >= 0.2)


def _listing(tokens: set[str]) -> str:
    return ", ".join(sorted(tokens)[:MAX_LISTED_TERMS])


def derive_insights(
    trajectory: Trajectory,
    ground_truth: str,
    verdict: Verdict,
    used: list[Bullet],
    evaluations: list[BulletEvaluation],
) -> list[Insight]:
    """At most one lesson (see the module docstring)."""
    japanese = is_japanese(trajectory.query)
    query = excerpt(trajectory.query, 120)
    if verdict.outcome == "failure":
        return [_failure_insight(trajectory, ground_truth, verdict, used, evaluations, japanese=japanese)]
    if verdict.outcome == "success" and not used:
        approach = excerpt(
            trajectory.reasoning_steps[-1] if trajectory.reasoning_steps else trajectory.generated_answer
        )
        lesson = (
            f"「{query}」のような課題では、次の方法で正解した: {approach}"
            if japanese
            else f'For tasks like "{query}", this approach worked: {approach}'
        )
        return [
            Insight(
                reasoning="The trajectory succeeded without any playbook bullet; its approach is worth keeping.",
                error_identification="none",
                root_cause_analysis="none: the task succeeded",
                correct_approach=approach,
                key_insight=lesson,
            )
        ]
    return []


def _failure_insight(
    trajectory: Trajectory,
    ground_truth: str,
    verdict: Verdict,
    used: list[Bullet],
    evaluations: list[BulletEvaluation],
    *,
    japanese: bool,
) -> Insight:
    query = excerpt(trajectory.query, 120)
    problems = []
    if verdict.missing:
        problems.append(f"the answer lacks: {', '.join(verdict.missing)}")
    if verdict.unexpected:
        problems.append(f"the answer contains, unlike the ground truth: {', '.join(verdict.unexpected)}")
    if verdict.failing_checks:
        problems.append(f"failing checks: {' | '.join(excerpt(c, 160) for c in verdict.failing_checks)}")
    harmful = [e.bullet_id for e in evaluations if e.tag == "harmful"]
    if harmful:
        cause = f"playbook bullet(s) {', '.join(harmful)} pointed the answer the wrong way"
    elif not used:
        cause = "no playbook guidance was retrieved for this query, so nothing learned was applied"
    else:
        cause = f"the guidance used ({', '.join(b.id for b in used)}) does not cover what was needed"
    if ground_truth.strip():
        expected = excerpt(ground_truth)
        correct = f"produce the expected result: {expected}"
        lesson = (
            f"「{query}」のような課題の正解は「{expected}」"
            if japanese
            else f'For tasks like "{query}", the expected result is: {expected}'
        )
        wrong_figures = [t for t in verdict.unexpected if t[0].isdigit()]
        if wrong_figures:
            lesson += (
                f"（{', '.join(wrong_figures[:4])} ではない）" if japanese else f" (not {', '.join(wrong_figures[:4])})"
            )
    else:
        checks = "; ".join(excerpt(c, 160) for c in verdict.failing_checks) or "the failing tests"
        correct = f"make these checks pass: {checks}"
        lesson = (
            f"「{query}」のような課題では、次の検査が失敗しないようにする: {checks}"
            if japanese
            else f'For tasks like "{query}", make sure these checks pass: {checks}'
        )
    sources = ["the ground truth"] if ground_truth.strip() else []
    sources += ["the test report"] if verdict.failing_checks else []
    basis = " and ".join(sources) or "the test report"
    return Insight(
        reasoning=f"Compared the generated answer with {basis}; verdict: failure"
        + (f" (ground-truth coverage {verdict.coverage:.0%})" if verdict.coverage is not None else ""),
        error_identification="; ".join(problems) or "the answer was judged wrong",
        root_cause_analysis=cause,
        correct_approach=correct,
        key_insight=lesson,
    )
