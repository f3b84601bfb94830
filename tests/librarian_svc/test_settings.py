"""Settings: every variable validated at start-up, one clear line on failure, `auto` provider resolution."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from graphs.config_files import ignored_grace_variables
from librarian_svc import __main__ as service_main
from librarian_svc import settings as settings_module
from librarian_svc.cpus import available_cpus
from librarian_svc.settings import ENV_DEFAULTS, ConfigError, load_settings
from librarian_svc.workers import share_worker_count
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
        ({"LLM_PROVIDER": "vertex"}, "GOOGLE_CLOUD_PROJECT, GOOGLE_CLOUD_LOCATION"),
        ({"LLM_PROVIDER": "vertex", "GOOGLE_CLOUD_PROJECT": "p"}, "needs GOOGLE_CLOUD_LOCATION"),
        ({"EMBEDDING_PROVIDER": "vertex", "GOOGLE_CLOUD_LOCATION": "l"}, "EMBEDDING_PROVIDER=vertex needs"),
        ({"EMBEDDING_BASE_URL": "http://127.0.0.1:1/v1"}, "EMBEDDING_MODEL"),
        ({"EMBEDDING_PROVIDER": "openai"}, "EMBEDDING_BASE_URL"),
        ({"EMBEDDING_INPUT_TYPE": "maybe"}, "EMBEDDING_INPUT_TYPE"),
        ({"LLM_MAX_OUTPUT_TOKENS": "0"}, "LLM_MAX_OUTPUT_TOKENS"),
        ({"LLM_NATIVE_JSON_SCHEMA": "grammar"}, "LLM_NATIVE_JSON_SCHEMA"),
        ({"LOG_FORMAT": "xml"}, "LOG_FORMAT"),
        ({"REQUEST_TIMEOUT_MS": "5"}, "REQUEST_TIMEOUT_MS"),
        ({"STATE_SIGNING_KEY": "short"}, "STATE_SIGNING_KEY"),
        ({"CONFIG_DIR": "/does/not/exist"}, "CONFIG_DIR"),
        ({"GRACE_THRESHOLDS__SILENT": "0.1"}, "thresholds"),
        ({"GRACE_REPLAN__MAX_REPLANS": "lots"}, "max_replans"),
        ({"WEB_CONCURRENCY": "0"}, "WEB_CONCURRENCY"),
        ({"WEB_CONCURRENCY": "two"}, "WEB_CONCURRENCY=.*or auto"),
        ({"REQUEST_READ_TIMEOUT_S": "0"}, "REQUEST_READ_TIMEOUT_S"),
        ({"WORKER_HUNG_AFTER_S": "0"}, "WORKER_HUNG_AFTER_S"),
        ({"WORKER_HUNG_AFTER_S": "2.5"}, "WORKER_HUNG_AFTER_S"),
    ],
)
def test_bad_configuration_names_the_variable(env: dict[str, str], names: str) -> None:
    with pytest.raises(ConfigError, match=names):
        load_settings(env)


def test_vertex_needs_no_key_and_names_its_project_and_location() -> None:
    settings = load_settings(
        {"LLM_PROVIDER": "vertex", "GOOGLE_CLOUD_PROJECT": "p-1", "GOOGLE_CLOUD_LOCATION": "asia-northeast1"}
    )
    assert (settings.llm.provider, settings.llm.model, settings.llm.api_key) == ("vertex", "gemini-2.5-flash", None)
    assert (settings.llm.project, settings.llm.location) == ("p-1", "asia-northeast1")
    assert (settings.embedding.provider, settings.embedding.model) == ("vertex", "gemini-embedding-001")
    assert (settings.embedding.project, settings.embedding.location) == ("p-1", "asia-northeast1")


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, (4096, True, False)),
        ({"LLM_MAX_OUTPUT_TOKENS": "768"}, (768, True, False)),
        ({"LLM_NATIVE_JSON_SCHEMA": "json_object"}, (4096, True, True)),
        ({"LLM_NATIVE_JSON_SCHEMA": "false"}, (4096, False, False)),
    ],
)
def test_output_cap_and_json_mode(env: dict[str, str], expected: tuple[int, bool, bool]) -> None:
    base = {"LLM_PROVIDER": "openai-compatible", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "LLM_MODEL": "m"}
    llm = load_settings(base | env).llm
    # `auto` sends the schema to OpenAI-compatible servers too: llama.cpp, vLLM and Ollama enforce it.
    assert (llm.max_output_tokens, llm.native_json_schema, llm.json_object_only) == expected


def test_a_separate_embeddings_server_gets_its_own_key_and_the_roles() -> None:
    env = {
        "LLM_PROVIDER": "openai-compatible",
        "OPENAI_BASE_URL": "http://127.0.0.1:1/v1",
        "OPENAI_API_KEY": "chat-key",
        "LLM_MODEL": "qwen",
        "EMBEDDING_BASE_URL": "http://127.0.0.1:2/v1",
        "EMBEDDING_MODEL": "multilingual-e5-small",
    }
    embedding = load_settings(env).embedding
    assert (embedding.provider, embedding.base_url, embedding.model) == (
        "openai",
        "http://127.0.0.1:2/v1",
        "multilingual-e5-small",
    )
    assert embedding.api_key == "not-needed", "the chat key never goes to another server"
    assert embedding.input_type
    assert load_settings(env | {"EMBEDDING_API_KEY": "emb-key"}).embedding.api_key == "emb-key"
    assert not load_settings(env | {"EMBEDDING_INPUT_TYPE": "false"}).embedding.input_type
    # OpenAI's own embeddings: no role field (its API rejects unknown fields) unless asked for.
    openai = load_settings({"OPENAI_API_KEY": "sk"}).embedding
    assert (openai.provider, openai.base_url, openai.api_key, openai.input_type) == ("openai", None, "sk", False)


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


def test_web_concurrency_is_a_number_or_every_available_cpu() -> None:
    """The service reads WEB_CONCURRENCY itself (uvicorn would refuse it with an app object): a count, or auto."""
    assert load_settings({"WEB_CONCURRENCY": "3"}).web_concurrency == 3
    assert load_settings({"WEB_CONCURRENCY": " AUTO "}).web_concurrency == available_cpus()
    assert ENV_DEFAULTS["WEB_CONCURRENCY"] == "auto"
    assert load_settings({}).web_concurrency == available_cpus()


def test_workers_inherit_the_worker_count_the_supervisor_resolved(monkeypatch: pytest.MonkeyPatch) -> None:
    """`auto` is resolved once, by the supervisor: its workers load that number and never read the cgroup again."""
    monkeypatch.setenv("WEB_CONCURRENCY", "auto")
    monkeypatch.setattr(settings_module, "available_cpus", lambda: 5)
    supervisor = load_settings()
    assert supervisor.web_concurrency == 5
    share_worker_count(supervisor)

    def read_again() -> int:
        raise AssertionError("a worker resolved WEB_CONCURRENCY=auto again")

    monkeypatch.setattr(settings_module, "available_cpus", read_again)
    assert load_settings().web_concurrency == 5


@pytest.mark.parametrize("name", ["PLAYBOOK_DATA_DIR", "CONFIG_DIR", "PROMPTS_DIR"])
@pytest.mark.parametrize("value", ["", "   "])
def test_a_path_setting_set_to_nothing_is_its_default_not_the_working_directory(name: str, value: str) -> None:
    """`Path("")` is `.`: `PLAYBOOK_DATA_DIR=` saved playbooks wherever the process was started."""
    loaded = load_settings({name: value})
    field = {"PLAYBOOK_DATA_DIR": "playbook_data_dir", "CONFIG_DIR": "config_dir", "PROMPTS_DIR": "prompts_dir"}[name]
    assert getattr(loaded, field) == Path(ENV_DEFAULTS[name]).resolve()


def test_a_relative_playbook_directory_is_fixed_at_start_up(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_settings({"PLAYBOOK_DATA_DIR": "playbooks"}).playbook_data_dir == tmp_path / "playbooks"


@pytest.mark.parametrize("value", ["/etc/passwd", "/etc/passwd/playbooks"], ids=["a-file", "under-a-file"])
def test_a_playbook_directory_that_could_never_be_created_stops_the_start(value: str) -> None:
    with pytest.raises(ConfigError, match=r"^PLAYBOOK_DATA_DIR='/etc/passwd"):
        load_settings({"PLAYBOOK_DATA_DIR": value})


GRACE_YAML = PROJECT_ROOT / "config" / "grace_config.yml"
KUBERNETES_SERVICE_LINKS = {
    "GRACE_SERVICE_HOST": "10.0.0.7",
    "GRACE_SERVICE_PORT": "8080",
    "GRACE_PORT": "tcp://10.0.0.7:8080",
    "GRACE_PORT_8080_TCP": "tcp://10.0.0.7:8080",
    "GRACE_PORT_8080_TCP_PROTO": "tcp",
}
"""What Kubernetes puts in every pod's environment for a Service named `grace` (a sibling service, say)."""


