"""The chat-model factory: the right client per provider, SDK retries off, SDKs imported lazily."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langchain_openai.chat_models.base import BaseChatOpenAI

from graphs.llm.config import ConfigError, LLMConfig
from graphs.llm.providers import aclose_chat_model, make_chat_model
from tests.fakes.fixtures import (  # noqa: F401 - fixtures, until tests/conftest.py imports them
    ChatModelFactory,
    chat_model_factory_fixture,
    fake_azure_config,
    fake_llm_fixture,
    llm_server_fixture,
)
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.support.fresh_interpreter import last_json_line

SDK_MODULES = ("openai", "langchain_openai", "google.genai", "langchain_google_genai")


def test_heuristic_has_no_chat_model() -> None:
    assert make_chat_model(LLMConfig(provider="heuristic", model=None)) is None


def test_a_provider_without_a_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="model"):
        make_chat_model(LLMConfig(provider="openai", model=None, api_key="k"))


@pytest.mark.parametrize(
    ("cfg", "class_name", "expected"),
    [
        pytest.param(
            LLMConfig(provider="openai", model="gpt-x", api_key="k", timeout_s=7.0, temperature=0.2),
            "LeanChatOpenAI",
            {"model_name": "gpt-x", "max_retries": 0, "request_timeout": 7.0, "temperature": 0.2},
            id="openai",
        ),
        pytest.param(
            LLMConfig(provider="openai-compatible", model="llama", api_key="not-needed", base_url="http://h:1/v1"),
            "LeanChatOpenAI",
            {"model_name": "llama", "max_retries": 0, "openai_api_base": "http://h:1/v1"},
            id="openai-compatible",
        ),
        pytest.param(
            LLMConfig(
                provider="azure",
                model="dep",
                api_key="k",
                azure_endpoint="https://x.openai.azure.com",
                azure_deployment="dep",
                api_version="2024-10-21",
            ),
            "LeanAzureChatOpenAI",
            {"deployment_name": "dep", "openai_api_version": "2024-10-21", "max_retries": 0},
            id="azure",
        ),
        pytest.param(
            LLMConfig(provider="gemini", model="gemini-x", api_key="k", base_url="http://h:2", timeout_s=3.0),
            "LeanChatGoogleGenerativeAI",
            # google-genai counts attempts: 1 means the SDK never retries.
            {"model": "gemini-x", "max_retries": 1, "timeout": 3.0, "base_url": "http://h:2"},
            id="gemini",
        ),
    ],
)
async def test_each_provider_gets_its_client(
    chat_model_factory: ChatModelFactory, cfg: LLMConfig, class_name: str, expected: dict[str, Any]
) -> None:
    model = chat_model_factory(cfg)
    assert type(model).__name__ == class_name
    assert {name: getattr(model, name) for name in expected} == expected


@pytest.mark.parametrize(
    "cfg",
    [
        pytest.param(LLMConfig(provider="openai", model="m", api_key="k"), id="openai"),
        pytest.param(
            LLMConfig(provider="openai-compatible", model="m", api_key="k", base_url="http://h:1/v1"),
            id="openai-compatible",
        ),
        pytest.param(
            LLMConfig(
                provider="azure",
                model="d",
                api_key="k",
                azure_endpoint="https://x",
                azure_deployment="d",
                api_version="v",
            ),
            id="azure",
        ),
    ],
)
async def test_openai_family_sends_over_aiohttp_and_keeps_idle_connections(
    chat_model_factory: ChatModelFactory, cfg: LLMConfig
) -> None:
    # The SDK's default transport costs about 1 ms more CPU per call and polls its whole pool on each
    # request (bench/librarian_concurrency.py); idle connections are kept 60 s, not the SDK's 5 s.
    model = chat_model_factory(cfg)
    assert isinstance(model, BaseChatOpenAI)
    transport = model.root_async_client._client._transport
    assert type(transport).__name__ == "AiohttpTransport"
    assert transport.limits.max_connections >= 1000
    assert transport.limits.keepalive_expiry == 60


@pytest.mark.slow  # fresh interpreters importing each provider's SDK
def test_provider_sdks_are_imported_only_when_their_provider_is_built() -> None:
    """One fresh interpreter: every graphs.llm module + heuristic, then Gemini, then OpenAI.

    `graphs.llm.openai_chat` (langchain-openai's chat models, subclassed) and `graphs.llm.reused_request` (the
    SDK's request sent again) are the OpenAI arm's own code, `graphs.llm.gemini_chat`, `graphs.llm.gemini_request`
    and `graphs.llm.gemini_reply` the Gemini arm's: they are left out of the walk and must be loaded by their arm
    alone.
    """
    script = textwrap.dedent(
        """
        import importlib, json, pkgutil, sys
        import graphs.llm, graphs.prompt_files
        ARMS = {"graphs.llm.openai_chat", "graphs.llm.reused_request"}
        ARMS |= {"graphs.llm.gemini_chat", "graphs.llm.gemini_request", "graphs.llm.gemini_reply"}
        for module in pkgutil.walk_packages(graphs.llm.__path__, "graphs.llm."):
            if module.name not in ARMS:
                importlib.import_module(module.name)
        from graphs.llm.config import LLMConfig
        from graphs.llm.providers import make_chat_model
        snapshots = []
        for provider in ("heuristic", "gemini", "openai"):
            make_chat_model(LLMConfig(provider=provider, model="m", api_key="k"))
            snapshots.append(sorted(sys.modules))
        print(json.dumps(snapshots))
        """
    )
    heuristic, gemini, openai = (set(snapshot) for snapshot in last_json_line(script, env=None, timeout=60))
    assert not heuristic & set(SDK_MODULES)
    gemini_arm = {"google.genai", "langchain_google_genai"}
    gemini_arm |= {"graphs.llm.gemini_chat", "graphs.llm.gemini_request", "graphs.llm.gemini_reply"}
    assert gemini_arm <= gemini
    assert not heuristic & gemini_arm
    openai_arm = {"openai", "langchain_openai", "graphs.llm.openai_chat", "graphs.llm.reused_request"}
    assert not gemini & openai_arm
    assert openai_arm <= openai


async def test_aclose_of_nothing_is_a_no_op() -> None:
    await aclose_chat_model(None)


async def test_azure_client_talks_to_its_deployment_route(llm_server: FakeLLMServer) -> None:
    cfg = fake_azure_config(llm_server, model="dep-1", api_key="azure-key", azure_deployment="dep-1")
    model = make_chat_model(cfg)
    assert model is not None
    llm_server.script(Reply(content="hello"))
    try:
        reply = await model.ainvoke([HumanMessage("hi")])
    finally:
        await aclose_chat_model(model)
    assert reply.content == "hello"
    (call,) = llm_server.calls
    assert call.path == "/openai/deployments/dep-1/chat/completions"
    assert "api-version=2024-10-21" in call.query
    assert call.headers["api-key"] == "azure-key"


@pytest.mark.parametrize(
    ("provider", "expected"),
    [
        pytest.param("openai", {"max_completion_tokens": 777}, id="openai"),
        # Ollama and LM Studio read only the older `max_tokens`: OpenAI-compatible servers get both.
        pytest.param("openai-compatible", {"max_completion_tokens": 777, "max_tokens": 777}, id="openai-compatible"),
        pytest.param("azure", {"max_completion_tokens": 777}, id="azure"),
        pytest.param("gemini", {"maxOutputTokens": 777}, id="gemini"),
    ],
)
async def test_every_call_carries_the_output_token_cap(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, provider: str, expected: dict[str, int]
) -> None:
    # A decoder-enforced schema does not make a model stop: uncapped, a local model ran into its timeout.
    common: dict[str, Any] = {"model": "m", "api_key": "k", "timeout_s": 2.0, "max_output_tokens": 777}
    cfg = {
        "openai": LLMConfig(provider="openai", base_url=llm_server.url, **common),
        "openai-compatible": LLMConfig(provider="openai-compatible", base_url=llm_server.url, **common),
        "azure": LLMConfig(
            provider="azure",
            azure_endpoint=llm_server.azure_endpoint,
            azure_deployment="m",
            api_version="2024-10-21",
            **common,
        ),
        "gemini": LLMConfig(provider="gemini", base_url=llm_server.gemini_url, **common),
    }[provider]
    llm_server.script(Reply(content="hi"))
    await chat_model_factory(cfg).ainvoke([HumanMessage("hi")])
    (body,) = llm_server.chat_requests
    sent = body.get("generationConfig", body)
    assert {name: sent.get(name) for name in ("max_completion_tokens", "max_tokens", "maxOutputTokens")} == {
        "max_completion_tokens": None,
        "max_tokens": None,
        "maxOutputTokens": None,
        **expected,
    }
