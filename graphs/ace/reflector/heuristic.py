"""The embedded engine's reflector: judge a trajectory by its test report and ground truth, without a model.

Deterministic rules, grounded in the request:

- verdict: the test report decides when it says pass or fail (failure markers win, "0 failed" is not
  one); otherwise the ground truth does: the answer must contain 90 % of its content tokens.
- each used bullet: after a success, `helpful` when it shares content with the query or the answer (it
  was applied), else `neutral`. After a failure with a ground truth, `harmful` only when the bullet said
  something the ground truth contradicts: a figure it put into the answer that conflicts with the
  ground truth's figure in the same role (same kind and unit: `graphs.text.contradiction`; list
  numbering such as "(1)…(5)", dates against counts, and ids are not figures in conflict), or a
  statement of opposite polarity ("always paginate" against "do not paginate"); otherwise `neutral`
  (it agrees with the ground truth, or played no part). After a failure known only from the test
  report, `harmful` when the failed answer applied it. `neutral` when nothing is known.
- insight: after a failure, one lesson phrased as a reusable strategy: what to do for this kind of
  task (named by its topic, not by quoting the question), the action the ground truth calls for (give
  the exact figure, the date, follow the procedure, name the specific answer; or make the failing
  checks pass), the fact or checks it rests on, and a warning about the bullets that misled. After a
  success that used no bullet, the approach that worked, as a strategy for the topic. Otherwise none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from contracts.ace import Bullet, BulletEvaluation, Insight, Trajectory
from graphs.ace.heuristic_text import excerpt, is_japanese, key_terms, listing, topic
from graphs.text.contradiction import Figure, FigureKind, figure_conflicts, figures, polarity_conflict
from graphs.text.tokenize import content_tokens, terms

__all__ = [
    "Reading",
    "Verdict",
    "derive_insights",
    "evaluate_bullets",
    "judge",
    "read",
    "reflect_by_rules",
    "report_verdict",
]

Outcome = Literal["success", "failure", "unknown"]

MATCH_COVERAGE = 0.9
"""Share of the ground truth's content tokens the answer must contain to count as correct."""
MAX_LISTED_TERMS = 8
MAX_FAILING_CHECKS = 3
BLAMED_PAIRS = 64
"""Wrong figures a bullet is blamed with at most (eight of each side are listed): bounds the pairing's work."""

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


@dataclass(frozen=True)
class Reading:
    """The answer and the ground truth as the rules compare them, tokenised and parsed once per reflection.

    The verdict, every used bullet's evaluation and the lesson all compare against these; with up to
    hundreds of used bullets and long texts at the request limits, reading them once per rule cost more
    than the rules.
    """

    answer: str
    """The generated answer without cited ids (`_answer_text`)."""
    answer_tokens: set[str]
    truth_tokens: set[str]
    answer_figures: list[Figure]
    truth_figures: list[Figure]


def read(trajectory: Trajectory, ground_truth: str) -> Reading:
    """Tokenise and parse the trajectory's answer and the ground truth (once: the verdict carries the result)."""
    answer = _answer_text(trajectory)
    return Reading(
        answer=answer,
        answer_tokens=content_tokens(answer),
        truth_tokens=content_tokens(ground_truth),
        answer_figures=figures(answer),
        truth_figures=figures(ground_truth),
    )


@dataclass(frozen=True)
class Verdict:
    """How the trajectory went and the evidence for it, with the texts as read to reach it."""

    outcome: Outcome
    missing: list[str]
    """Content terms of the ground truth the answer lacks."""
    wrong_figures: list[tuple[str, str]]
    """(the answer's figure, the ground truth's) where the two conflict in the same role."""
    failing_checks: list[str]
    """Lines of the test report that report a failure."""
    coverage: float | None
    """Share of the ground truth's content tokens found in the answer (None without a ground truth)."""
    reading: Reading
    """The answer and the ground truth as read for this verdict (the evaluations and the lesson reuse them)."""


def report_verdict(test_report: str) -> tuple[Outcome, list[str]]:
    """Pass/fail from a test report, with the lines that report failures."""
    failing = [line.strip() for line in test_report.splitlines() if _FAILURE.search(_NOT_FAILURE.sub("", line))]
    if failing:
        return "failure", failing[:MAX_FAILING_CHECKS]
    if _SUCCESS.search(test_report):
        return "success", []
    return "unknown", []


