"""Settings: every variable validated at start-up, one clear line on failure, `auto` provider resolution."""

from __future__ import annotations

import subprocess
import sys

import pytest

from librarian_svc.settings import ENV_DEFAULTS, ConfigError, load_settings
from tests.support.live_service import PROJECT_ROOT


def test_defaults_give_the_embedded_engine() -> None:
    settings = load_settings({})
    assert settings.llm.provider == "heuristic"
    assert settings.embedding.provider == "hashing"
    assert settings.port == int(ENV_DEFAULTS["PORT"])
    assert settings.state.keys == []  # the service then signs with an ephemeral key of its own
    assert settings.state.ttl_s is None


@pytest.mark.parametrize(
    ("env", "provider", "model"),
    [
        ({"GOOGLE_API_KEY": "g"}, "gemini", "gemini-2.5-flash"),
        ({"OPENAI_API_KEY": "o"}, "openai", "gpt-4o-mini"),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "LLM_MODEL": "local"}, "openai-compatible", "local"),
        (
            {"AZURE_OPENAI_API_KEY": "a", "AZURE_OPENAI_ENDPOINT": "https://x", "AZURE_OPENAI_DEPLOYMENT": "dep"},
            "azure",
            "dep",
        ),
        ({"LLM_PROVIDER": "heuristic", "GOOGLE_API_KEY": "g"}, "heuristic", None),
    ],
)
def test_auto_provider_follows_the_configured_key(env: dict[str, str], provider: str, model: str | None) -> None:
    assert load_settings(env).llm.provider == provider
    assert load_settings(env).llm.model == model


@pytest.mark.parametrize(
    ("env", "names"),
    [
        ({"PORT": "eighty"}, "PORT"),
        ({"PORT": "70000"}, "PORT"),
        ({"LLM_PROVIDER": "bedrock"}, "LLM_PROVIDER"),
        ({"LLM_PROVIDER": "gemini"}, "GOOGLE_API_KEY"),
        ({"LLM_PROVIDER": "openai"}, "OPENAI_API_KEY"),
        ({"LLM_PROVIDER": "azure", "AZURE_OPENAI_API_KEY": "k"}, "AZURE_OPENAI_ENDPOINT"),
        ({"LLM_PROVIDER": "openai-compatible", "OPENAI_BASE_URL": "http://x"}, "LLM_MODEL"),
        ({"EMBEDDING_PROVIDER": "gemini"}, "GOOGLE_API_KEY"),
        ({"LOG_FORMAT": "xml"}, "LOG_FORMAT"),
        ({"REQUEST_TIMEOUT_MS": "5"}, "REQUEST_TIMEOUT_MS"),
        ({"STATE_SIGNING_KEY": "short"}, "STATE_SIGNING_KEY"),
        ({"CONFIG_DIR": "/does/not/exist"}, "CONFIG_DIR"),
        ({"GRACE_THRESHOLDS__SILENT": "0.1"}, "thresholds"),
        ({"GRACE_REPLAN__MAX_REPLANS": "lots"}, "max_replans"),
    ],
)
def test_bad_configuration_names_the_variable(env: dict[str, str], names: str) -> None:
    with pytest.raises(ConfigError, match=names):
        load_settings(env)


def test_repr_never_shows_secrets() -> None:
    settings = load_settings({"OPENAI_API_KEY": "sk-very-secret", "STATE_SIGNING_KEY": "s" * 20})
    assert "sk-very-secret" not in repr(settings)
    assert "sssss" not in repr(settings)
    assert "sk-very-secret" not in repr(settings.llm)


def test_service_refuses_to_start_with_one_clear_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "librarian_svc"],
        cwd=PROJECT_ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(PROJECT_ROOT), "LLM_PROVIDER": "gemini"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines == ["librarian-svc: configuration error: LLM_PROVIDER=gemini needs GOOGLE_API_KEY to be set"]
