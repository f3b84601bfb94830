"""CPU of a model-backed Librarian think step, in-process: the figure issue 14's concurrency target hangs on.

`bench.librarian_concurrency` reports the service's CPU per step under load, but on a shared two-core
machine its wall-clock figures move with everyone else's work. This drives the same two steps (the
SEARCH of a new session, then the COMPLETE that follows it with five hits) through the whole app
in-process, one at a time, with the service's model client (`graphs.llm.openai_chat.LeanChatOpenAI`:
langchain-openai's `ChatOpenAI` posting its payload as built, the OpenAI SDK, its aiohttp transport)
aimed at `tests/fakes/lean_chat_server.py` answering at once in its own process, so the only CPU counted
is the service's (`time.process_time`, this process and its threads). The event loop is uvloop and the
collector is set up as a serving worker sets it up (`prepare_collector_for_serving`); logging is the
deployed JSON at INFO (to /dev/null).

The same steps run on the same app built for the embedded `heuristic` engine, alternating round by
round with the model-backed one, so `model_path_us` (model − heuristic) is what asking the model adds
to a step: prompt, client, parsing, usage. `--library-client` adds a third app whose model is
langchain-openai's own `ChatOpenAI` (the SDK's typed `create` and the reply converted on a worker
thread), in the same rotation: `lean_client_saving_us` is what `LeanChatOpenAI` saves a step.
`--sdk-post` adds the model-backed app once more, its every call posted through the OpenAI SDK's `post`
instead of sending the SDK's request again (`graphs.llm.reused_request`), in the same rotation:
`reused_request_saving_us` is what reusing the request saves a step; with `--provider gemini`, its every call
sent by google-genai's `generate_content` instead of `graphs.llm.gemini_request`: `gemini_request_saving_us`.
`--library-run` adds the model-backed app once more, its every call made through `ainvoke` (langchain-core's
LLM run around the provider call, which `graphs.llm.unobserved_call` skips when nobody observes it), in the
same rotation and for either provider: `unobserved_call_saving_us` is what skipping it saves a step. Medians
of `--rounds` rounds of `--runs` SEARCH + COMPLETE pairs; compare two trees by running this in each,
alternately (the machine's other load moves every figure by several percent). `--provider gemini` times
`ChatGoogleGenerativeAI` (google-genai, `cloudrun.yaml`'s provider) instead, against the full fake's
Gemini REST API.

    python -m bench.model_step_cpu [--runs 200] [--rounds 7] [--library-client] [--sdk-post]
                                   [--provider gemini] [--library-run]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any
from unittest import mock

import msgspec
import uvloop
from langchain_openai import ChatOpenAI

from bench.librarian_concurrency import HITS, PROVIDERS, QUESTION, fake_model_for, start_fake_model
from bench.step_breakdown import asgi_post
from bench.tools import emit_in_process
from graphs.llm import gemini_request, openai_chat, reused_request, unobserved_call
from librarian_svc.app import create_app
from librarian_svc.log_setup import configure_logging
from librarian_svc.settings import load_settings
from librarian_svc.startup_gc import prepare_collector_for_serving
from tests.fakes.llm_server import provider_env

MODULE = "bench.model_step_cpu"
ASKS = "CPU per model-backed Librarian step in-process (real ChatOpenAI, model answering at once)"
"""What the report answers."""
THINK_PATH = "/agent/librarian/think"
LIBRARY_RUN = "library_run"
"""The `--library-run` app: the model-backed one with every call through `ainvoke`."""
SDK_POST = "sdk_post"
"""The `--sdk-post` app: the model-backed one with every call sent by the SDK's own path."""
SDK_POST_SAVING = {"openai-compatible": "reused_request_saving_us", "gemini": "gemini_request_saving_us"}
"""What `--sdk-post` measures, by provider: sending the OpenAI SDK's request again, or Gemini's lean request."""


