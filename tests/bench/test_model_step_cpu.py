"""The model-step CPU benchmark drives real model-backed steps, and its figures are what it says they are."""

from __future__ import annotations

import asyncio

import pytest
import uvloop
from langchain_openai import ChatOpenAI

from bench.librarian_concurrency import start_fake_model
from bench.model_step_cpu import library_client_app, measure, settings_env, summary
from graphs.llm.openai_chat import LeanChatOpenAI
from librarian_svc.app import create_app
from librarian_svc.request_runner import SERVICES_KEY
from librarian_svc.settings import load_settings


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
    model = settings_env("http://127.0.0.1:9/v1")
    assert (model["LLM_PROVIDER"], model["OPENAI_BASE_URL"]) == ("openai-compatible", "http://127.0.0.1:9/v1")


def test_both_apps_run_their_steps_and_the_model_path_is_the_difference() -> None:
    process, url = start_fake_model(0)
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
    lean = create_app(load_settings(settings_env("http://127.0.0.1:9/v1"))).state[SERVICES_KEY].context.llm
    library = library_client_app("http://127.0.0.1:9/v1").state[SERVICES_KEY].context.llm
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
