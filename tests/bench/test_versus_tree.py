"""The tree-against-tree benchmark runs the earlier tree's own service, and leaves out what it answers otherwise."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import httpx
import pytest

from bench.tools import PROJECT_ROOT, server_process
from bench.versus_tree import ENDPOINTS, answered_alike, bodies, extracted, tree_service
from bench.wrk_compare import Target

pytestmark = pytest.mark.slow  # starts a service from an extracted tree


def test_the_base_tree_is_extracted_whole_at_its_commit() -> None:
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    with extracted("HEAD") as (root, commit):
        assert commit == head
        assert (root / "librarian_svc" / "__main__.py").is_file()
        assert (root / "prompts").is_dir()
        assert (root / "config").is_dir()
        command = ["git", "ls-tree", "-r", "--name-only", "HEAD"]
        listing = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, check=True)
        listed = listing.stdout.splitlines()
        assert sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) == sorted(listed)
    assert not root.exists()


def test_every_endpoint_has_a_body_and_a_path() -> None:
    specs = bodies()
    assert set(specs) == set(ENDPOINTS)
    for path, _body, expect in specs.values():
        assert path.startswith("/")
        assert expect


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
            assert answered_alike(Target("validate", server.url(path), body_for(server), expect)) is None
            refused = answered_alike(Target("validate", server.url(path), b'{"report": 1}', expect))
            assert refused is not None
            assert "400" in refused or "422" in refused