class Session:
    """One app and the bodies of its two steps (the COMPLETE carries the state its own SEARCH sealed)."""

    def __init__(self, app: Any, search: bytes, complete: bytes) -> None:
        """`app` serves both steps; the bodies are posted as they are on every run."""
        self.app = app
        self.search = search
        self.complete = complete

    @classmethod
    async def open(cls, app: Any, *, model_calls: int) -> Session:
        """Run one SEARCH → COMPLETE session on `app`, checking each answer, and keep its bodies.

        `model_calls` is what each step must report in `usage.llm_calls` (1 with the model, 0 without): a
        model-backed app that fell back to its rules would otherwise be timed as if it had asked the model.
        """
        first: dict[str, Any] = {"request_id": "m1", "user_query": QUESTION, "subject_id": "bench"}
        search = msgspec.json.encode(first)
        answer = await _step(app, search, "SEARCH", model_calls)
        round_ = {"queries_text": answer["queries_text"], "queries_vector": answer["queries_vector"], "results": HITS}
        complete = msgspec.json.encode({**first, "state": answer["state"], "search_history": [round_]})
        await _step(app, complete, "COMPLETE", model_calls)
        return cls(app, search, complete)

    async def cpu_us(self, runs: int) -> tuple[float, float]:
        """CPU per SEARCH and per COMPLETE over `runs` of each, in µs."""
        figures = []
        for body in (self.search, self.complete):
            started = time.process_time()
            for _ in range(runs):
                await asgi_post(self.app, THINK_PATH, body)
            figures.append((time.process_time() - started) / runs * 1e6)
        return figures[0], figures[1]


async def _step(app: Any, body: bytes, action: str, model_calls: int) -> dict[str, Any]:
    status, payload = await asgi_post(app, THINK_PATH, body)
    answer: dict[str, Any] = json.loads(payload)
    calls = answer.get("usage", {}).get("llm_calls")
    if status != 200 or answer.get("action") != action or calls != model_calls:
        raise RuntimeError(f"expected {action} after {model_calls} model call(s), got HTTP {status}: {payload[:300]!r}")
    return answer


def settings_env(model_url: str | None, provider: str = "openai-compatible") -> dict[str, str]:
    """The environment of the app under test: `provider` asking the fake model at `model_url`, or no model.

    Every model, key and embedding setting of the caller's environment is left out first, so a key exported in
    the shell can neither switch the app to a real provider nor change its embedder.
    """
    model_keys = ("LLM_", "OPENAI_", "GOOGLE_", "GEMINI_", "EMBEDDING_")
    env = {key: value for key, value in os.environ.items() if not key.startswith(model_keys)}
    if model_url is None:
        return env | {"LLM_PROVIDER": "heuristic"}
    return env | provider_env(provider, model_url) | {"LLM_TIMEOUT_MS": "30000", "REQUEST_TIMEOUT_MS": "60000"}


def summary(rounds: list[tuple[float, float]]) -> dict[str, float]:
    """Median CPU per SEARCH, per COMPLETE and per step (their mean), in µs, over the rounds."""
    search = statistics.median(s for s, _ in rounds)
    complete = statistics.median(c for _, c in rounds)
    step = statistics.median((s + c) / 2 for s, c in rounds)
    return {"search_us": round(search, 1), "complete_us": round(complete, 1), "step_us": round(step, 1)}


def library_client_app(model_url: str) -> Any:
    """The model-backed app with langchain-openai's own `ChatOpenAI` in place of `LeanChatOpenAI` (a contrast)."""
    with mock.patch.object(openai_chat, "LeanChatOpenAI", ChatOpenAI):
        return create_app(load_settings(settings_env(model_url)))


def serving(name: str) -> contextlib.AbstractContextManager[Any]:
    """While a contrast app serves: the `--library-run` app's model calls count as observed, so they go through
    `ainvoke`; the `--sdk-post` app's calls count as ones the lean request does not take, so the SDK sends them
    (the OpenAI SDK's `post`, or google-genai's `generate_content`)."""
    if name == LIBRARY_RUN:
        return mock.patch.object(unobserved_call, "unobserved", return_value=False)
    if name == SDK_POST:
        stack = contextlib.ExitStack()
        stack.enter_context(mock.patch.object(reused_request, "reusable", return_value=False))
        stack.enter_context(mock.patch.object(gemini_request, "takes", return_value=False))
        return stack
    return contextlib.nullcontext()


def paired_saving(slower: list[tuple[float, float]], model: list[tuple[float, float]]) -> float:
    """Median over rounds of a contrast app's step minus the model app's: the two ran back to back each round."""
    pairs = zip(slower, model, strict=True)
    return round(statistics.median((sum(contrast) - sum(lean)) / 2 for contrast, lean in pairs), 1)


