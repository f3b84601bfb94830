"""The Go client in clients/go: generated types match the schemas, the module vets and builds, and its
tests (unit tests against httptest servers, and the think loop against the real service) pass.

Go and npm are required, not optional: `.ci/run` installs them, so a missing one fails here.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import re
import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from contracts.limits import LIBRARIAN
from reference_orchestrator.loop import SENTENCE_TAIL_CHARS, cut_snippet, fit_round
from tests.support.live_service import PROJECT_ROOT, LiveService

GO_DIR = PROJECT_ROOT / "clients" / "go"
LIVE_TESTS = (
    "TestLiveLoopCompletes",
    "TestLiveInvalidInputNamesThePath",
    "TestLiveNotFoundIsAnErrorBody",
    "TestLiveGeneratedTypesDescribeTheResponses",
    "TestLiveLoopLimitAfterEveryRound",
    "TestLiveMisspelledAndCoercedFieldsAre422WithTheirPaths",
    "TestLiveEditedStateTokenIsRefused",
    "TestLivePlaybookStoreRoundTrips",
    "TestLiveGraceStepStreamsItsEventsThenTheAction",
    "TestLiveEmptyListsAreSentAsEmpty",
)


def go_binary() -> str:
    go = shutil.which("go")
    if go is None:
        pytest.fail("`go` is not installed: .ci/run installs Debian's golang-go (Go >= 1.19)")
    return go


def go_env(**extra: str) -> dict[str, str]:
    """Offline (no module proxy: the module has no dependencies) with caches any user can write."""
    env = {**os.environ, "GOPROXY": "off", "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly", **extra}
    env.setdefault("GOCACHE", str(PROJECT_ROOT / "build" / "go" / "cache"))
    env.setdefault("GOPATH", str(PROJECT_ROOT / "build" / "go" / "path"))
    return env


def run_go(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [go_binary(), *args], cwd=GO_DIR, env=env or go_env(), capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(name="generator", scope="module")
def fixture_generator() -> ModuleType:
    """clients/go/generate.py, with the pinned quicktype installed (`npm ci`, as `make go-client` does)."""
    spec = importlib.util.spec_from_file_location("go_generate", GO_DIR / "generate.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not module.QUICKTYPE.is_file():
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail("`npm` is not installed: .ci/run installs Debian's nodejs and npm")
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"], cwd=module.TOOLS_DIR, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stderr
    return module


def test_module_is_standard_library_go_1_19() -> None:
    go_mod = (GO_DIR / "go.mod").read_text(encoding="utf-8")
    assert re.search(r"^go 1\.19$", go_mod, re.MULTILINE)
    assert "require" not in go_mod
    assert not (GO_DIR / "go.sum").exists()


def test_quicktype_is_pinned_exactly() -> None:
    package = json.loads((GO_DIR / "tools" / "package.json").read_text(encoding="utf-8"))
    lock = json.loads((GO_DIR / "tools" / "package-lock.json").read_text(encoding="utf-8"))
    version = package["devDependencies"]["quicktype"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), "pin an exact version"
    assert lock["packages"]["node_modules/quicktype"]["version"] == version


def test_generated_go_matches_the_schemas(generator: ModuleType) -> None:
    assert generator.drift() == [], "run `make go-client` and commit clients/go/api/"


def test_drift_is_detected(generator: ModuleType, tmp_path: Path) -> None:
    schemas = tmp_path / "schema"
    shutil.copytree(PROJECT_ROOT / "contracts" / "schema", schemas)
    path = schemas / "LibrarianRequest.json"
    schema = json.loads(path.read_text(encoding="utf-8"))
    schema["$defs"]["LibrarianRequest"]["properties"]["tenant"] = {"type": "string"}
    path.write_text(json.dumps(schema), encoding="utf-8")
    rendered = generator.render(schemas)
    assert generator.stale(rendered) == ["clients/go/api/types.gen.go"]
    assert re.search(r'Tenant\s+\*string\s+`json:"tenant,omitempty"`', rendered[generator.TYPES_FILE])


def test_each_union_variant_is_its_own_type() -> None:
    code = (GO_DIR / "api" / "types.gen.go").read_text(encoding="utf-8")
    unions = (GO_DIR / "api" / "unions.gen.go").read_text(encoding="utf-8")
    for variant in ("LibrarianSearchAction", "LibrarianCompleteAction", "ErrorResponse", "GraceAskUserAction"):
        assert f"type {variant} struct" in code
    assert "type LibrarianResponse struct" not in code
    assert "func DecodeLibrarianResponse(body []byte) (LibrarianResponse, error)" in unions
    # state is an opaque token: a string the client hands back, never a structure it could re-encode
    assert re.search(r'State\s+\*string\s+`json:"state"`', code)
    assert "StateEnvelope" not in code


def test_module_vets_and_builds() -> None:
    for args in (("vet", "./..."), ("build", "./...")):
        done = run_go(*args)
        assert done.returncode == 0, f"go {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    unformatted = subprocess.run(
        [str(Path(go_binary()).with_name("gofmt")), "-l", "."], cwd=GO_DIR, capture_output=True, text=True
    )
    assert unformatted.stdout == "", f"not gofmt'd: {unformatted.stdout}"


def test_go_tests_pass_against_the_live_service(live_service: LiveService) -> None:
    done = run_go("test", "-count=1", "-v", "./...", env=go_env(LIBRARIAN_BASE_URL=live_service.base_url, CI="true"))
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    for name in LIVE_TESTS:
        assert f"--- PASS: {name} " in output, f"{name} did not run and pass:\n{output}"
    assert "--- SKIP" not in output, output
    assert "--- PASS: TestTimeoutActionRetriesTheSameStepWithTheSameState " in output


def test_the_live_tests_refuse_to_skip_under_ci() -> None:
    env = go_env(CI="true")
    env.pop("LIBRARIAN_BASE_URL", None)
    done = run_go("test", "-count=1", "-run", "TestLiveLoopCompletes", "./client/", env=env)
    assert done.returncode != 0
    assert "LIBRARIAN_BASE_URL is not set under CI" in done.stdout


def test_example_answers_one_question(live_service: LiveService) -> None:
    done = run_go("run", "./cmd/example", "-base-url", live_service.base_url, "-question", "How tall is Tokyo Tower?")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "step 1: SEARCH" in done.stdout
    assert "COMPLETE after" in done.stdout
    assert "333 metres" in done.stdout


GO_LIMITS = {
    "MaxSnippetChars": "snippet_chars",
    "MaxHitsPerRound": "hits_per_round",
    "MaxHitsTotal": "hits_total",
    "MaxSnippetCharsTotal": "snippet_chars_total",
}


def test_the_go_limits_are_contracts_limits() -> None:
    """client.FitRound / CutSnippet keep rounds within contracts/limits.py's numbers, not a copy that drifted."""
    code = (GO_DIR / "client" / "fit.go").read_text(encoding="utf-8")
    found = {name: int(value) for name, value in re.findall(r"^\t(\w+)\s*=\s*(\d+)\b", code, re.MULTILINE)}
    assert {name: found.get(name) for name in GO_LIMITS} == {
        name: getattr(LIBRARIAN, field) for name, field in GO_LIMITS.items()
    }
    assert re.search(rf"^const SentenceTailChars = {SENTENCE_TAIL_CHARS}$", code, re.MULTILINE)


