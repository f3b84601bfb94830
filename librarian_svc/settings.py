"""Typed settings read once from environment variables at start-up.

Every variable is listed in the README's configuration table with its default; the defaults
live in `ENV_DEFAULTS` below and nowhere else. Invalid configuration raises `ConfigError`
with one line that names the variable, so the process refuses to start instead of failing
on the first request.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import msgspec

from graphs.config_files import GraceConfig, SectionDefinition, load_grace_config, load_sections
from graphs.llm.config import (
    ConfigError,
    EmbeddingConfig,
    LLMConfig,
    LLMProviderName,
    resolve_embedding_config,
    resolve_llm_config,
)

PROJECT_ROOT = Path(__file__).resolve().parent.parent

LogFormat = Literal["console", "json"]

ENV_DEFAULTS: dict[str, str] = {
    "HOST": "0.0.0.0",  # noqa: S104 - a container must listen on every interface
    "PORT": "8080",
    "LOG_FORMAT": "console",
    "LOG_LEVEL": "info",
    "LLM_PROVIDER": "auto",
    "LLM_MODEL": "",
    "LLM_TIMEOUT_MS": "20000",
    "LLM_MAX_RETRIES": "2",
    "LLM_TEMPERATURE": "0",
    "LLM_NATIVE_JSON_SCHEMA": "auto",
    "LLM_MAX_OUTPUT_TOKENS": "4096",
    "EMBEDDING_PROVIDER": "auto",
    "EMBEDDING_MODEL": "",
    "EMBEDDING_DIM": "512",
    "EMBEDDING_CACHE_SIZE": "20000",
    "EMBEDDING_BASE_URL": "",
    "EMBEDDING_API_KEY": "",
    "EMBEDDING_INPUT_TYPE": "auto",
    "REQUEST_TIMEOUT_MS": "25000",
    "MAX_BODY_BYTES": "8388608",
    "MAX_STATE_BYTES": "1048576",
    "STATE_SIGNING_KEY": "",
    "CONFIG_DIR": str(PROJECT_ROOT / "config"),
    "PROMPTS_DIR": str(PROJECT_ROOT / "prompts"),
    "GOOGLE_CLOUD_PROJECT": "",
    "GOOGLE_CLOUD_LOCATION": "",
    "SHUTDOWN_GRACE_S": "8",
    "KEEPALIVE_TIMEOUT_S": "120",
    "LIBRARIAN_NEAR_DUP_THRESHOLD": "0.8",
    "PLAYBOOK_DATA_DIR": str(PROJECT_ROOT / "data" / "playbooks"),
    "ACE_DEDUP_THRESHOLD": "0.85",
    "SEARCH_ALPHA": "0.5",
}


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the service reads from its environment, validated."""

    host: str
    port: int
    log_format: LogFormat
    log_level: Literal["debug", "info", "warning", "error"]
    llm: LLMConfig
    embedding: EmbeddingConfig
    request_timeout_ms: int
    max_body_bytes: int
    max_state_bytes: int
    state_signing_key: bytes | None = msgspec.field(default=None)
    config_dir: Path
    prompts_dir: Path
    google_cloud_project: str | None
    shutdown_grace_s: float
    keepalive_timeout_s: int
    librarian_near_dup_threshold: float
    playbook_data_dir: Path
    ace_dedup_threshold: float
    search_alpha: float
    sections: dict[str, list[SectionDefinition]]
    grace: GraceConfig

    def __repr__(self) -> str:
        """Never print the signing key (settings end up in logs and tracebacks)."""
        signed = self.state_signing_key is not None
        return f"Settings(engine={self.llm.provider!r}, port={self.port}, signed_state={signed})"


def _int(env: Mapping[str, str], name: str, *, low: int, high: int) -> int:
    raw = env.get(name, ENV_DEFAULTS[name]).strip()
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not an integer") from None
    if not low <= value <= high:
        raise ConfigError(f"{name}={value} is out of range [{low}, {high}]")
    return value


def _float(env: Mapping[str, str], name: str, *, low: float, high: float) -> float:
    raw = env.get(name, ENV_DEFAULTS[name]).strip()
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number") from None
    if not low <= value <= high:
        raise ConfigError(f"{name}={value} is out of range [{low}, {high}]")
    return value


