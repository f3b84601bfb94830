"""The chat-model factory: one `match` from the resolved `LLMConfig` to a LangChain chat model.

Each provider SDK is imported inside its own arm, so a service configured for Gemini never loads the
OpenAI SDK and the embedded `heuristic` engine loads neither (DESIGN.md §2). SDK-level retries are
switched off everywhere: `graphs.llm.retry.call_with_retries` is the one retry loop, with the
request's deadline in view.

Every model owns its HTTP connection pool (langchain-openai would otherwise share one per base URL
across the process), so `aclose_chat_model` can close exactly that model's connections on shutdown
without breaking any other model, and a pool never outlives the event loop it was opened on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import SecretStr

from graphs.llm.config import ConfigError, LLMConfig

if TYPE_CHECKING:
    import httpx2
    from langchain_core.language_models import BaseChatModel


def _openai_http_client() -> httpx2.AsyncClient:
    """The async HTTP client for the OpenAI SDK: its aiohttp transport, idle connections kept 60 s.

    The SDK's default transport (httpx2 + httpcore2 + anyio) costs about 1 ms more CPU per call and
    its pool polls every idle connection on each request, so a worker with many model calls in
    flight spends its core on the pool (bench/librarian_concurrency.py); the SDK documents aiohttp
    as its transport "for improved concurrency performance". The SDK's limits allow 1,000
    connections; aiohttp reads only that and the keep-alive expiry, raised from the SDK's 5 s so a
    steady trickle of calls reuses connections instead of reconnecting.
    """
    import httpx2
    import openai

    limits = httpx2.Limits(max_connections=1000, keepalive_expiry=60)
    return openai.DefaultAioHttpClient(limits=limits)


def _secret(value: str | None) -> SecretStr | None:
    return None if value is None else SecretStr(value)


def make_chat_model(cfg: LLMConfig) -> BaseChatModel | None:
    """The chat model `cfg` describes, or None for the embedded `heuristic` engine (no LLM at all).

    Raises:
        ConfigError: The configuration lacks what its provider needs (normally caught earlier, by
            `resolve_llm_config`).
    """
    if cfg.provider != "heuristic" and not cfg.model:
        raise ConfigError(f"LLM_PROVIDER={cfg.provider} needs a model name")
    match cfg.provider:
        case "heuristic":
            return None
        case "gemini":
            from langchain_google_genai import ChatGoogleGenerativeAI

            return ChatGoogleGenerativeAI(
                model=cfg.model or "",
                google_api_key=_secret(cfg.api_key),
                base_url=cfg.base_url,
                temperature=cfg.temperature,
                timeout=cfg.timeout_s,
                # google-genai reads 0 as "its default" in some versions; 1 attempt = no SDK retries.
                max_retries=1,
            )
        case "openai" | "openai-compatible":
            from langchain_openai import ChatOpenAI

            return ChatOpenAI(
                http_async_client=_openai_http_client(),
                model=cfg.model or "",
                api_key=_secret(cfg.api_key),
                base_url=cfg.base_url,
                temperature=cfg.temperature,
                timeout=cfg.timeout_s,
                max_retries=0,
            )
        case "azure":
            from langchain_openai import AzureChatOpenAI

            return AzureChatOpenAI(
                http_async_client=_openai_http_client(),
                model=cfg.model,
                azure_endpoint=cfg.azure_endpoint,
                azure_deployment=cfg.azure_deployment,
                api_version=cfg.api_version,
                api_key=_secret(cfg.api_key),
                temperature=cfg.temperature,
                timeout=cfg.timeout_s,
                max_retries=0,
            )
    raise ConfigError(f"LLM_PROVIDER={cfg.provider!r} is not a known provider")  # pragma: no cover


async def aclose_chat_model(model: BaseChatModel | None) -> None:
    """Close the connections `model` holds; call it on the event loop that used the model, at shutdown.

    Duck-typed so that no provider SDK is imported to close a model of another provider.
    """
    if model is None:
        return
    client = getattr(model, "root_async_client", None)  # ChatOpenAI / AzureChatOpenAI
    if client is not None:
        await client.close()
    aclose = getattr(model, "aclose", None)  # ChatGoogleGenerativeAI
    if aclose is not None:
        await aclose()
