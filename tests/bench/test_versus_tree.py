"""The tree-against-tree benchmark runs the earlier tree's own service, and leaves out what it answers otherwise."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import msgspec
import pytest

import bench.versus_tree as versus_tree
from bench.tools import WrkSettings, free_port, server_process
from bench.versus_tree import ENDPOINTS, base_target, bodies, extracted, git, tree_service
from bench.wrk_compare import Comparison, Server, Target

SLOW = pytest.mark.slow  # extracts a tree, starts a service from it, or builds the benchmark's bodies


@SLOW
def test_the_base_tree_is_extracted_whole_at_its_commit() -> None:
    with extracted("HEAD") as (root, commit):
        assert commit == git("rev-parse", "HEAD").strip()
        assert (root / "librarian_svc" / "__main__.py").is_file()
        assert (root / "prompts").is_dir()
        assert (root / "config").is_dir()
        listed = git("ls-tree", "-r", "--name-only", "HEAD").splitlines()
        assert sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) == sorted(listed)
    assert not root.exists()


@SLOW
def test_every_endpoint_has_a_body_and_a_path() -> None:
    specs = bodies()
    assert set(specs) == set(ENDPOINTS)
    for path, _body, expect in specs.values():
        assert path.startswith("/")
        assert expect


@SLOW
def test_the_base_service_runs_its_own_tree_and_a_refused_body_is_left_out() -> None:
    with extracted("HEAD") as (root, _):
        server = tree_service("base", root)
        assert server.cwd == root
        assert server.env["PYTHONPATH"] == str(root)
        with server_process(server.argv, port=server.port, env=server.env, cwd=server.cwd) as process:
            assert httpx.get(server.url("/health"), timeout=10).status_code == 200
            # `python -m librarian_svc` imports from its working directory first: the extracted tree's package.
            assert Path(os.readlink(f"/proc/{process.pid}/cwd")) == root
            path, body_for, expect = bodies()["validate"]
            target = base_target("validate", server, path, body_for, expect)
            assert isinstance(target, Target)
            assert target.url == server.url(path)
            refused = base_target("validate", server, path, lambda _server: b'{"report": 1}', expect)
            assert isinstance(refused, str)
            assert "400" in refused or "422" in refused


@SLOW
def test_a_request_the_base_cannot_take_leaves_the_endpoint_out() -> None:
    def older_contract(_server: Server) -> bytes:
        # What building GRACE's body raises against a base whose state was a JSON object, not a token.
        raise msgspec.ValidationError("Expected `str | null`, got `object` - at `$.state`")

    closed = Server("base", ("true",), free_port())  # nothing listens: never asked, the body fails first
    left_out = base_target("grace", closed, "/agent/grace/step", older_contract, {"action": "COMPLETE"})
    assert isinstance(left_out, str)
    assert left_out.startswith("no request of this tree's contract could be built")
    silent = base_target("validate", closed, "/x", lambda _server: b"{}", {"ok": True})
    assert isinstance(silent, str), "a base that does not answer is left out, not a crash"


@SLOW
def test_the_grace_body_for_the_base_carries_its_own_state_in_its_own_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 14's tree answered GRACE's first call with its state as a JSON object, where this tree signs a token:
    the base's body carries that object back as it came, and only this tree's body is held to this contract."""
    older_state = {"session_id": "s-1", "turn": 1, "plan": {"steps": []}}

    def first_call(url: str, **_: object) -> httpx.Response:
        answer = {"action": "SEARCH", "step_id": "s1", "state": older_state}
        return httpx.Response(200, json=answer, request=httpx.Request("POST", url))

    monkeypatch.setattr(httpx, "post", first_call)
    base = Server("base", ("true",), free_port())
    this = Server("this", ("true",), free_port())
    _, body_for, _ = bodies()["grace"]
    sent = msgspec.json.decode(body_for(base))
    assert sent["state"] == older_state
    assert sent["tool_result"]["step_id"] == "s1"
    with pytest.raises(msgspec.ValidationError):  # this tree's contract: the state is a token
        body_for(this)


def test_the_report_pairs_each_round_with_the_base_round_beside_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`paired_speedup_<endpoint>` is the median of the rounds' own ratios, next to the ratio of the medians."""

    @contextmanager
    def fake_extracted(revision: str) -> Iterator[tuple[Path, str]]:
        yield tmp_path, "0" * 40

    @contextmanager
    def fake_running(servers: list[Server]) -> Iterator[dict[str, int]]:
        yield {server.name: 1 for server in servers}

    def fake_measure(targets: list[Target], settings: object, repeat: int) -> Comparison:
        base, this = (target.name for target in targets)
        medians = {
            base: {"requests_per_s": 149.9, "all_runs_requests_per_s": [145.4, 195.9, 149.9]},
            this: {"requests_per_s": 389.4, "all_runs_requests_per_s": [389.4, 420.5, 350.9]},
        }
        return Comparison({}, medians)

    monkeypatch.setattr(versus_tree, "extracted", fake_extracted)
    monkeypatch.setattr(versus_tree, "running", fake_running)
    monkeypatch.setattr(versus_tree, "measure", fake_measure)
    monkeypatch.setattr(
        versus_tree, "base_target", lambda name, base, path, body_for, expect, pid: Target(f"{name}_base", "u", b"{}")
    )
    monkeypatch.setattr(versus_tree, "bodies", lambda: {"validate": ("/x", lambda _server: b"{}", {"ok": True})})
    report = versus_tree.run("HEAD", ["validate"], WrkSettings(), 3)
    assert report["speedup_validate"] == 2.598
    assert report["validate"]["round_speedups"] == [2.678, 2.147, 2.341]
    assert report["paired_speedup_validate"] == 2.341
