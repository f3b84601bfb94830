"""Which chat model and embedder the agents use, resolved from the environment.

The resolution rules (README, "Choosing an engine"): an explicit `LLM_PROVIDER` must come
with its credentials or start-up fails; `auto` picks the provider whose key is present and
falls back to the embedded `heuristic` engine when there is none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal
from urllib.parse import urlsplit

import msgspec

LLMProviderName = Literal["heuristic", "gemini", "openai", "azure", "openai-compatible"]
EmbeddingProviderName = Literal["hashing", "gemini", "openai"]

DEFAULT_MODELS: dict[str, str] = {
    "gemini": "gemini-2.5-flash",
    "openai": "gpt-4o-mini",
}
DEFAULT_EMBEDDING_MODELS: dict[str, str] = {
    "hashing": "hashing-char-ngram-v1",
    "gemini": "models/gemini-embedding-001",
    "openai": "text-embedding-3-small",
}
DEFAULT_AZURE_API_VERSION = "2024-10-21"


class ConfigError(Exception):
    """A configuration problem, phrased as the one line the operator needs to read."""


class LLMConfig(msgspec.Struct, frozen=True, kw_only=True):
    """A resolved chat-model configuration (provider is never `auto` here)."""

    provider: LLMProviderName
    model: str | None
    api_key: str | None = None
    base_url: str | None = None
    azure_endpoint: str | None = None
    azure_deployment: str | None = None
    api_version: str | None = None
    timeout_s: float = 20.0
    max_retries: int = 2
    temperature: float = 0.0
    native_json_schema: bool = True

    def __repr__(self) -> str:
        """Keep the key out of logs and tracebacks."""
        return f"LLMConfig(provider={self.provider!r}, model={self.model!r}, base_url={self.base_url!r})"


class EmbeddingConfig(msgspec.Struct, frozen=True, kw_only=True):
    """A resolved embedder configuration."""

    provider: EmbeddingProviderName
    model: str
    dim: int = 512
    cache_size: int = 50_000
    api_key: str | None = None
    base_url: str | None = None

    def __repr__(self) -> str:
        """Keep the key out of logs and tracebacks."""
        return f"EmbeddingConfig(provider={self.provider!r}, model={self.model!r})"


URL_SUFFIXES = ("_BASE_URL", "_ENDPOINT")
"""A variable whose name ends so holds a URL: `_get` checks it whenever it is read."""
URL_VARIABLES = ("GEMINI_BASE_URL", "OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT")
"""Every URL setting the service reads; `check_url_settings` checks them all at start-up, whichever provider
is chosen, so a typo is found before the day someone switches providers. Add new ones here."""


def url_problem(value: str) -> str | None:
    """Why `value` is not a usable http(s) URL (no scheme, another scheme, no host, a bad port), or None."""
    if any(ch.isspace() for ch in value):
        return "contains whitespace"
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in range
    except ValueError as exc:
        return f"is not a URL ({exc})"
    if parts.scheme.lower() not in ("http", "https"):
        return "must start with http:// or https://"
    if not parts.hostname:
        return "has no host"
    return None


def check_url(name: str, value: str) -> str:
    """`value` when it is an http(s) URL with a host; otherwise a `ConfigError` naming the variable."""
    problem = url_problem(value)
    if problem is not None:
        raise ConfigError(f"{name}={value!r} is not a valid URL: it {problem} (e.g. https://host:port/v1)")
    return value


def check_url_settings(env: Mapping[str, str]) -> None:
    """Check every URL setting in `URL_VARIABLES` that is set (an unset or empty one is simply absent)."""
    for name in URL_VARIABLES:
        _get(env, name)


def _get(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    if value and name.endswith(URL_SUFFIXES):
        check_url(name, value)
    return value or None


def _auto_provider(env: Mapping[str, str]) -> LLMProviderName:
    if _get(env, "GOOGLE_API_KEY"):
        return "gemini"
    if _get(env, "AZURE_OPENAI_API_KEY") and _get(env, "AZURE_OPENAI_ENDPOINT"):
        return "azure"
    if _get(env, "OPENAI_BASE_URL"):
        return "openai-compatible"
    if _get(env, "OPENAI_API_KEY"):
        return "openai"
    return "heuristic"


def _require(env: Mapping[str, str], provider: str, *names: str) -> None:
    missing = [n for n in names if not _get(env, n)]
    if missing:
        raise ConfigError(f"LLM_PROVIDER={provider} needs {', '.join(missing)} to be set")


def resolve_llm_config(
    env: Mapping[str, str],
    *,
    provider: LLMProviderName | Literal["auto"],
    model: str,
    timeout_s: float,
    max_retries: int,
    temperature: float,
    native_json_schema: str,
) -> LLMConfig:
    """Resolve `auto`, check credentials and fill the provider's default model."""
    chosen: LLMProviderName = _auto_provider(env) if provider == "auto" else provider
    common = {"timeout_s": timeout_s, "max_retries": max_retries, "temperature": temperature}
    native = native_json_schema == "true" or (native_json_schema == "auto" and chosen != "openai-compatible")
    match chosen:
        case "heuristic":
            return LLMConfig(provider="heuristic", model=None, native_json_schema=False, **common)  # type: ignore[arg-type]
        case "gemini":
            _require(env, chosen, "GOOGLE_API_KEY")
            return LLMConfig(
                provider="gemini",
                model=model or DEFAULT_MODELS["gemini"],
                api_key=_get(env, "GOOGLE_API_KEY"),
                base_url=_get(env, "GEMINI_BASE_URL"),
                native_json_schema=native,
                **common,  # type: ignore[arg-type]
            )
        case "openai":
            _require(env, chosen, "OPENAI_API_KEY")
            return LLMConfig(
                provider="openai",
                model=model or DEFAULT_MODELS["openai"],
                api_key=_get(env, "OPENAI_API_KEY"),
                base_url=_get(env, "OPENAI_BASE_URL"),
                native_json_schema=native,
                **common,  # type: ignore[arg-type]
            )
        case "openai-compatible":
            _require(env, chosen, "OPENAI_BASE_URL")
            if not model:
                raise ConfigError("LLM_PROVIDER=openai-compatible needs LLM_MODEL (the served model's name)")
            return LLMConfig(
                provider="openai-compatible",
                model=model,
                # The OpenAI client insists on a key; local servers ignore it.
                api_key=_get(env, "OPENAI_API_KEY") or "not-needed",
                base_url=_get(env, "OPENAI_BASE_URL"),
                native_json_schema=native,
                **common,  # type: ignore[arg-type]
            )
        case "azure":
            _require(env, chosen, "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_DEPLOYMENT")
            deployment = _get(env, "AZURE_OPENAI_DEPLOYMENT")
            return LLMConfig(
                provider="azure",
                model=model or deployment,
                api_key=_get(env, "AZURE_OPENAI_API_KEY"),
                azure_endpoint=_get(env, "AZURE_OPENAI_ENDPOINT"),
                azure_deployment=deployment,
                api_version=_get(env, "AZURE_OPENAI_API_VERSION") or DEFAULT_AZURE_API_VERSION,
                native_json_schema=native,
                **common,  # type: ignore[arg-type]
            )
    raise ConfigError(f"LLM_PROVIDER={provider!r} is not a known provider")  # pragma: no cover


