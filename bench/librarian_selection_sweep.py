"""The Librarian selection's thresholds swept offline over recorded loops (tuning slices only).

The rules' selection (`graphs/librarian/selection.py: select_minimal`) runs once, at COMPLETE, on the whole
search history; the loop's SEARCHes never depend on it. So one run of the loops per tuning slice and search side
is recorded, and every grid point replays only the selection (pool, assessment and selection from the recorded
history, as the COMPLETE step computes them): a point costs about a second instead of a bench run. The replay at
the current thresholds must reproduce the loops' own recall and snippets (`replay_matches_loops`).

`--fit` also refits `selection.ANSWER_MODEL` and `ANSWER_BIAS` (a logistic regression: is this candidate, one of
each question's `ANSWER_CANDIDATES` most relevant, the gold paragraph) on the recorded loops of the first
`--backend`, per slice and on all slices together, and reports the weights and each fit's log loss on every slice.

    python -m bench.librarian_selection_sweep --slice dev --slice dev2 [--backend bm25 --backend postgres]
        [--grid ANSWER_PROBABILITY=0.036,0.038,0.04 --grid SEARCH_VOTE=0,0.02 ...] [--fit] [--output FILE]

Only `dev` and `dev2` are accepted: the `final` slice is never tuned on.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import msgspec
import numpy as np
import numpy.typing as npt

import graphs.librarian.selection as selection
from bench.librarian_quality import JSQUAD, Question, baseline, key_terms, load_questions, postgres_backend, slices
from bench.tools import command_line, emit
from contracts.librarian import SearchRound
from graphs.librarian.assessment import Assessment, assess
from graphs.librarian.candidates import build_pool
from graphs.librarian.question import QuestionProfile, profile_question
from librarian_svc.app import create_app
from librarian_svc.log_setup import configure_logging
from librarian_svc.settings import load_settings
from reference_orchestrator.corpus import SearchBackend
from reference_orchestrator.loop import execute_search, run_question

TUNING_SLICES = ("dev", "dev2")
THRESHOLDS = ("ANSWER_PROBABILITY", "SECOND_OPINION_SHARE", "SEARCH_VOTE", "GAIN_SHARE", "MIN_GAIN")
"""The module constants of `graphs.librarian.selection` a grid may set."""
MAX_EVIDENCE = 5
"""The request's default `constraints.max_evidence`, which the bench's loops use."""


@dataclass(frozen=True)
class Recorded:
    """One question's loop: what COMPLETE selected from, or None for an ERROR; and what the loop returned."""

    gold: tuple[str, int]
    profile: QuestionProfile
    assessment: Assessment | None
    history: list[SearchRound]
    found: bool
    snippets: int


async def record(
    client: httpx.AsyncClient, backend: SearchBackend, chosen: list[Question], *, near_dup: float
) -> list[Recorded]:
    """Run every question's loop and keep its final history (the SEARCHes re-run against the same backend)."""
    out = []
    for qid, question, gold in chosen:
        result = await run_question(client, backend, question, request_id=f"q{qid}", k=5, vector=False)
        rounds = [execute_search(backend, s, k=5, vector=False) for s in result.steps if s.get("action") == "SEARCH"]
        history = msgspec.convert(rounds, list[SearchRound])
        profile = profile_question(question)
        complete = result.action == "COMPLETE"
        evidence = result.final.get("evidence", []) if complete else []
        returned = {(e["document_id"], p) for e in evidence for p in e["pages"]}
        assessment = assess(profile, build_pool(history, near_dup_threshold=near_dup)) if complete else None
        out.append(
            Recorded(
                gold=gold,
                profile=profile,
                assessment=assessment,
                history=history,
                found=gold in returned,
                snippets=sum(len(e["snippets"]) for e in evidence),
            )
        )
    return out


