"""Every configuration problem stops the real process with one line and exit status 2 (issue 13 item 14).

Each case breaks one thing the service reads at start-up — a YAML file in `CONFIG_DIR`, a prompt in
`PROMPTS_DIR`, a data file shipped inside the graphs package, a URL variable — and starts
`python -m librarian_svc` as an operator would. Packaged files are broken in a copy of the source
tree, so the checkout itself is never touched.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from graphs.llm.config import URL_SUFFIXES, URL_VARIABLES, ConfigError, check_url
from librarian_svc.settings import load_settings
from tests.support.fresh_interpreter import run_script
from tests.support.live_service import PROJECT_ROOT, free_port

PREFIX = "librarian-svc: configuration error: "
SOURCE_PACKAGES = ("graphs", "contracts", "librarian_svc")
SHIFT_JIS_YAML = "default:\n  - name: 戦略\n    description: 日本語の説明\n".encode("shift_jis")


def write(path: Path, content: str | bytes) -> None:
    """Replace a file's content (bytes as they are, text as UTF-8)."""
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")


def replace_with_directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


@dataclass(frozen=True)
class Breakage:
    """One thing to break: a file under a root (config, prompts or the source tree), or the environment."""

    root: str  # "config", "prompts", "source" or "env"
    file: str = ""
    damage: Callable[[Path], None] | None = None
    env: dict[str, str] = field(default_factory=dict)
    mentions: str = ""


def content(data: str | bytes) -> Callable[[Path], None]:
    return lambda path: write(path, data)


CASES = {
    # CONFIG_DIR
    "sections-shift-jis": Breakage("config", "sections.yaml", content(SHIFT_JIS_YAML), mentions="not UTF-8"),
    "sections-invalid-yaml": Breakage("config", "sections.yaml", content("default: [\n  - name: x\n"), mentions="YAML"),
    "sections-wrong-type": Breakage("config", "sections.yaml", content("default: 5\n"), mentions="sections.yaml"),
    "sections-a-directory": Breakage("config", "sections.yaml", replace_with_directory, mentions="sections.yaml"),
    "sections-missing": Breakage("config", "sections.yaml", Path.unlink, mentions="not found"),
    "grace-shift-jis": Breakage(
        "config",
        "grace_config.yml",
        content("# 閾値の設定\nthresholds: {}\n".encode("shift_jis")),
        mentions="not UTF-8",
    ),
    "grace-invalid-yaml": Breakage(
        "config", "grace_config.yml", content("thresholds: {silent: 0.9\n"), mentions="YAML"
    ),
    "grace-wrong-type": Breakage(
        "config", "grace_config.yml", content("thresholds: {silent: high}\n"), mentions="grace_config.yml"
    ),
    "grace-not-a-mapping": Breakage("config", "grace_config.yml", content("- 1\n- 2\n"), mentions="mapping"),
    "grace-override-not-yaml": Breakage("env", env={"GRACE_THRESHOLDS__SILENT": "[0.9"}, mentions="GRACE_THRESHOLDS"),
    "grace-override-wrong-type": Breakage(
        "env", env={"GRACE_REPLAN__MAX_REPLANS": "lots"}, mentions="GRACE_REPLAN__MAX_REPLANS='lots'"
    ),
    # PROMPTS_DIR
    "prompt-shift-jis": Breakage(
        "prompts", "librarian/think.txt", content("質問: {question}\n".encode("shift_jis")), mentions="think.txt"
    ),
    "prompt-lone-brace": Breakage(
        "prompts", "grace/plan.txt", content('Return {"steps": [...]} for {query}\n'), mentions="plan.txt"
    ),
    "prompt-positional": Breakage("prompts", "common/reask.txt", content("Fix this: {}\n"), mentions="reask.txt"),
    "prompt-missing": Breakage("prompts", "proposal_quality/advisor.txt", Path.unlink, mentions="advisor.txt"),
    # data files inside the graphs package
    "element-cues-shift-jis": Breakage(
        "source",
        "graphs/librarian/element_cues.yaml",
        content("definition:\n  question: [定義]\n".encode("shift_jis")),
        mentions="element_cues.yaml",
    ),
    "element-cues-wrong-type": Breakage(
        "source",
        "graphs/librarian/element_cues.yaml",
        content("definition:\n  question: 5\n  evidence: []\n  query_suffix: {ja: 定義, en: definition}\n"),
        mentions="element_cues.yaml",
    ),
    "complexity-cues-invalid-yaml": Breakage(
        "source", "graphs/grace/complexity_cues.yaml", content("comparison: {weight: 0.5, cues: [\n"), mentions="YAML"
    ),
    "messages-missing-language": Breakage(
        "source", "graphs/grace/messages.yaml", content("no_evidence: {ja: なし}\n"), mentions="messages.yaml"
    ),
    "messages-bad-template": Breakage(
        "source",
        "graphs/grace/messages.yaml",
        content("no_evidence: {ja: 'なし {score', en: 'none {score'}\n"),
        mentions="messages.yaml",
    ),
    "stopwords-undecodable": Breakage(
        "source", "graphs/text/stopwords_en.txt", content(b"the\n\xff\xfe\n"), mentions="stopwords_en.txt"
    ),
    "answer-types-bad-pattern": Breakage(
        "source",
        "graphs/librarian/answer_types.yaml",
        content("time:\n  question: [いつ]\n  evidence: '(unclosed'\n"),
        mentions="answer_types.yaml",
    ),
    "request-words-undecodable": Breakage(
        "source", "graphs/librarian/request_words.txt", content("例\n".encode("euc_jp")), mentions="request_words.txt"
    ),
    "advisor-texts-wrong-type": Breakage(
        "source",
        "graphs/proposal_quality/drafting/advisor_options.yaml",
        content("kinds: {default: {cues: [], info: x}}\nfirst_steps: []\n"),
        mentions="advisor_options.yaml",
    ),
    # other settings
    "host-with-a-space": Breakage("env", env={"HOST": "bad host"}, mentions="HOST"),
    "host-not-an-address": Breakage("env", env={"HOST": "999.1.1.1"}, mentions="HOST"),
    "playbook-dir-is-a-file": Breakage("env", env={"PLAYBOOK_DATA_DIR": "/etc/passwd"}, mentions="PLAYBOOK_DATA_DIR"),
    "playbook-dir-under-a-file": Breakage(
        "env", env={"PLAYBOOK_DATA_DIR": "/etc/passwd/playbooks"}, mentions="PLAYBOOK_DATA_DIR"
    ),
    # URL settings
    **{
        f"url-{name}-{label}": Breakage("env", env={name: value}, mentions=name)
        for name in URL_VARIABLES
        for label, value in (("not-a-url", "not-a-url"), ("no-host", "https://"), ("ftp", "ftp://host/v1"))
    },
    "url-bad-port": Breakage("env", env={"OPENAI_BASE_URL": "http://127.0.0.1:99999/v1"}, mentions="OPENAI_BASE_URL"),
}