def resolve_embedding_config(
    env: Mapping[str, str],
    *,
    provider: str,
    model: str,
    dim: int,
    cache_size: int,
    llm: LLMConfig,
) -> EmbeddingConfig:
    """Resolve the embedder: `auto` follows the chat provider's key, else the embedded hashing embedder."""
    follow_llm: dict[str, EmbeddingProviderName] = {"gemini": "gemini", "openai": "openai"}
    chosen = follow_llm.get(llm.provider, "hashing") if provider == "auto" else provider
    match chosen:
        case "hashing":
            return EmbeddingConfig(
                provider="hashing", model=model or DEFAULT_EMBEDDING_MODELS["hashing"], dim=dim, cache_size=cache_size
            )
        case "gemini":
            if not _get(env, "GOOGLE_API_KEY"):
                raise ConfigError("EMBEDDING_PROVIDER=gemini needs GOOGLE_API_KEY to be set")
            return EmbeddingConfig(
                provider="gemini",
                model=model or DEFAULT_EMBEDDING_MODELS["gemini"],
                dim=dim,
                cache_size=cache_size,
                api_key=_get(env, "GOOGLE_API_KEY"),
                base_url=_get(env, "GEMINI_BASE_URL"),
            )
        case "openai":
            if not (_get(env, "OPENAI_API_KEY") or _get(env, "OPENAI_BASE_URL")):
                raise ConfigError("EMBEDDING_PROVIDER=openai needs OPENAI_API_KEY (or OPENAI_BASE_URL) to be set")
            return EmbeddingConfig(
                provider="openai",
                model=model or DEFAULT_EMBEDDING_MODELS["openai"],
                dim=dim,
                cache_size=cache_size,
                api_key=_get(env, "OPENAI_API_KEY") or "not-needed",
                base_url=_get(env, "OPENAI_BASE_URL"),
            )
    raise ConfigError(f"EMBEDDING_PROVIDER={provider!r} is not a known provider")  # pragma: no cover
