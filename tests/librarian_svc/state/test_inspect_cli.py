"""`python -m librarian_svc.state inspect TOKEN`: read a token while debugging, only with the keys."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import msgspec

from librarian_svc.state.token import StateCodec
from tests.support.live_service import PROJECT_ROOT

KEY = "inspect-key-0123456789abcdef"


class Demo(msgspec.Struct):
    rounds_seen: int
    notes: list[str]


def _inspect(token: str, keys: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "STATE_SIGNING_KEYS": keys, "PYTHONPATH": str(PROJECT_ROOT)}
    env.pop("STATE_SIGNING_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "librarian_svc.state", "inspect", token],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        check=False,
    )


def test_inspect_prints_the_state_with_the_right_key() -> None:
    token = StateCodec(keys=[KEY.encode()], max_state_bytes=1 << 20, ttl_s=60).seal(
        Demo(rounds_seen=2, notes=["東京"]), agent="librarian", schema_version=1
    )
    done = _inspect(token, f"other-key-0123456789abcdef,{KEY}")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["agent"] == "librarian"
    assert report["schema_version"] == 1
    assert report["state"] == {"rounds_seen": 2, "notes": ["東京"]}
    assert report["expires_at"] > report["issued_at"]


def test_inspect_refuses_without_the_key() -> None:
    token = StateCodec(keys=[KEY.encode()], max_state_bytes=1 << 20).seal(
        Demo(rounds_seen=1, notes=[]), agent="grace", schema_version=1
    )
    done = _inspect(token, "wrong-key-0123456789abcdef")
    assert done.returncode == 1
    assert "signature" in done.stderr
    assert "rounds_seen" not in done.stdout + done.stderr
    assert _inspect(token, "").returncode == 2
