"""The model-step CPU benchmark drives real model-backed steps, and its figures are what it says they are."""

from __future__ import annotations

import asyncio
from typing import Any
from unittest import mock
from urllib.parse import urlsplit

import pytest
import uvloop
from langchain_core.language_models import BaseChatModel
from langchain_core.outputs import LLMResult
from langchain_openai import ChatOpenAI

from bench.librarian_concurrency import fake_model_for, start_fake_model
from bench.model_step_cpu import LIBRARY_RUN, SDK_POST, library_client_app, measure, settings_env, summary
from graphs.llm import gemini_request, reused_request
from graphs.llm.gemini_chat import LeanChatGoogleGenerativeAI
from graphs.llm.openai_chat import LeanChatOpenAI
from librarian_svc.app import create_app
from librarian_svc.request_runner import SERVICES_KEY
from librarian_svc.settings import load_settings
from tests.fakes.llm_server import provider_env


def test_summary_is_the_median_per_action_and_per_step() -> None:
    rounds = [(1000.0, 3000.0), (1200.0, 2000.0), (900.0, 5000.0)]
    assert summary(rounds) == {"search_us": 1000.0, "complete_us": 3000.0, "step_us": 2000.0}


def test_the_heuristic_app_has_no_model_settings_left(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_MODEL", "gpt-x")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    env = settings_env(None)
    assert env["LLM_PROVIDER"] == "heuristic"
    assert "LLM_MODEL" not in env
    assert "OPENAI_API_KEY" not in env
    model = settings_env("http://127.0.0.1:9")
    assert (model["LLM_PROVIDER"], model["OPENAI_BASE_URL"]) == ("openai-compatible", "http://127.0.0.1:9/v1")


def test_both_apps_run_their_steps_and_the_model_path_is_the_difference() -> None:
    process, url = start_fake_model(0)
    # The root, to which each provider adds its own API path: the fakes answer any path ending in
    # /chat/completions, so a doubled /v1 would not show in the run.
    assert urlsplit(url).path == ""
    try:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            figures = runner.run(measure(url, runs=2, rounds=1))
    finally:
        process.terminate()
        process.wait()
    for name in ("model", "heuristic"):
        assert set(figures[name]) == {"search_us", "complete_us", "step_us"}
        assert all(value > 0 for value in figures[name].values())
    assert figures["model_path_us"] == round(figures["model"]["step_us"] - figures["heuristic"]["step_us"], 1)


def test_the_library_client_app_asks_langchain_openais_own_chat_model() -> None:
    lean = create_app(load_settings(settings_env("http://127.0.0.1:9"))).state[SERVICES_KEY].context.llm
    library = library_client_app("http://127.0.0.1:9").state[SERVICES_KEY].context.llm
    assert type(lean) is LeanChatOpenAI
    assert type(library) is ChatOpenAI


def test_the_library_client_runs_in_the_rotation_and_the_saving_is_paired_by_round() -> None:
    process, url = start_fake_model(0)
    try:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            figures = runner.run(measure(url, runs=2, rounds=1, library_client=True))
    finally:
        process.terminate()
        process.wait()
    assert set(figures["library_client"]) == {"search_us", "complete_us", "step_us"}
    # One round: the paired saving is the difference of the two apps' step figures.
    assert figures["lean_client_saving_us"] == pytest.approx(
        figures["library_client"]["step_us"] - figures["model"]["step_us"], abs=0.2
    )


@pytest.mark.parametrize("library_run", [False, True], ids=["direct", "with-library-run"])
def test_the_library_run_app_alone_goes_through_ainvoke(library_run: bool) -> None:
    """The model app asks its provider directly; the `--library-run` contrast through langchain-core's run."""
    process, url = start_fake_model(0)
    runs: list[str] = []
    library_agenerate = BaseChatModel.agenerate

    async def counted(self: BaseChatModel, *args: Any, **kwargs: Any) -> LLMResult:
        runs.append(type(self).__name__)
        return await library_agenerate(self, *args, **kwargs)

    try:
        with (
            mock.patch.object(BaseChatModel, "agenerate", counted),
            asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner,
        ):
            figures = runner.run(measure(url, runs=2, rounds=1, library_run=library_run))
    finally:
        process.terminate()
        process.wait()
    if not library_run:
        assert runs == []
        assert LIBRARY_RUN not in figures
        return
    # Opening (2 steps), warming up (1 pair) and one round of 2 pairs: 8 steps, one call each.
    assert runs == ["LeanChatOpenAI"] * 8
    assert set(figures[LIBRARY_RUN]) == {"search_us", "complete_us", "step_us"}
    assert figures["unobserved_call_saving_us"] == pytest.approx(
        figures[LIBRARY_RUN]["step_us"] - figures["model"]["step_us"], abs=0.2
    )


def test_the_sdk_post_app_alone_posts_through_the_sdk() -> None:
    """The model app sends the SDK's request again; the `--sdk-post` contrast posts every call through the SDK."""
    process, url = start_fake_model(0)
    paths: list[str] = []
    sdk_post = reused_request.ReusedRequest.post

    async def counted(self: reused_request.ReusedRequest, *args: Any, **kwargs: Any) -> object:
        paths.append("reused")
        return await sdk_post(self, *args, **kwargs)

    try:
        with (
            mock.patch.object(reused_request.ReusedRequest, "post", counted),
            asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner,
        ):
            figures = runner.run(measure(url, runs=2, rounds=1, sdk_post=True))
    finally:
        process.terminate()
        process.wait()
    # Opening (2 steps), warming up (1 pair) and one round of 2 pairs: 8 steps for each app, the model app's reused.
    assert paths == ["reused"] * 8
    assert set(figures[SDK_POST]) == {"search_us", "complete_us", "step_us"}
    assert figures["reused_request_saving_us"] == pytest.approx(
        figures[SDK_POST]["step_us"] - figures["model"]["step_us"], abs=0.2
    )


@pytest.mark.usefixtures("plain_environment")
def test_the_gemini_sdk_post_app_alone_sends_through_google_genai() -> None:
    """With Gemini the model app sends its own request; the `--sdk-post` contrast sends every call through the SDK."""
    process, url = start_fake_model(0, fake_model_for("gemini", None))
    sent: list[str] = []
    once = gemini_request._generate_once

    async def counted(*args: Any, **kwargs: Any) -> Any:
        sent.append("lean")
        return await once(*args, **kwargs)

    try:
        with (
            mock.patch.object(gemini_request, "_generate_once", counted),
            asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner,
        ):
            figures = runner.run(measure(url, runs=2, rounds=1, sdk_post=True, provider="gemini"))
    finally:
        process.terminate()
        process.wait()
    assert sent == ["lean"] * 8  # the model app's 8 steps; none of the contrast's
    assert figures["gemini_request_saving_us"] == pytest.approx(
        figures[SDK_POST]["step_us"] - figures["model"]["step_us"], abs=0.2
    )


@pytest.mark.parametrize(
    ("provider", "expected"),
    [
        ("openai-compatible", {"LLM_PROVIDER": "openai-compatible", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}),
        ("gemini", {"LLM_PROVIDER": "gemini", "GEMINI_BASE_URL": "http://127.0.0.1:9"}),
    ],
)
def test_each_provider_asks_the_fake_at_its_own_api_root(provider: str, expected: dict[str, str]) -> None:
    env = provider_env(provider, "http://127.0.0.1:9")
    assert expected.items() <= env.items()
    settings = load_settings(settings_env("http://127.0.0.1:9", provider))
    assert settings.llm.provider == provider


def test_gemini_runs_on_the_full_fake_only() -> None:
    assert fake_model_for("gemini", None) == "full"
    assert fake_model_for("gemini", "full") == "full"
    assert fake_model_for("openai-compatible", None) == "lean"
    assert fake_model_for("openai-compatible", "full") == "full"
    with pytest.raises(ValueError, match="only the OpenAI API"):
        fake_model_for("gemini", "lean")


def test_the_gemini_app_asks_chat_google_generative_ai_and_its_steps_run() -> None:
    """Each step of the Gemini app makes its one model call through langchain-google-genai's chat model (the
    service's lean one; Session.open checks the count)."""
    assert (
        type(create_app(load_settings(settings_env("http://127.0.0.1:9", "gemini"))).state[SERVICES_KEY].context.llm)
        is LeanChatGoogleGenerativeAI
    )
    process, url = start_fake_model(0, fake_model_for("gemini", None))
    try:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            figures = runner.run(measure(url, runs=2, rounds=1, provider="gemini"))
    finally:
        process.terminate()
        process.wait()
    assert all(value > 0 for value in figures["model"].values())
