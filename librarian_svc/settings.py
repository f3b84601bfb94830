"""Typed settings read once from environment variables at start-up.

Every variable is listed in the README's configuration table with its default; the defaults
live in `ENV_DEFAULTS` below and nowhere else (the three directory ones, and their reading, come from
`graphs/directory_settings.py`, which `python -m graphs.ace` shares). Invalid configuration raises `ConfigError`
with one line that names the variable, so the process refuses to start instead of failing
on the first request.
"""

from __future__ import annotations

import ipaddress
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Literal, TypeVar

import msgspec

from graphs.config_files import GraceConfig, SectionDefinition, load_grace_config, load_sections
from graphs.directory_settings import (
    DIRECTORY_DEFAULTS,
    PROJECT_ROOT,
    load_config_dir,
    load_playbook_data_dir,
    load_prompts_dir,
)
from graphs.llm.config import (
    ConfigError,
    EmbeddingConfig,
    LLMConfig,
    LLMProviderName,
    check_url_settings,
    resolve_embedding_config,
    resolve_llm_config,
)
from graphs.prompt_files import check_prompts
from librarian_svc.cpus import available_cpus

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
    "WORKER_MEMORY_BUDGET_MB": "256",
    "MIN_BODY_RATE_KB_S": "1000",
    "MAX_STATE_BYTES": "1048576",
    "STATE_SIGNING_KEYS": "",
    "STATE_SIGNING_KEY": "",
    "STATE_TTL_S": "0",
    "CONFIG_DIR": DIRECTORY_DEFAULTS["CONFIG_DIR"],
    "PROMPTS_DIR": DIRECTORY_DEFAULTS["PROMPTS_DIR"],
    "GOOGLE_CLOUD_PROJECT": "",
    "GOOGLE_CLOUD_LOCATION": "",
    "SHUTDOWN_GRACE_S": "8",
    "KEEPALIVE_TIMEOUT_S": "120",
    "REQUEST_READ_TIMEOUT_S": "30",
    "MAX_CONNECTIONS_PER_WORKER": "1000",
    "WEB_CONCURRENCY": "auto",
    "WORKER_HUNG_AFTER_S": "5",
    "LIBRARIAN_NEAR_DUP_THRESHOLD": "0.8",
    "PLAYBOOK_DATA_DIR": DIRECTORY_DEFAULTS["PLAYBOOK_DATA_DIR"],
    "ACE_DEDUP_THRESHOLD": "0.85",
    "SEARCH_ALPHA": "0.5",
}


class StateSettings(msgspec.Struct, frozen=True, kw_only=True):
    """How state tokens are signed: the keys (the first signs, all verify), their size limit and lifetime."""

    keys: list[bytes]
    max_state_bytes: int
    ttl_s: int | None

    def __repr__(self) -> str:
        """Never print a key (settings end up in logs and tracebacks)."""
        return f"StateSettings(keys={len(self.keys)}, max_state_bytes={self.max_state_bytes}, ttl_s={self.ttl_s})"


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
    worker_memory_budget_mb: int
    min_body_rate_kb_s: float
    state: StateSettings
    config_dir: Path
    prompts_dir: Path
    google_cloud_project: str | None
    shutdown_grace_s: float
    keepalive_timeout_s: int
    request_read_timeout_s: float
    max_connections_per_worker: int
    web_concurrency: int
    worker_hung_after_s: int
    librarian_near_dup_threshold: float
    playbook_data_dir: Path
    ace_dedup_threshold: float
    search_alpha: float
    sections: dict[str, list[SectionDefinition]]
    grace: GraceConfig

    def __repr__(self) -> str:
        """Never print the signing keys (settings end up in logs and tracebacks)."""
        return f"Settings(engine={self.llm.provider!r}, port={self.port}, state={self.state!r})"


Number = TypeVar("Number", int, float)