def _choice(env: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    raw = env.get(name, ENV_DEFAULTS[name]).strip().lower()
    if raw not in choices:
        raise ConfigError(f"{name}={raw!r} must be one of {', '.join(choices)}")
    return raw


def _str(env: Mapping[str, str], name: str) -> str:
    return env.get(name, ENV_DEFAULTS.get(name, "")).strip()


def _dir(env: Mapping[str, str], name: str) -> Path:
    path = Path(_str(env, name))
    if not path.is_dir():
        raise ConfigError(f"{name}={str(path)!r} is not a directory")
    return path.resolve()  # absolute: what it names must not change with the working directory


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Read and validate the settings; raise `ConfigError` on the first bad variable."""
    env = os.environ if env is None else env
    llm_provider = _choice(
        env, "LLM_PROVIDER", ("auto", "heuristic", "gemini", "vertex", "openai", "azure", "openai-compatible")
    )
    llm = resolve_llm_config(
        env,
        provider=llm_provider,  # type: ignore[arg-type]
        model=_str(env, "LLM_MODEL"),
        timeout_s=_int(env, "LLM_TIMEOUT_MS", low=100, high=600_000) / 1000,
        max_retries=_int(env, "LLM_MAX_RETRIES", low=0, high=10),
        temperature=_float(env, "LLM_TEMPERATURE", low=0.0, high=2.0),
        native_json_schema=_choice(env, "LLM_NATIVE_JSON_SCHEMA", ("auto", "true", "json_object", "false")),
        max_output_tokens=_int(env, "LLM_MAX_OUTPUT_TOKENS", low=16, high=1_000_000),
    )
    embedding = resolve_embedding_config(
        env,
        provider=_choice(env, "EMBEDDING_PROVIDER", ("auto", "hashing", "gemini", "vertex", "openai")),
        model=_str(env, "EMBEDDING_MODEL"),
        dim=_int(env, "EMBEDDING_DIM", low=16, high=8192),
        cache_size=_int(env, "EMBEDDING_CACHE_SIZE", low=0, high=10_000_000),
        llm=llm,
        input_type=_choice(env, "EMBEDDING_INPUT_TYPE", ("auto", "true", "false")),
    )
    key = env.get("STATE_SIGNING_KEY", "")
    if key and len(key) < 16:
        raise ConfigError("STATE_SIGNING_KEY must be at least 16 characters (or unset to disable signing)")
    project = _str(env, "GOOGLE_CLOUD_PROJECT")
    config_dir = _dir(env, "CONFIG_DIR")
    return Settings(
        host=_str(env, "HOST"),
        port=_int(env, "PORT", low=1, high=65535),
        log_format=_choice(env, "LOG_FORMAT", ("console", "json")),  # type: ignore[arg-type]
        log_level=_choice(env, "LOG_LEVEL", ("debug", "info", "warning", "error")),  # type: ignore[arg-type]
        llm=llm,
        embedding=embedding,
        request_timeout_ms=_int(env, "REQUEST_TIMEOUT_MS", low=100, high=3_600_000),
        max_body_bytes=_int(env, "MAX_BODY_BYTES", low=1024, high=1 << 30),
        max_state_bytes=_int(env, "MAX_STATE_BYTES", low=1024, high=1 << 28),
        state_signing_key=key.encode() if key else None,
        config_dir=config_dir,
        prompts_dir=_dir(env, "PROMPTS_DIR"),
        google_cloud_project=project or None,
        shutdown_grace_s=_float(env, "SHUTDOWN_GRACE_S", low=0.0, high=60.0),
        keepalive_timeout_s=_int(env, "KEEPALIVE_TIMEOUT_S", low=1, high=3600),
        librarian_near_dup_threshold=_float(env, "LIBRARIAN_NEAR_DUP_THRESHOLD", low=0.1, high=1.0),
        playbook_data_dir=Path(_str(env, "PLAYBOOK_DATA_DIR")),  # created on first save
        ace_dedup_threshold=_float(env, "ACE_DEDUP_THRESHOLD", low=0.01, high=1.0),
        search_alpha=_float(env, "SEARCH_ALPHA", low=0.0, high=1.0),
        sections=load_sections(config_dir),
        grace=load_grace_config(config_dir, env),
    )


__all__ = ["ENV_DEFAULTS", "ConfigError", "LLMProviderName", "Settings", "load_settings"]
