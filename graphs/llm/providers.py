"""The chat-model factory: one `match` from the resolved `LLMConfig` to a LangChain chat model.

Each provider SDK is imported inside its own arm, so a service configured for Gemini never loads the
OpenAI SDK and the embedded `heuristic` engine loads neither (DESIGN.md §2). SDK-level retries are
switched off everywhere: `graphs.llm.retry.call_with_retries` is the one retry loop, with the
request's deadline in view.

Every call carries an output-token cap (`LLM_MAX_OUTPUT_TOKENS`): a decoder-enforced JSON schema does not
make a model stop, and a local model left uncapped once generated past 3,000 tokens into its timeout.

The OpenAI-family models are langchain-openai's, sending their plain chat completions without the SDK's
request transform and thread hop (`graphs.llm.openai_chat`), as a request the SDK built once
(`graphs.llm.reused_request`): the same requests and replies, ~0.4 ms and ~0.45 ms less CPU per call
in-process, more under load. The Gemini Developer API's model is langchain-google-genai's, its calls sent
without google-genai's per-call rebuild of the request and its two thread hops (`graphs.llm.gemini_chat`,
`graphs.llm.gemini_request`); Vertex AI's keeps the library's own path.

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
    from google.auth.credentials import Credentials
    from langchain_core.language_models import BaseChatModel

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"


_OPENAI_MODULES = ("graphs.llm.openai_chat", "httpx2", "openai")
CHAT_MODULES: dict[str, tuple[str, ...]] = {
    "heuristic": (),
    "gemini": ("graphs.llm.gemini_chat",),
    "vertex": ("langchain_google_genai", "google.auth"),
    "openai": _OPENAI_MODULES,
    "openai-compatible": _OPENAI_MODULES,
    "azure": _OPENAI_MODULES,
}
"""What each arm of `make_chat_model` imports, so a worker's fork server can import it ahead
(`librarian_svc.worker_preload`); tests/graphs/llm/test_providers_modules.py keeps it true."""


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


def application_default_credentials(variable: str) -> Credentials:
    """Load Application Default Credentials for Vertex AI now, so a machine without any fails at start-up.

    ADC is what a Cloud Run service has (its service account, through the metadata server); elsewhere
    `GOOGLE_APPLICATION_CREDENTIALS` or gcloud's login. Nothing is fetched here: the access token is
    obtained (and refreshed) by google-genai on the first call.

    Args:
        variable: The setting that asked for Vertex AI (`LLM_PROVIDER=vertex`), named in the error.

    Raises:
        ConfigError: No credentials could be found, or the credentials file is unusable.
    """
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    try:
        credentials, _project = google.auth.default(scopes=[CLOUD_PLATFORM_SCOPE])
    except DefaultCredentialsError as exc:
        reason = " ".join(str(exc).split())
        raise ConfigError(f"{variable}=vertex needs Application Default Credentials: {reason}") from None
    return credentials


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
            from graphs.llm.gemini_chat import LeanChatGoogleGenerativeAI

            return LeanChatGoogleGenerativeAI(
                model=cfg.model or "",
                google_api_key=_secret(cfg.api_key),
                vertexai=False,  # never switched by GOOGLE_GENAI_USE_VERTEXAI behind the configuration's back
                base_url=cfg.base_url,
                temperature=cfg.temperature,
                max_output_tokens=cfg.max_output_tokens,
                timeout=cfg.timeout_s,
                # google-genai reads 0 as "its default" in some versions; 1 attempt = no SDK retries.
                max_retries=1,
            )
        case "vertex":
            from langchain_google_genai import ChatGoogleGenerativeAI

            return ChatGoogleGenerativeAI(
                model=cfg.model or "",
                vertexai=True,
                project=cfg.project,
                location=cfg.location,
                credentials=application_default_credentials("LLM_PROVIDER"),
                base_url=cfg.base_url,
                temperature=cfg.temperature,
                max_output_tokens=cfg.max_output_tokens,
                timeout=cfg.timeout_s,
                max_retries=1,
            )
        case "openai" | "openai-compatible":
            from graphs.llm.openai_chat import LeanChatOpenAI

            # The cap goes out as `max_completion_tokens` (OpenAI deprecated `max_tokens`); Ollama and LM Studio read
            # only `max_tokens`, so OpenAI-compatible servers get both, with the same value.
            compatible = cfg.provider == "openai-compatible"
            return LeanChatOpenAI(
                http_async_client=_openai_http_client(),
                model=cfg.model or "",
                api_key=_secret(cfg.api_key),
                base_url=cfg.base_url,
                temperature=cfg.temperature,
                max_completion_tokens=cfg.max_output_tokens,
                extra_body={"max_tokens": cfg.max_output_tokens} if compatible else None,
                timeout=cfg.timeout_s,
                max_retries=0,
            )
        case "azure":
            from graphs.llm.openai_chat import LeanAzureChatOpenAI

            return LeanAzureChatOpenAI(
                http_async_client=_openai_http_client(),
                model=cfg.model,
                azure_endpoint=cfg.azure_endpoint,
                azure_deployment=cfg.azure_deployment,
                api_version=cfg.api_version,
                api_key=_secret(cfg.api_key),
                temperature=cfg.temperature,
                max_completion_tokens=cfg.max_output_tokens,
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
