"""GRACE's final reasoning (the embedded engine's extractive answer) at 1×, 10× and 100× input, against reading it.

Issue 15 item 4: a legitimate session — a long question of short terms, long hits, long user inputs —
kept `extractive_answer` busy for 8.8 s against a 1 s budget. Input here: a question of 110 short
Japanese terms (every kanji pair of ten kanji, and each kanji), and per 1× unit 8 hits of ~1,450
characters and 2 user inputs of ~3,600 characters whose sentences mention many of the terms (~19 KB
of text); 10× and 100× repeat the unit.

Subject: `graphs.grace.reasoning.extractive_answer` (CPU seconds, best of `--repeat`). Baseline, same
run, same input: the floor any answer needs — every sentence split out and normalised once
(`_sentences` + `normalize`). `ratio_answer_over_floor_<n>x` staying flat from 1× to 100× means the
answer grows linearly with its input, like reading it; `growth_answer_<n>x` is its CPU at n× ÷ at 1×.
`checkpoints_<n>x` counts how often the answer yielded to the event loop (each time checking the deadline);
`ratio_long_query_over_query_1x` is the 1× answer with a 1,980-term question over the 110-term one (far
below 18: the cost does not scale with the number of terms).

    python -m bench.grace_reasoning_growth [--repeat 3] [--output FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from bench.tools import command_line, emit, log, machine_info
from contracts.grace import Evidence, UserInput
from graphs.grace.reasoning import CHUNK_CHARS, Material, _sentences, extractive_answer
from graphs.text.normalize import normalize

MODULE = "bench.grace_reasoning_growth"
KANJI = "東京高山川海空雨風花"
QUERY = " ".join(a + b for a in KANJI for b in KANJI) + " " + " ".join(KANJI)
MORE_KANJI = KANJI + "春夏秋冬朝昼夜星月日火水木金土石岩森林田畑村町市県国島港橋道駅寺宮城"
LONG_QUERY = " ".join(a + b for a in MORE_KANJI for b in MORE_KANJI) + " " + " ".join(MORE_KANJI)
"""1,980 terms (~5,900 characters), 18x the usual question's: the answer must not scale with the number of terms."""
SIZES = (1, 10, 100)


def material(copies: int) -> Material:
    """`copies` units of long hits and long user inputs whose sentences mention many of the question's terms."""
    sentence = "".join(KANJI[i % 10] + KANJI[(i * 3) % 10] + "は" for i in range(60)) + "。"
    snippet = (sentence + "この文は説明のための例文である。") * 8
    evidence = [
        Evidence(step_id=1 + i % 2, document_id=f"doc-{i}", snippet=snippet, score=0.5 + (i % 5) / 10)
        for i in range(8 * copies)
    ]
    inputs = [UserInput(step_id=3, text=sentence * 20) for _ in range(2 * copies)]
    return Material(evidence=evidence, user_inputs=inputs, context=[], groups=[1, 2])


def characters(m: Material) -> int:
    return sum(len(e.snippet) for e in m.evidence) + sum(len(u.text) for u in m.user_inputs)


def best_cpu(run: Callable[[], object], repeat: int) -> float:
    """The least process CPU time of `repeat` runs (other processes on a shared machine add none)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best


def _answer(m: Material, query: str = QUERY) -> None:
    asyncio.run(extractive_answer(query, m, max_sentences=3))


def floor(m: Material) -> None:
    """Reading the input once: every sentence split out and normalised."""
    for text in [u.text for u in m.user_inputs] + [e.snippet for e in m.evidence]:
        for sentence in _sentences(text):
            normalize(sentence)


def run(repeat: int) -> dict[str, Any]:
    report: dict[str, Any] = {
        "benchmark": "grace_reasoning_growth",
        "question": "CPU of GRACE's extractive answer at 1x, 10x, 100x input vs reading that input once",
        "command": command_line(MODULE),
        "machine": machine_info(),
        "query_terms": len(QUERY.split()),
        "chunk_chars": CHUNK_CHARS,
        "sizes": {},
    }
    base_answer = base_floor = 0.0
    for n in SIZES:
        m = material(n)
        yields = 0

        async def checkpoint() -> None:
            nonlocal yields
            yields += 1

        answer_s = best_cpu(partial(_answer, m), repeat)
        asyncio.run(extractive_answer(QUERY, m, max_sentences=3, checkpoint=checkpoint))
        floor_s = best_cpu(partial(floor, m), repeat)
        if n == 1:
            base_answer, base_floor = answer_s, floor_s
        log(f"{n}x: {characters(m)} chars, answer {answer_s * 1000:.1f} ms CPU, floor {floor_s * 1000:.1f} ms")
        report["sizes"][f"{n}x"] = {
            "characters": characters(m),
            "answer_cpu_ms": round(answer_s * 1000, 2),
            "floor_cpu_ms": round(floor_s * 1000, 2),
            "checkpoints": yields,
        }
        report[f"ratio_answer_over_floor_{n}x"] = round(answer_s / floor_s, 2)
        report[f"growth_answer_{n}x"] = round(answer_s / base_answer, 1)
        report[f"growth_floor_{n}x"] = round(floor_s / base_floor, 1)
        report[f"checkpoints_{n}x"] = yields
    long_s = best_cpu(partial(_answer, material(1), LONG_QUERY), repeat)
    log(f"1x with a {len(LONG_QUERY.split())}-term question: answer {long_s * 1000:.1f} ms CPU")
    report["long_query_terms"] = len(LONG_QUERY.split())
    report["ratio_long_query_over_query_1x"] = round(long_s / base_answer, 2)
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    emit(run(args.repeat), args.output)


if __name__ == "__main__":
    main()