def _answer_text(trajectory: Trajectory) -> str:
    """The answer without cited ids: `[shr-00001]` names a bullet; its digits are not a figure of the answer."""
    return _CITATION.sub(" ", trajectory.generated_answer)


def judge(trajectory: Trajectory, ground_truth: str, test_report: str) -> Verdict:
    """Decide success or failure and collect what differs between the answer and the ground truth."""
    reading = read(trajectory, ground_truth)
    coverage: float | None = None
    missing: list[str] = []
    wrong: list[tuple[str, str]] = []
    answer_outcome: Outcome = "unknown"
    if ground_truth.strip():
        truth_tokens = reading.truth_tokens
        coverage = len(truth_tokens & reading.answer_tokens) / len(truth_tokens) if truth_tokens else 1.0
        answer_outcome = "success" if coverage >= MATCH_COVERAGE else "failure"
        answer_terms = set(terms(reading.answer))
        missing = [t for t in terms(ground_truth) if t not in answer_terms][:MAX_LISTED_TERMS]
        conflicts = figure_conflicts(
            reading.answer_figures, reading.truth_figures, bare="second", limit=MAX_LISTED_TERMS
        )  # the limit bounds the work too: 2,500 figures a side were 6 million pairs and 2 GB
        wrong = [(x.text, y.text) for x, y in conflicts]
    outcome, failing = report_verdict(test_report)
    if outcome == "unknown":
        outcome = answer_outcome
    return Verdict(
        outcome=outcome,
        missing=missing,
        wrong_figures=wrong,
        failing_checks=failing,
        coverage=coverage,
        reading=reading,
    )


def reflect_by_rules(
    trajectory: Trajectory, ground_truth: str, test_report: str, used: list[Bullet], *, with_insights: bool
) -> tuple[list[BulletEvaluation], list[Insight]]:
    """The rules' whole reflection in one call (one worker-thread hop): the evaluations, and the lesson if asked.

    The texts are read once, by `judge`; the evaluations and the lesson reuse its reading.
    """
    verdict = judge(trajectory, ground_truth, test_report)
    evaluations = evaluate_bullets(trajectory, ground_truth, verdict, used)
    insights = derive_insights(trajectory, ground_truth, verdict, used, evaluations) if with_insights else []
    return evaluations, insights


def evaluate_bullets(
    trajectory: Trajectory, ground_truth: str, verdict: Verdict, used: list[Bullet]
) -> list[BulletEvaluation]:
    """One evaluation per used bullet (see the module docstring); `verdict` is `judge`'s on these same texts."""
    reading = verdict.reading
    applied_tokens = content_tokens(f"{trajectory.query}\n{reading.answer}")
    answer_tokens, truth_tokens, truth_figures = reading.answer_tokens, reading.truth_tokens, reading.truth_figures
    answer_figures = {f.key for f in reading.answer_figures}
    evaluations = []
    for bullet in used:
        tokens = content_tokens(bullet.content)
        tag: Literal["helpful", "harmful", "neutral"] = "neutral"
        match verdict.outcome:
            case "success":
                tag, reason = _credit(tokens, applied_tokens)
            case "failure" if truth_tokens:
                tag, reason = _blame(
                    bullet, tokens, answer_tokens, answer_figures, ground_truth, truth_tokens, truth_figures
                )
            case "failure":
                tag, reason = _blame_by_tests(tokens, answer_tokens, verdict)
            case _:
                reason = "neither a ground truth nor a test verdict to judge it by"
        evaluations.append(BulletEvaluation(bullet_id=bullet.id, tag=tag, reason=excerpt(reason)))
    return evaluations


def _credit(tokens: set[str], applied_tokens: set[str]) -> tuple[Literal["helpful", "neutral"], str]:
    """After a success: helpful only when the trajectory visibly drew on the bullet, not merely retrieved it."""
    if _shares(tokens, applied_tokens):
        return "helpful", "applied in a trajectory that succeeded"
    return "neutral", "used, but the successful answer does not draw on it"