def parity_cases() -> dict[str, list[dict[str, Any]]]:
    """FitRound and CutSnippet cases, answered by reference_orchestrator/loop.py (the behaviour to match)."""
    rng = random.Random(20240611)
    fit_inputs: list[tuple[list[list[str]], list[list[int]]]] = [
        ([["aaaaa"], [""], [""], ["bbbbb"], [""]], [[1, LIBRARIAN.snippet_chars_total - 10]]),
        ([["x" * 11, "aa"], ["ccc"]], [[1, LIBRARIAN.snippet_chars_total - 10]]),
        ([["a", "b", "c"], ["d"]], [[LIBRARIAN.hits_total - 2, 1]]),
        ([["東京タワー", "x"]], [[1, LIBRARIAN.snippet_chars_total - 5]]),
        ([["a"]], [[LIBRARIAN.hits_total, 1]]),
        ([["a"]], [[1, LIBRARIAN.snippet_chars_total + 1]]),
        ([[]], []),
        ([], []),
        ([["y" * 10] * 400], []),
        ([["y" * 10] * 200, ["z" * 10] * 200], [[LIBRARIAN.hits_total - 250, 1]]),
        ([["é" * 8_000] * 40], [[2, 8_000]]),
    ]
    for _ in range(300):
        lists = [
            ["ab東é"[rng.randrange(4)] * rng.choice([0, 1, 2, 5, 9, 40]) for _ in range(rng.randrange(6))]
            for _ in range(rng.randrange(5))
        ]
        chars = sum(len(s) for hits in lists for s in hits)
        left = rng.choice([0, 1, 5, 10, 30, chars // 2, chars, chars + 1])
        hits_left = rng.choice([0, 1, 2, 3, 5, 30])
        history = [[LIBRARIAN.hits_total - hits_left - 1, 0], [1, LIBRARIAN.snippet_chars_total - left]]
        fit_inputs.append((lists, history))
    fit = []
    for lists, history in fit_inputs:
        hits = [
            [{"document_id": f"{i}/{rank}", "snippet": s} for rank, s in enumerate(snippets)]
            for i, snippets in enumerate(lists)
        ]
        rounds = [{"results": [{"snippet": "h" * size} for _ in range(n)]} for n, size in history]
        kept = [hit["document_id"] for hit in fit_round(hits, rounds)]
        fit.append({"lists": lists, "history": history, "kept": kept})
    limit = LIBRARIAN.snippet_chars
    texts = ["short. text", "x" * limit, "x" * (limit + 1), "あ" * 7_000 + "高さは333メートル。" + "い" * 2_000]
    for mark in "。！？\n.．!?":
        for follower in ("", "1", "a", "Z", "é", "３", "٣", " ", "あ", "."):
            for at in (
                limit - 1 - len(follower),
                limit - 1,
                limit,
                limit - SENTENCE_TAIL_CHARS,
                limit - SENTENCE_TAIL_CHARS - 1,
            ):
                text = "x" * at + mark + follower
                texts.append(text + "y" * max(0, limit + 5 - len(text)))
    for _ in range(200):
        sparse = rng.random() < 0.5
        alphabet = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx。.1a" if sparse else "x.。!?．\n1aé３٣ あ"
        texts.append("".join(rng.choice(alphabet) for _ in range(rng.randrange(limit - 10, limit + 200))))
    return {"fit": fit, "cut": [{"text": text, "want": cut_snippet(text)} for text in texts]}


def test_go_fit_round_and_cut_snippet_match_python(tmp_path: Path) -> None:
    cases = parity_cases()
    path = tmp_path / "parity.json"
    path.write_text(json.dumps(cases, ensure_ascii=False), encoding="utf-8")
    done = run_go(
        "test",
        "-count=1",
        "-v",
        "-run",
        "^TestFitRoundAndCutSnippetMatchPython$",
        "./client/",
        env=go_env(LIBRARIAN_PARITY_CASES=str(path)),
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert f"parity: {len(cases['fit'])} fit cases and {len(cases['cut'])} cut cases from {path}" in output, output
    assert "--- PASS: TestFitRoundAndCutSnippetMatchPython " in output, output


README_GO_STUBS = """package main

const searchTextSQL, searchVectorSQL = "-- search_text.sql", "-- search_vector.sql"

var _ = runSearch

func main() {}
"""


def test_the_readmes_go_search_side_vets_and_builds(tmp_path: Path) -> None:
    """README's `runSearch` (with client.FitRound / CutSnippet) is copied by Go orchestrators: it must compile."""
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    [block] = re.findall(r"```go\n(// runSearch answers one SEARCH.*?)```\n", readme, re.DOTALL)
    imports = (
        '\nimport (\n\t"context"\n\t"database/sql"\n\t"strconv"\n\t"strings"\n\n'
        '\t"librarian-svc/clients/go/api"\n\t"librarian-svc/clients/go/client"\n)\n\n'
    )
    (tmp_path / "go.mod").write_text(
        "module readme\n\ngo 1.19\n\nrequire librarian-svc/clients/go v0.0.0\n\n"
        f"replace librarian-svc/clients/go => {GO_DIR}\n",
        encoding="utf-8",
    )
    (tmp_path / "search.go").write_text("package main\n" + imports + block, encoding="utf-8")
    (tmp_path / "stubs.go").write_text(README_GO_STUBS, encoding="utf-8")
    for args in (("vet", "."), ("build", "-o", os.devnull, ".")):
        done = subprocess.run(
            [go_binary(), *args], cwd=tmp_path, env=go_env(), capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, f"go {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
