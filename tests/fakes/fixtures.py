"""Pytest fixtures for the fake LLM server, imported into `tests/conftest.py`.

`fake_llm` is one server for the whole session (starting uvicorn per test would dominate the run);
`llm_server` hands it to a test with an empty script and no recorded requests, and cleans up after.
`openai_config` / `gemini_config` are `LLMConfig`s that point the real clients at it, and
`chat_model_factory` builds real chat models from such configs and closes their connections on the
test's own event loop afterwards (unclosed sockets would fail the run under `filterwarnings = error`).
`llm_client_for` gives in-process clients of the service app (`make_app`) with its model at the fake.
`scripted_llm` needs no server: a request context whose model is an in-process script (unit tests).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import msgspec
import pytest
from langchain_core.language_models import BaseChatModel
from litestar import Litestar
from litestar.testing import TestClient

from graphs.llm.config import LLMConfig
from graphs.llm.providers import aclose_chat_model, make_chat_model
from tests.fakes.chat_model import ScriptedFactory, scripted
from tests.fakes.llm_server import FakeLLMServer, provider_env


@pytest.fixture(name="fake_llm", scope="session")
def fake_llm_fixture() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(name="llm_server")
def llm_server_fixture(fake_llm: FakeLLMServer) -> Iterator[FakeLLMServer]:
    fake_llm.reset()
    yield fake_llm
    fake_llm.wait_until_idle()
    fake_llm.reset()


PROXY_VARIABLES = [f"{scheme}_PROXY" for scheme in ("HTTP", "HTTPS", "WS", "WSS", "ALL", "NO")]
PROXY_VARIABLES += [name.lower() for name in PROXY_VARIABLES]


@pytest.fixture(name="plain_environment")
def plain_environment_fixture(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No proxy variable and no netrc file, whatever the machine running the tests has: HTTP clients that trust
    the environment find nothing in it (where `graphs.llm.gemini_request` sends Gemini's calls itself)."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))


def fake_openai_config(server: FakeLLMServer, **overrides: object) -> LLMConfig:
    """An `openai` config aimed at `server`, with test-sized timeouts (override any field)."""
    config = LLMConfig(
        provider="openai",
        model="gpt-fake",
        api_key="sk-test-not-a-key",
        base_url=server.url,
        timeout_s=2.0,
        max_retries=0,
    )
    return msgspec.structs.replace(config, **overrides)


def fake_gemini_config(server: FakeLLMServer, **overrides: object) -> LLMConfig:
    """A `gemini` config aimed at `server`, with test-sized timeouts (override any field)."""
    config = LLMConfig(
        provider="gemini",
        model="gemini-fake",
        api_key="AIza-test-not-a-key",
        base_url=server.gemini_url,
        timeout_s=2.0,
        max_retries=0,
    )
    return msgspec.structs.replace(config, **overrides)


def fake_azure_config(server: FakeLLMServer, **overrides: object) -> LLMConfig:
    """An `azure` config aimed at `server`'s Azure routes (deployment `m-1`), with test-sized timeouts."""
    config = LLMConfig(
        provider="azure",
        model="m-1",
        api_key="k-test",
        azure_endpoint=server.azure_endpoint,
        azure_deployment="m-1",
        api_version="2024-10-21",
        timeout_s=2.0,
        max_retries=0,
    )
    return msgspec.structs.replace(config, **overrides)


@pytest.fixture(name="openai_config")
def openai_config_fixture(llm_server: FakeLLMServer) -> LLMConfig:
    return fake_openai_config(llm_server)


@pytest.fixture(name="gemini_config")
def gemini_config_fixture(llm_server: FakeLLMServer) -> LLMConfig:
    return fake_gemini_config(llm_server)


ChatModelFactory = Callable[[LLMConfig], BaseChatModel]


@pytest.fixture(name="chat_model_factory")
async def chat_model_factory_fixture() -> AsyncIterator[ChatModelFactory]:
    built: list[BaseChatModel] = []

    def build(cfg: LLMConfig) -> BaseChatModel:
        model = make_chat_model(cfg)
        assert model is not None, f"{cfg.provider} has no chat model"
        built.append(model)
        return model

    yield build
    for model in built:
        await aclose_chat_model(model)


def fake_llm_env(server: FakeLLMServer, provider: str = "openai", **extra: str) -> dict[str, str]:
    """The service environment for a model at `server`: `gemini`, else openai-compatible; 3 s, no retries."""
    return provider_env(provider, server.root_url) | {"LLM_TIMEOUT_MS": "3000", "LLM_MAX_RETRIES": "0", **extra}


LLMClientFor = Callable[..., TestClient[Litestar]]


@pytest.fixture(name="llm_client_for")
def llm_client_for_fixture(make_app: Callable[..., Litestar], llm_server: FakeLLMServer) -> Iterator[LLMClientFor]:
    """`llm_client_for(provider="openai", **env)`: a client of the app with `fake_llm_env`, closed after the test."""
    with ExitStack() as stack:

        def build(provider: str = "openai", **extra: str) -> TestClient[Litestar]:
            app = make_app(fake_llm_env(llm_server, provider, **extra))
            return stack.enter_context(TestClient(app=app, raise_server_exceptions=False))

        yield build


@pytest.fixture(name="scripted_llm")
def scripted_llm_fixture() -> ScriptedFactory:
    """`scripted_llm(*replies)`: a request context with an in-process scripted model (no HTTP; see chat_model.py)."""
    return scripted