def _number(env: Mapping[str, str], name: str, parse: type[Number], what: str, low: Number, high: Number) -> Number:
    """The variable parsed with `parse` (`what` it must be, for the error) and within [low, high]."""
    raw = env.get(name, ENV_DEFAULTS[name]).strip()
    try:
        value = parse(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not {what}") from None
    if not low <= value <= high:
        raise ConfigError(f"{name}={value} is out of range [{low}, {high}]")
    return value


def _int(env: Mapping[str, str], name: str, *, low: int, high: int) -> int:
    return _number(env, name, int, "an integer", low, high)


def _float(env: Mapping[str, str], name: str, *, low: float, high: float) -> float:
    return _number(env, name, float, "a number", low, high)


def _choice(env: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    raw = env.get(name, ENV_DEFAULTS[name]).strip().lower()
    if raw not in choices:
        raise ConfigError(f"{name}={raw!r} must be one of {', '.join(choices)}")
    return raw


def _str(env: Mapping[str, str], name: str) -> str:
    return env.get(name, ENV_DEFAULTS.get(name, "")).strip()


_HOST_NAME = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)(?:\.(?!-)[A-Za-z0-9-]{1,63}(?<!-))*")


def _host(env: Mapping[str, str]) -> str:
    """An IP address or a host name (a bad one would otherwise fail only when uvicorn binds)."""
    raw = _str(env, "HOST")
    try:
        ipaddress.ip_address(raw)
    except ValueError:
        if len(raw) > 253 or not _HOST_NAME.fullmatch(raw) or raw.replace(".", "").isdigit():
            raise ConfigError(f"HOST={raw!r} is not an IP address or a host name") from None
    return raw


def _workers(env: Mapping[str, str]) -> int:
    """Worker processes: a number, or `auto` for the CPUs this process may use (cgroup quota and affinity).

    The name is the one platforms and buildpacks set; the service reads it here (not uvicorn), so a
    value set outside never meets an app uvicorn cannot fork.
    """
    raw = _str(env, "WEB_CONCURRENCY").lower()
    if raw == "auto":
        return available_cpus()
    try:
        return _int(env, "WEB_CONCURRENCY", low=1, high=64)
    except ConfigError as exc:
        raise ConfigError(f"{exc} (a number of worker processes, or auto)") from None


def load_state_settings(env: Mapping[str, str] | None = None) -> StateSettings:
    """The state-token settings alone (the service and `python -m librarian_svc.state` share them).

    `STATE_SIGNING_KEYS` is a comma-separated list, newest first; `STATE_SIGNING_KEY` is its one-key
    alias. No key at all is allowed here: the service then signs with an ephemeral key of its own.
    """
    env = os.environ if env is None else env
    many, one = _str(env, "STATE_SIGNING_KEYS"), _str(env, "STATE_SIGNING_KEY")
    if many and one:
        raise ConfigError("set STATE_SIGNING_KEYS or its alias STATE_SIGNING_KEY, not both")
    keys = [k.strip() for k in (many or one).split(",")] if (many or one) else []
    for index, key in enumerate(keys):
        if len(key) < 16:
            name = "STATE_SIGNING_KEYS" if many else "STATE_SIGNING_KEY"
            raise ConfigError(f"{name}: key {index + 1} is shorter than 16 characters")
    ttl = _int(env, "STATE_TTL_S", low=0, high=365 * 86_400)
    return StateSettings(
        keys=[k.encode() for k in keys],
        max_state_bytes=_int(env, "MAX_STATE_BYTES", low=1024, high=1 << 28),
        ttl_s=ttl or None,
    )


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Read and validate the settings; raise `ConfigError` on the first bad variable."""
    env = os.environ if env is None else env
    check_url_settings(env)
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
    project = _str(env, "GOOGLE_CLOUD_PROJECT")
    config_dir = load_config_dir(env)
    prompts_dir = load_prompts_dir(env)
    check_prompts(prompts_dir)
    return Settings(
        host=_host(env),
        port=_int(env, "PORT", low=1, high=65535),
        log_format=_choice(env, "LOG_FORMAT", ("console", "json")),  # type: ignore[arg-type]
        log_level=_choice(env, "LOG_LEVEL", ("debug", "info", "warning", "error")),  # type: ignore[arg-type]
        llm=llm,
        embedding=embedding,
        request_timeout_ms=_int(env, "REQUEST_TIMEOUT_MS", low=100, high=3_600_000),
        max_body_bytes=_int(env, "MAX_BODY_BYTES", low=1024, high=1 << 30),
        worker_memory_budget_mb=_int(env, "WORKER_MEMORY_BUDGET_MB", low=16, high=1 << 20),
        min_body_rate_kb_s=_float(env, "MIN_BODY_RATE_KB_S", low=0.0, high=10_000_000.0),
        state=load_state_settings(env),
        config_dir=config_dir,
        prompts_dir=prompts_dir,
        google_cloud_project=project or None,
        shutdown_grace_s=_float(env, "SHUTDOWN_GRACE_S", low=0.0, high=60.0),
        keepalive_timeout_s=_int(env, "KEEPALIVE_TIMEOUT_S", low=1, high=3600),
        request_read_timeout_s=_float(env, "REQUEST_READ_TIMEOUT_S", low=0.1, high=3600.0),
        max_connections_per_worker=_int(env, "MAX_CONNECTIONS_PER_WORKER", low=4, high=1_000_000),
        web_concurrency=_workers(env),
        worker_hung_after_s=_int(env, "WORKER_HUNG_AFTER_S", low=1, high=3600),
        librarian_near_dup_threshold=_float(env, "LIBRARIAN_NEAR_DUP_THRESHOLD", low=0.1, high=1.0),
        playbook_data_dir=load_playbook_data_dir(env),  # created on first save
        ace_dedup_threshold=_float(env, "ACE_DEDUP_THRESHOLD", low=0.01, high=1.0),
        search_alpha=_float(env, "SEARCH_ALPHA", low=0.0, high=1.0),
        sections=load_sections(config_dir),
        grace=load_grace_config(config_dir, env),
    )


__all__ = [
    "ENV_DEFAULTS",
    "PROJECT_ROOT",
    "ConfigError",
    "LLMProviderName",
    "Settings",
    "StateSettings",
    "load_settings",
    "load_state_settings",
]


CONFIG_ERROR_STATUS = 2
"""Exit status for a configuration error, in the single process as in a worker."""


def report_config_error(exc: ConfigError) -> int:
    """Print the one line a configuration problem gets (never a traceback); the exit status to end with."""
    print(f"librarian-svc: configuration error: {exc}", file=sys.stderr)
    return CONFIG_ERROR_STATUS