@contextlib.contextmanager
def thresholds(values: dict[str, float]) -> Iterator[None]:
    """The selection's module constants set to `values` for the duration, then restored."""
    saved = {name: getattr(selection, name) for name in values}
    try:
        for name, value in values.items():
            setattr(selection, name, value)
        yield
    finally:
        for name, value in saved.items():
            setattr(selection, name, value)


def replay(recorded: list[Recorded]) -> tuple[int, float]:
    """Gold paragraphs found and mean snippets per COMPLETE under the selection's current constants."""
    found = snippets = completes = 0
    for loop in recorded:
        if loop.assessment is None:
            continue
        chosen = selection.select_minimal(
            loop.profile, loop.assessment, max_evidence=MAX_EVIDENCE, history=loop.history
        )
        found += any(loop.gold in {(s.candidate.document_id, p) for p in s.candidate.pages} for s in chosen)
        snippets += len(chosen)
        completes += 1
    return found, round(snippets / max(1, completes), 3)


FIT_L2 = 0.001
FIT_STEPS = 6000
FIT_RATE = 1.0


def answer_rows(recorded: list[Recorded]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """One row per weighed candidate of every COMPLETE: its features and a last 1.0 (the bias); and 1.0 if gold."""
    rows, golds = [], []
    for loop in recorded:
        if loop.assessment is None:
            continue
        ranking = selection.question_query_ranking(loop.profile, loop.history)
        for scored, features in selection.answer_features(loop.assessment, ranking):
            rows.append([*features, 1.0])
            golds.append(float(loop.gold in {(scored.candidate.document_id, p) for p in scored.candidate.pages}))
    return np.array(rows), np.array(golds)


def _probabilities(x: npt.NDArray[np.float64], w: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return np.asarray(1.0 / (1.0 + np.exp(-(x @ w))), dtype=np.float64)


def log_loss(rows: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]], w: npt.NDArray[np.float64]) -> float:
    """Mean negative log likelihood of every candidate's gold / not gold."""
    x, y = rows
    p = np.clip(_probabilities(x, w), 1e-12, 1 - 1e-12)
    return float(-(y * np.log(p) + (1 - y) * np.log(1 - p)).mean())


def fit_answer_model(rows: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]) -> npt.NDArray[np.float64]:
    """Logistic-regression weights (`ANSWER_MODEL` then `ANSWER_BIAS`) by gradient descent on the mean log loss
    plus `FIT_L2` · |w|² / 2 (bias excluded), which is convex, so the fit does not depend on where it starts."""
    x, y = rows
    w = np.zeros(x.shape[1])
    for _ in range(FIT_STEPS):
        penalty = FIT_L2 * w
        penalty[-1] = 0.0
        w -= FIT_RATE * (x.T @ (_probabilities(x, w) - y) / len(y) + penalty)
    return w


def fit_report(recorded: dict[str, list[Recorded]]) -> dict[str, Any]:
    """Weights fitted per slice and on all together, and every fit's log loss on every slice (current weights too)."""
    rows = {name: answer_rows(loops) for name, loops in recorded.items()}
    everything = answer_rows([loop for loops in recorded.values() for loop in loops])
    fits = {"current": np.array([*selection.ANSWER_MODEL, selection.ANSWER_BIAS])}
    fits.update({name: fit_answer_model(r) for name, r in rows.items()})
    fits["all"] = fit_answer_model(everything)
    return {
        name: {
            "weights (ANSWER_MODEL, ANSWER_BIAS)": [round(float(v), 2) for v in w],
            "log_loss": {slice_: round(log_loss(r, w), 4) for slice_, r in rows.items()},
        }
        for name, w in fits.items()
    }


def parse_grid(entries: Sequence[str]) -> dict[str, list[float]]:
    """`NAME=v1,v2` entries as {NAME: [v1, v2]}; unknown names are refused."""
    grid: dict[str, list[float]] = {}
    for entry in entries:
        name, _, values = entry.partition("=")
        if name not in THRESHOLDS or not values:
            raise SystemExit(f"--grid takes NAME=v1,v2,... with NAME one of {', '.join(THRESHOLDS)}: {entry!r}")
        grid[name] = [float(v) for v in values.split(",")]
    return grid


