"""Confidence of a step's result (seed 002 §4.4, §8.3): factors → normalise → weighted average → penalties → decision.

Rule-based and deterministic: the factors are measured from the caller's hits (count, best and mean
score, their variance, how much the sources agree) plus the model's self-evaluation for reasoning
steps. Weights per step type, penalty multipliers and thresholds come from config/grace_config.yml;
the thresholds in force are the session's (user feedback moves them, see `intervention`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from statistics import fmean

from contracts.grace import ActionDecision, ConfidenceFactors, ConfidenceScore, Penalty, StepAction, Thresholds
from graphs.config_files import GraceConfig
from graphs.text.tokenize import content_tokens

MAX_VARIANCE = 0.25
"""The largest possible variance of scores in [0, 1]; the variance factor is 1 - variance / MAX_VARIANCE."""
AGREEMENT_SOURCES = 5
"""Sources (distinct documents, best first) compared for agreement."""
SINGLE_SOURCE_AGREEMENT = 0.5
"""One source neither corroborates nor contradicts itself."""


@dataclass(frozen=True)
class ScoredText:
    """A source as confidence sees it: which document, its text and its score (None when the caller gave none)."""

    document_id: str
    text: str
    score: float | None


def measure(sources: Sequence[ScoredText], *, self_eval: float | None = None) -> ConfidenceFactors:
    """The raw factors of a set of sources, best first (a search's hits, or the sources an answer cites)."""
    scores = [s.score for s in sources if s.score is not None]
    return ConfidenceFactors(
        hit_count=len(sources),
        max_score=max(scores) if scores else None,
        mean_score=round(fmean(scores), 6) if scores else None,
        score_variance=round(exact_pvariance(scores), 6) if scores else None,
        source_agreement=source_agreement(sources),
        llm_self_eval=self_eval,
    )


def exact_pvariance(values: Sequence[float]) -> float:
    """`statistics.pvariance(values)` of floats, the same float, without its `Fraction` arithmetic.

    A float is an integer over a power of two, so scaled to the largest denominator every value is an
    integer and the population variance is one exact ratio of integers, (n·Σx² − (Σx)²) / (n²·d²); int
    true division rounds it correctly, as `float(Fraction)` does the same ratio in `statistics`. The
    `Fraction` sums cost more than the rest of scoring a search.
    """
    ratios = [float(value).as_integer_ratio() for value in values]
    scale = max(denominator for _, denominator in ratios)  # powers of two: each divides the largest
    scaled = [numerator * (scale // denominator) for numerator, denominator in ratios]
    count, total = len(scaled), sum(scaled)
    return (count * sum(x * x for x in scaled) - total * total) / (count * count * scale * scale)


def source_agreement(sources: Sequence[ScoredText]) -> float:
    """How much the best sources from different documents say the same thing (seed 002 "Source Agreement").

    Mean pairwise overlap coefficient |A∩B| / min(|A|, |B|) of the content tokens of the best source of
    each of the first `AGREEMENT_SOURCES` documents; 0 with no source, 0.5 with a single document.
    """
    per_document: dict[str, frozenset[str]] = {}
    for source in sources:
        if source.document_id not in per_document and len(per_document) < AGREEMENT_SOURCES:
            per_document[source.document_id] = frozenset(content_tokens(source.text))
    sets = [s for s in per_document.values() if s]
    if not sets:
        return 0.0
    if len(sets) == 1:
        return SINGLE_SOURCE_AGREEMENT
    overlaps = [len(a & b) / min(len(a), len(b)) for a, b in combinations(sets, 2)]
    return round(fmean(overlaps), 6)


def normalize_factors(factors: ConfidenceFactors, *, target_hits: int) -> dict[str, float]:
    """Each measurable factor mapped to [0, 1], higher = more confident; unmeasurable factors are left out."""
    normalized = {
        "hit_count": min(1.0, factors.hit_count / target_hits),
        "source_agreement": factors.source_agreement if factors.hit_count else 0.0,
    }
    if factors.max_score is not None and factors.mean_score is not None and factors.score_variance is not None:
        normalized["max_score"] = factors.max_score
        normalized["mean_score"] = factors.mean_score
        normalized["score_variance"] = 1.0 - min(1.0, factors.score_variance / MAX_VARIANCE)
    if factors.llm_self_eval is not None:
        normalized["llm_self_eval"] = factors.llm_self_eval
    return {k: round(v, 6) for k, v in normalized.items()}


def decide(score: float, thresholds: Thresholds) -> ActionDecision:
    """The intervention level of a score: >= silent SILENT, >= notify NOTIFY, >= confirm CONFIRM, else ESCALATE."""
    if score >= thresholds.silent:
        return "SILENT"
    if score >= thresholds.notify:
        return "NOTIFY"
    if score >= thresholds.confirm:
        return "CONFIRM"
    return "ESCALATE"


def score_step(
    factors: ConfidenceFactors,
    step_type: StepAction,
    config: GraceConfig,
    thresholds: Thresholds,
    *,
    tool_failed: bool = False,
) -> ConfidenceScore:
    """Weighted average of the normalised factors (weights renormalised over the measurable ones), then penalties.

    Penalties multiply: `tool_failure` when the caller's search reported an error (with or without
    partial hits), `zero_hits` when there is no source at all (a search that found nothing, an answer
    resting on no source however sure the model is of it). The decision uses the session's thresholds.
    """
    normalized = normalize_factors(factors, target_hits=config.confidence.target_hits)
    weights = {k: w for k, w in config.weights_for(step_type).items() if k in normalized and w > 0}
    total = sum(weights.values())
    base = sum(w * normalized[k] for k, w in weights.items()) / total if total else 0.0
    penalties: list[Penalty] = []
    if tool_failed:
        penalties.append(Penalty(name="tool_failure", multiplier=config.penalties.tool_failure))
    if factors.hit_count == 0:
        penalties.append(Penalty(name="zero_hits", multiplier=config.penalties.zero_hits))
    score = base
    for penalty in penalties:
        score *= penalty.multiplier
    score = round(min(1.0, max(0.0, score)), 4)
    return ConfidenceScore(
        score=score,
        decision=decide(score, thresholds),
        step_type=step_type,
        factors=factors,
        normalized=normalized,
        weights={k: round(w / total, 6) for k, w in weights.items()} if total else {},
        penalties=penalties,
    )


def certain(step_type: StepAction, thresholds: Thresholds) -> ConfidenceScore:
    """The score of a result the user supplied: their own words need no second opinion."""
    return ConfidenceScore(
        score=1.0,
        decision=decide(1.0, thresholds),
        step_type=step_type,
        factors=ConfidenceFactors(hit_count=1, source_agreement=1.0),
        normalized={},
        weights={},
    )
