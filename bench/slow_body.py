"""What one client that sends a heavy body slowly costs the heavy requests queued behind it on the same worker.

    python -m bench.slow_body [--queued 4] [--slow-mb 3] [--trickle-kb-s 50] [--output FILE]

A heavy request holds its estimate of the worker's memory budget from its admission, before its body is read
(`librarian_svc/memory_budget.py`). One worker with the default budget (256 MB); a client declares an ACE search
body of `--slow-mb` (an estimate over the whole budget) and sends it at `--trickle-kb-s`; half a second later
`--queued` heavy ACE searches (`bench.hostile`'s, 1.1 MB each, sent at once) arrive. The figures: when the
slow connection was answered or closed, and each queued request's status and seconds.

Subject: the default `MIN_BODY_RATE_KB_S` (1,000): the slow body falls behind the rate once its 2 s of grace
are over and gets 408 at the next look (`librarian_svc/body_window.py`), and the queue is served. Baseline, in
the same run: `MIN_BODY_RATE_KB_S=0`, the read timeout alone (`REQUEST_READ_TIMEOUT_S`, 30 s), which is what
the service did before the rule: the queue waits past `REQUEST_TIMEOUT_MS` (25 s) and gets 503.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from bench.hostile import ace_search_body
from bench.tools import command_line, emit, free_port, log, machine_info, ratio, server_process
from tests.support.raw_http import send_slowly

MODULE = "bench.slow_body"
VARIANTS = {"min_body_rate": None, "read_timeout_only": "0"}
"""`MIN_BODY_RATE_KB_S` of each variant (None: the service's default)."""
QUEUE_DELAY_S = 0.5


def slow_body(megabytes: float) -> bytes:
    """An ACE search body of about `megabytes`: `bench.hostile`'s, its bullets repeated (past the contract's
    count, which does not matter here: at the trickle's rate the body never arrives whole in either variant)."""
    body = ace_search_body(None, 7)  # type: ignore[arg-type]
    bullets = body["playbook"]["bullets"]
    while len(json.dumps(body).encode()) < megabytes * 1_000_000:
        bullets.extend({**b, "id": f"{b['id']}-{len(bullets)}"} for b in bullets[:200])
    return json.dumps(body).encode()


def send_slowly_timed(port: int, body: bytes, rate_kb_s: float, outcome: dict[str, Any]) -> None:
    """Send the head at once and the body at `rate_kb_s` until the server answers or closes; note which, when."""
    head = (
        b"POST /agent/ace/search HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
        b"X-Request-ID: slow-body\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n"
    )
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
        sock.sendall(head)
        answer = send_slowly(sock, body, max(1, int(rate_kb_s * 1000 / 10)), 0.1)  # ten pieces a second
    outcome["after_s"] = round(time.monotonic() - started, 2)
    outcome["answer"] = answer.split(b"\r\n", 1)[0].decode("latin-1") or "closed without an answer"


def timed_search(base_url: str, body: bytes) -> tuple[int, float]:
    started = time.monotonic()
    with httpx.Client(base_url=base_url, timeout=120) as client:
        answer = client.post("/agent/ace/search", content=body, headers={"content-type": "application/json"})
    return answer.status_code, round(time.monotonic() - started, 2)


def one_variant(rate: str | None, *, queued: int, slow_mb: float, trickle_kb_s: float) -> dict[str, Any]:
    """One server start with this `MIN_BODY_RATE_KB_S`: the slow connection's outcome and the queue's."""
    port = free_port()
    env = {"PORT": str(port), "WEB_CONCURRENCY": "1", **({"MIN_BODY_RATE_KB_S": rate} if rate is not None else {})}
    bodies = [json.dumps(ace_search_body(None, 100 + i)).encode() for i in range(queued)]  # type: ignore[arg-type]
    slow = slow_body(slow_mb)
    outcome: dict[str, Any] = {}
    serving = server_process([sys.executable, "-m", "librarian_svc"], port=port, env=env)
    with serving, ThreadPoolExecutor(queued + 1) as pool:
        trickle = pool.submit(send_slowly_timed, port, slow, trickle_kb_s, outcome)
        time.sleep(QUEUE_DELAY_S)
        answers = list(pool.map(lambda b: timed_search(f"http://127.0.0.1:{port}", b), bodies))
        trickle.result()
    return queue_figures(answers) | {"slow_body_bytes": len(slow), "slow_connection": outcome}


def queue_figures(answers: list[tuple[int, float]]) -> dict[str, Any]:
    """The queued requests' statuses (counted) and seconds (median, slowest)."""
    statuses: dict[str, int] = {}
    for status, _ in answers:
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    seconds = [s for _, s in answers]
    return {
        "queued": len(answers),
        "statuses": statuses,
        "served": statuses.get("200", 0),
        "median_s": round(statistics.median(seconds), 2),
        "slowest_s": max(seconds),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queued", type=int, default=4)
    parser.add_argument("--slow-mb", type=float, default=3.0)
    parser.add_argument("--trickle-kb-s", type=float, default=50.0)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    variants = {}
    for name, rate in VARIANTS.items():
        log(f"{name}: MIN_BODY_RATE_KB_S={rate or 'default'}")
        variants[name] = one_variant(rate, queued=args.queued, slow_mb=args.slow_mb, trickle_kb_s=args.trickle_kb_s)
        log(f"{name}: {variants[name]}")
    subject, baseline = variants["min_body_rate"], variants["read_timeout_only"]
    report = {
        "benchmark": MODULE,
        "question": "what one slow sender of a heavy body costs the heavy requests queued behind it",
        "command": command_line(MODULE, sys.argv[1:] if argv is None else argv),
        "machine": machine_info(),
        "variants": variants,
        "ratio_slowest_queued_wait": ratio(baseline["slowest_s"], subject["slowest_s"]),
        "ratio_slow_connection_hold": ratio(
            baseline["slow_connection"]["after_s"], subject["slow_connection"]["after_s"]
        ),
        "served_of_queued": f"{subject['served']} of {subject['queued']} (baseline {baseline['served']})",
    }
    emit(report, args.output)


if __name__ == "__main__":
    main()