def test_variables_a_platform_sets_for_a_service_named_grace_are_not_overrides() -> None:
    """Every `GRACE_` name was an override: "unknown field service_host" stopped the service."""
    assert load_settings(KUBERNETES_SERVICE_LINKS).grace == load_settings({}).grace
    assert ignored_grace_variables(KUBERNETES_SERVICE_LINKS) == []  # not worth a warning either


def test_a_mistyped_override_is_not_read_and_is_named_at_start_up(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {"GRACE_THRESHOLDS_SILENT": "0.95", "GRACE_THRESHOLDS__NOTIFY": "0.75", **KUBERNETES_SERVICE_LINKS}
    loaded = load_settings(env)
    assert loaded.grace.thresholds.silent == load_settings({}).grace.thresholds.silent
    assert loaded.grace.thresholds.notify == 0.75
    assert ignored_grace_variables(env) == ["GRACE_THRESHOLDS_SILENT"]
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    service_main._warn_about_ignored_grace_variables()
    warned = [line for line in capsys.readouterr().out.splitlines() if "not a GRACE override" in line]
    assert len(warned) == 1
    assert "GRACE_THRESHOLDS_SILENT" in warned[0]


@pytest.mark.parametrize(
    ("env", "starts"),
    [
        ({"GRACE_REPLAN__MAX_REPLANS": "lots"}, "GRACE_REPLAN__MAX_REPLANS='lots': "),
        ({"GRACE_SERVICE__HOST": "10.0.0.7"}, "GRACE_SERVICE__HOST='10.0.0.7': "),
        ({"GRACE_PLANNER__MAX_STEPS": "99", "GRACE_PLANNER__MAX_SEARCHES": "2"}, "GRACE_PLANNER__MAX_STEPS='99': "),
        (
            {"GRACE_THRESHOLDS__SILENT": "0.1"},
            f"{PROJECT_ROOT / 'config' / 'grace_config.yml'} with GRACE_THRESHOLDS__SILENT: ",
        ),
        ({"GRACE_REPLAN__MAX_REPLANS__X": "1"}, "GRACE_REPLAN__MAX_REPLANS__X: replan.max_replans is not a section"),
    ],
    ids=["bad-value", "unknown-section", "one-of-two", "threshold-order", "not-a-section"],
)
def test_an_override_that_breaks_the_configuration_is_named(env: dict[str, str], starts: str) -> None:
    """The message blamed `grace_config.yml` "(with GRACE_ overrides)" without naming the variable."""
    with pytest.raises(ConfigError) as raised:
        load_settings(env)
    assert str(raised.value).startswith(starts), str(raised.value)