async def measure(
    model_url: str,
    runs: int,
    rounds: int,
    *,
    library_client: bool = False,
    library_run: bool = False,
    sdk_post: bool = False,
    provider: str = "openai-compatible",
) -> dict[str, Any]:
    """Alternate the model-backed app and the heuristic one (and the contrasts asked for), `rounds` times, warmed up."""
    apps = {"model": create_app(load_settings(settings_env(model_url, provider)))}
    if library_client:
        apps["library_client"] = library_client_app(model_url)
    if library_run:
        apps[LIBRARY_RUN] = create_app(load_settings(settings_env(model_url, provider)))
    if sdk_post:
        apps[SDK_POST] = create_app(load_settings(settings_env(model_url, provider)))
    apps["heuristic"] = create_app(load_settings(settings_env(None)))
    async with contextlib.AsyncExitStack() as stack:
        for app in apps.values():
            await stack.enter_async_context(app.lifespan())
        prepare_collector_for_serving()
        sessions = {}
        for name, app in apps.items():
            with serving(name):
                sessions[name] = await Session.open(app, model_calls=0 if name == "heuristic" else 1)
                await sessions[name].cpu_us(max(1, runs // 5))
        per_round: dict[str, list[tuple[float, float]]] = {name: [] for name in sessions}
        names = list(sessions)
        for round_index in range(rounds):
            # Each round starts with another app, so no app always runs first (or right after the same one).
            shift = round_index % len(names)
            for name in names[shift:] + names[:shift]:
                with serving(name):
                    per_round[name].append(await sessions[name].cpu_us(runs))
    model, heuristic = summary(per_round["model"]), summary(per_round["heuristic"])
    figures: dict[str, Any] = {
        "model": model,
        "heuristic": heuristic,
        "model_path_us": round(model["step_us"] - heuristic["step_us"], 1),
        "model_steps_per_s_per_core": round(1e6 / model["step_us"], 1),
    }
    # Paired by round: each contrast ran back to back with the model app, so drift on the machine cancels out.
    if library_client:
        figures |= {
            "library_client": summary(per_round["library_client"]),
            "lean_client_saving_us": paired_saving(per_round["library_client"], per_round["model"]),
        }
    if sdk_post:
        figures |= {
            SDK_POST: summary(per_round[SDK_POST]),
            SDK_POST_SAVING[provider]: paired_saving(per_round[SDK_POST], per_round["model"]),
        }
    if library_run:
        figures |= {
            LIBRARY_RUN: summary(per_round[LIBRARY_RUN]),
            "unobserved_call_saving_us": paired_saving(per_round[LIBRARY_RUN], per_round["model"]),
        }
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200, help="SEARCH + COMPLETE pairs per round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument(
        "--library-client", action="store_true", help="also time langchain-openai's own ChatOpenAI, in the rotation"
    )
    parser.add_argument(
        "--library-run",
        action="store_true",
        help="also time the model-backed app with every call through ainvoke (langchain-core's run), in the rotation",
    )
    parser.add_argument(
        "--sdk-post",
        action="store_true",
        help="also time the model-backed app sending every call through the SDK's own path, in the rotation",
    )
    parser.add_argument(
        "--provider",
        choices=PROVIDERS,
        default="openai-compatible",
        help="the model-backed app's client: the OpenAI family's, or Gemini's (cloudrun.yaml's provider)",
    )
    args = parser.parse_args(argv)
    if args.library_client and args.provider != "openai-compatible":
        parser.error("--library-client contrasts OpenAI-family clients: it needs that provider")
    model, model_url = start_fake_model(0, fake_model_for(args.provider, None))
    try:
        with open(os.devnull, "w") as sink:
            configure_logging("json", "INFO", stream=sink)
            # The service serves on uvloop (uvicorn's default when installed); the client's transport runs on it.
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                figures = runner.run(
                    measure(
                        model_url,
                        args.runs,
                        args.rounds,
                        library_client=args.library_client,
                        library_run=args.library_run,
                        sdk_post=args.sdk_post,
                        provider=args.provider,
                    )
                )
    finally:
        model.terminate()
        model.wait()
    emit_in_process(MODULE, ASKS, argv or [], args, figures)


if __name__ == "__main__":
    main()