def _blame_by_tests(
    tokens: set[str], answer_tokens: set[str], verdict: Verdict
) -> tuple[Literal["harmful", "neutral"], str]:
    """After a failure known only from the test report: what the answer applied shares the blame."""
    if _shares(tokens, answer_tokens):
        return "harmful", "applied in an answer that failed: " + (
            "; ".join(verdict.failing_checks) or "the test report"
        )
    return "neutral", "used, but the failed answer does not draw on it"


def _blame(
    bullet: Bullet,
    tokens: set[str],
    answer_tokens: set[str],
    answer_figures: set[tuple[FigureKind, str]],
    ground_truth: str,
    truth_tokens: set[str],
    truth_figures: list[Figure],
) -> tuple[Literal["harmful", "neutral"], str]:
    """After a failure with a ground truth: harmful only when what the bullet said contradicts it."""
    given = [f for f in figures(bullet.content) if f.key in answer_figures]  # figures it put into the answer
    conflicts = figure_conflicts(given, truth_figures, bare="second", limit=BLAMED_PAIRS)
    if conflicts:
        gave = listing(x.text for x, _ in conflicts)
        expected = listing(y.text for _, y in conflicts)
        return "harmful", f"gave the answer {gave}; expected {expected}"
    applied = tokens & answer_tokens
    if _shares(tokens, answer_tokens):
        clash = polarity_conflict(bullet.content, ground_truth)
        if clash is not None:
            return "harmful", f"says the opposite of the expected result: {clash[0]!r} against {clash[1]!r}"
    agreeing = tokens & truth_tokens
    if agreeing:
        return "neutral", f"agrees with the ground truth ({listing(sorted(agreeing))}); the failure lies elsewhere"
    if applied:
        return "neutral", "applied, but unrelated to the expected result: not what made the answer wrong"
    return "neutral", "used, but unrelated to how the answer went wrong"


def _shares(tokens: set[str], other: set[str]) -> bool:
    common = len(tokens & other)
    return common >= 2 or (bool(tokens) and common / len(tokens) >= 0.2)


# --- lessons ------------------------------------------------------------------------------------------------

_PROCEDURE = re.compile(r"[a-z]_[a-z]|\(\)|\bthen\b|→|->|手順|してから|した後", re.IGNORECASE)


_HOW_TO = ("how do", "how can", "how to", "how should", "how would", "can i", "can we", "should i", "should we")
_QUESTION_START = ("what", "which", "who", "whom", "whose", "when", "where", "why", "how", "is ", "are ", "does ")
_NOT_A_TOPIC = {"many", "much", "often", "long", "kind", "sort", "type"}


def _lead(query: str, japanese: bool) -> str:
    """How a lesson opens: the kind of task it is for, named by the query's topic, never the question itself."""
    subject = topic(query)
    if japanese:
        return f"「{excerpt(subject, 120)}」に関する課題では"
    lowered = query.strip().lower()
    if lowered.startswith(_HOW_TO) or not (lowered.startswith(_QUESTION_START) or lowered.endswith("?")):
        return f"To {subject[:1].lower()}{excerpt(subject[1:], 120)}"  # a how-to question or an instruction
    words = [t for t in key_terms(query, 6) if t not in _NOT_A_TOPIC][:4]
    return "For questions about " + (", ".join(words) or excerpt(subject, 80))


def _action(ground_truth: str, found: list[Figure], japanese: bool) -> str:
    """What the ground truth (with its figures `found`) asks of an answer: a figure, a date, steps, or specifics."""
    if any(f.kind == "date" for f in found):
        return "正確な日付を答え、出典で確かめる" if japanese else "give the exact date and check it against the source"
    if found:
        return (
            "正確な数値を単位つきで答え、出典で確かめる"
            if japanese
            else "give the exact figure with its unit and check it against the source"
        )
    if _PROCEDURE.search(ground_truth) or len(ground_truth.split()) > 25:
        return "次の手順どおりに進める" if japanese else "follow this procedure"
    return "一般論ではなく具体的な答えを示す" if japanese else "give the specific answer, not general guidance"


