"""The Librarian selection's thresholds swept offline over recorded loops (tuning slices only).

The rules' selection (`graphs/librarian/selection.py: select_minimal`) runs once, at COMPLETE, on the whole
search history; the loop's SEARCHes never depend on it. So one run of the loops per tuning slice and search side
is recorded, and every grid point replays only the selection (pool, assessment and selection from the recorded
history, as the COMPLETE step computes them): a point costs about a second instead of a bench run. The replay at
the current thresholds must reproduce the loops' own recall and snippets (`replay_matches_loops`).

    python -m bench.librarian_selection_sweep --slice dev --slice dev2 [--backend bm25 --backend postgres]
        [--grid TIE_SHARE=0.82,0.84,0.85 --grid DISPUTED_TIE_SHARE=0.72,0.76,0.8 ...] [--output FILE]

Only `dev` and `dev2` are accepted: the `final` slice is never tuned on.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import msgspec

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
THRESHOLDS = ("TIE_SHARE", "DISPUTED_TIE_SHARE", "SECOND_OPINION_SHARE", "SEARCH_VOTE", "GAIN_SHARE", "MIN_GAIN")
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
    slice_names: list[str], backends: list[str], grid: dict[str, list[float]], budget: float
) -> dict[str, Any]:
    corpus, questions = load_questions(JSQUAD)
    configure_logging("console", "warning")
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
    return {
        "command": command_line("bench.librarian_selection_sweep"),
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
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    grid = parse_grid(args.grid) or {"TIE_SHARE": [selection.TIE_SHARE]}
    report = asyncio.run(sweep(args.slice or list(TUNING_SLICES), args.backend or ["bm25"], grid, args.budget))
    emit(report, args.output)


if __name__ == "__main__":
    main()