async def sweep(
    slice_names: list[str], backends: list[str], grid: dict[str, list[float]], budget: float, fit: bool = False
) -> dict[str, Any]:
    corpus, questions = load_questions(JSQUAD)
    configure_logging("console", "warning", stream=sys.stderr)
    settings = load_settings()
    app = create_app(settings)
    near_dup = settings.librarian_near_dup_threshold
    recorded: dict[tuple[str, str], list[Recorded]] = {}
    baselines: dict[tuple[str, str], int] = {}
    chosen = {name: slices(questions)[name] for name in slice_names}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://librarian") as client:  # type: ignore[arg-type]
        for name, picked in chosen.items():
            if "bm25" in backends:
                recorded["bm25", name] = await record(client, corpus, picked, near_dup=near_dup)
                baselines["bm25", name] = round(baseline(corpus, picked, lambda q: q)["recall@5"] * len(picked))
        if "postgres" in backends:
            with postgres_backend(corpus.chunks, vector=False, bindir=None) as (backend, _):
                for name, picked in chosen.items():
                    recorded["postgres", name] = await record(client, backend, picked, near_dup=near_dup)
                    baselines["postgres", name] = round(baseline(backend, picked, key_terms)["recall@5"] * len(picked))
    loops = {
        f"{side} {name}": {
            "questions": len(r),
            "found": sum(x.found for x in r),
            "mean_snippets": round(sum(x.snippets for x in r) / max(1, sum(x.assessment is not None for x in r)), 3),
            "found_by_one_shot_at_5": baselines[side, name],
        }
        for (side, name), r in recorded.items()
    }
    current = {f"{side} {name}": replay(r) for (side, name), r in recorded.items()}
    rows = []
    for values in itertools.product(*grid.values()):
        point = dict(zip(grid, values, strict=True))
        with thresholds(point):
            results = {key: replay(r) for key, r in recorded.items()}
        row: dict[str, Any] = dict(point)
        for side in backends:
            margins = []
            for name in slice_names:
                found, snippets = results[side, name]
                row[f"{side} {name}"] = f"{found} ({found - baselines[side, name]:+d}) @ {snippets:.3f}"
                margins.append((found - baselines[side, name]) / len(chosen[name]))
            row[f"{side} min(recall - R@5)"] = round(min(margins), 4)
            row[f"{side} within {budget}"] = all(results[side, name][1] <= budget for name in slice_names)
        rows.append(row)
    fitted = fit_report({name: recorded[backends[0], name] for name in slice_names}) if fit else None
    return {
        "command": command_line("bench.librarian_selection_sweep"),
        **({f"answer_model_fit ({backends[0]})": fitted} if fitted is not None else {}),
        "slices": slice_names,
        "current": {name: getattr(selection, name) for name in THRESHOLDS},
        "loops": loops,
        "replay_matches_loops": all(
            current[key] == (loop["found"], loop["mean_snippets"]) for key, loop in loops.items()
        ),
        "budget_snippets": budget,
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--slice", action="append", choices=TUNING_SLICES, help="tuning slice(s); default both")
    parser.add_argument("--backend", action="append", choices=["bm25", "postgres"], help="default: bm25")
    parser.add_argument("--grid", action="append", default=[], help="NAME=v1,v2,... (repeat; product of all)")
    parser.add_argument("--budget", type=float, default=1.46, help="mean snippets allowed on each slice")
    parser.add_argument("--fit", action="store_true", help="also refit ANSWER_MODEL on the first backend's loops")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    grid = parse_grid(args.grid) or {"ANSWER_PROBABILITY": [selection.ANSWER_PROBABILITY]}
    report = asyncio.run(
        sweep(args.slice or list(TUNING_SLICES), args.backend or ["bm25"], grid, args.budget, args.fit)
    )
    emit(report, args.output)


if __name__ == "__main__":
    main()