def derive_insights(
    trajectory: Trajectory,
    ground_truth: str,
    verdict: Verdict,
    used: list[Bullet],
    evaluations: list[BulletEvaluation],
) -> list[Insight]:
    """At most one lesson (see the module docstring)."""
    japanese = is_japanese(trajectory.query)
    lead = _lead(trajectory.query, japanese)
    if verdict.outcome == "failure":
        return [_failure_insight(ground_truth, verdict, used, evaluations, lead, japanese=japanese)]
    if verdict.outcome == "success" and not used:
        approach = excerpt(
            trajectory.reasoning_steps[-1] if trajectory.reasoning_steps else trajectory.generated_answer
        )
        lesson = (
            f"{lead}、次の進め方でうまくいく: {approach}" if japanese else f"{lead}, this approach works: {approach}"
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
    ground_truth: str,
    verdict: Verdict,
    used: list[Bullet],
    evaluations: list[BulletEvaluation],
    lead: str,
    *,
    japanese: bool,
) -> Insight:
    harmful = [e.bullet_id for e in evaluations if e.tag == "harmful"]
    if ground_truth.strip():
        correct, lesson = _lesson_from_truth(ground_truth, verdict, harmful, lead, japanese=japanese)
    else:
        correct, lesson = _lesson_from_tests(verdict, harmful, lead, japanese=japanese)
    sources = ["the ground truth"] if ground_truth.strip() else []
    sources += ["the test report"] if verdict.failing_checks else []
    basis = " and ".join(sources) or "the test report"
    return Insight(
        reasoning=f"Compared the generated answer with {basis}; verdict: failure"
        + (f" (ground-truth coverage {verdict.coverage:.0%})" if verdict.coverage is not None else ""),
        error_identification="; ".join(_problems(verdict)) or "the answer was judged wrong",
        root_cause_analysis=_cause(harmful, used),
        correct_approach=correct,
        key_insight=lesson,
    )


def _problems(verdict: Verdict) -> list[str]:
    """What was wrong with the answer, in the verdict's own terms, so the lesson can be checked against it."""
    problems = []
    if verdict.missing:
        problems.append(f"the answer lacks: {', '.join(verdict.missing)}")
    if verdict.wrong_figures:
        shown = "; ".join(f"{x} where the ground truth has {y}" for x, y in verdict.wrong_figures[:4])
        problems.append(f"the answer states {shown}")
    if verdict.failing_checks:
        problems.append(f"failing checks: {' | '.join(excerpt(c, 160) for c in verdict.failing_checks)}")
    return problems


def _cause(harmful: list[str], used: list[Bullet]) -> str:
    """The playbook's share in the failure: a wrong bullet, no guidance, or guidance that missed the point."""
    if harmful:
        return f"playbook bullet(s) {', '.join(harmful)} pointed the answer the wrong way"
    if not used:
        return "no playbook guidance was retrieved for this query, so nothing learned was applied"
    return f"the guidance used ({', '.join(b.id for b in used)}) does not cover what was needed"


def _lesson_from_truth(
    ground_truth: str, verdict: Verdict, harmful: list[str], lead: str, *, japanese: bool
) -> tuple[str, str]:
    """The correct approach and the lesson when the expected answer is known: state it, and distrust the culprits."""
    wrong = listing(x for x, _ in verdict.wrong_figures)
    ids = ", ".join(harmful)
    expected = excerpt(ground_truth)
    action = _action(ground_truth, verdict.reading.truth_figures, japanese)
    correct = f"{action}: {expected}"
    if japanese:
        lesson = f"{lead}、{action}: {expected}"
        if harmful:
            lesson += f"。{ids} の {wrong or '記述'} はそのまま使わない"
    else:
        lesson = f"{lead}, {action}: {expected}"
        if harmful:
            lesson += f". Do not reuse {wrong or 'the guidance'} from {ids}: it is wrong"
    return correct, lesson


def _lesson_from_tests(verdict: Verdict, harmful: list[str], lead: str, *, japanese: bool) -> tuple[str, str]:
    """The correct approach and the lesson when only the tests judged: make them pass before finishing."""
    ids = ", ".join(harmful)
    checks = "; ".join(excerpt(c, 160) for c in verdict.failing_checks) or "the failing tests"
    correct = f"make these checks pass: {checks}"
    if japanese:
        lesson = f"{lead}、終える前に次の検査が通ることを確かめる: {checks}"
        if harmful:
            lesson += f"。失敗した回答が使った {ids} を見直す"
    else:
        lesson = f"{lead}, check before finishing that these pass: {checks}"
        if harmful:
            lesson += f". Re-check {ids}, which the failed attempt applied"
    return correct, lesson