def broken_tree(case: Breakage, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The working directory and environment for the process, with `case` applied to a copy."""
    env = {
        "PATH": "/usr/bin:/bin",
        "PORT": str(free_port()),
        "HOST": "127.0.0.1",
        "LOG_FORMAT": "json",
        **case.env,
    }
    cwd = PROJECT_ROOT
    if case.root in ("config", "prompts"):
        copy = tmp_path / case.root
        shutil.copytree(PROJECT_ROOT / case.root, copy)
        env["CONFIG_DIR" if case.root == "config" else "PROMPTS_DIR"] = str(copy)
        target = copy / case.file
    elif case.root == "source":
        cwd = tmp_path / "src"
        for package in SOURCE_PACKAGES:
            shutil.copytree(PROJECT_ROOT / package, cwd / package, ignore=shutil.ignore_patterns("__pycache__"))
        env |= {"CONFIG_DIR": str(PROJECT_ROOT / "config"), "PROMPTS_DIR": str(PROJECT_ROOT / "prompts")}
        target = cwd / case.file
    if case.damage is not None:
        case.damage(target)
    env["PYTHONPATH"] = str(cwd)
    return cwd, env


@pytest.mark.live
@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_a_configuration_problem_is_one_line_and_exit_status_2(case: Breakage, tmp_path: Path) -> None:
    cwd, env = broken_tree(case, tmp_path)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "librarian_svc"],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=45,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the service started despite the broken configuration")
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(PREFIX), result.stderr
    assert case.mentions in lines[0]
    assert result.returncode == 2


@pytest.mark.live
def test_the_source_copy_starts_when_nothing_is_broken(tmp_path: Path) -> None:
    """The harness itself: a copied tree with nothing broken gets past every check (so the cases above are real)."""
    cwd, env = broken_tree(Breakage("source"), tmp_path)
    script = "from librarian_svc.app import create_app; create_app(); print('built')"
    result = run_script(script, env=env, timeout=45, cwd=cwd)
    assert result.stdout.strip().endswith("built")


# --- URL settings, in process ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    ["http://127.0.0.1:8000/v1", "https://api.example.com", "http://[::1]:11434/v1", "HTTPS://Example.com/v1/"],
)
def test_a_good_url_is_kept(value: str) -> None:
    assert check_url("OPENAI_BASE_URL", value) == value


@pytest.mark.parametrize(
    "value",
    [
        "not-a-url",
        "localhost:8000",
        "//host/v1",
        "ftp://host/v1",
        "https://",
        "http:///v1",
        "http://host:port/v1",
        "http://host:70000",
        "http://exa mple.com",
        "http://[::1/v1",
    ],
)
def test_a_bad_url_names_the_variable(value: str) -> None:
    with pytest.raises(ConfigError, match=r"^OPENAI_BASE_URL="):
        check_url("OPENAI_BASE_URL", value)


def test_a_bad_url_is_refused_whichever_provider_is_chosen() -> None:
    for name in URL_VARIABLES:
        with pytest.raises(ConfigError, match=name):
            load_settings({"LLM_PROVIDER": "heuristic", name: "not-a-url"})


def test_every_documented_url_variable_is_checked() -> None:
    """A URL variable added to the README's configuration table must be in URL_VARIABLES (so it is checked)."""
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    table_rows = [line for line in readme.splitlines() if line.startswith("| `")]
    documented = {
        name
        for row in table_rows
        for name in re.findall(r"`([A-Z][A-Z0-9_]*)`", row.split("|")[1])
        if name.endswith(URL_SUFFIXES)
    }
    assert documented
    assert documented <= set(URL_VARIABLES)
