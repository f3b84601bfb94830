"""The lean fake chat server answers as `llm_server` does: same status, headers, body and rule, after the delay."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

REPO_ROOT = Path(__file__).resolve().parents[2]
RULES = ["--reply", '{"ok": true}', "--reply-if", "[c1]", '{"pick": "c1"}', "--reply-if", "[c", '{"pick": "any"}']


@contextmanager
def standalone(module: str, *extra: str) -> Iterator[str]:
    """Run `python -m <module> --port 0 ...` and yield its OpenAI base URL (from its banner line)."""
    command = [sys.executable, "-m", module, "--port", "0", *RULES, *extra]
    with subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            banner = process.stdout.readline()
            yield banner.split("OpenAI base_url=")[1].split()[0]
        finally:
            process.terminate()
            process.wait(timeout=5)


def chat(base_url: str, prompt: str, **extra: Any) -> httpx.Response:
    body = {"model": "m", "messages": [{"role": "user", "content": prompt}], **extra}
    return httpx.post(f"{base_url}/chat/completions", json=body, timeout=5)


def comparable(response: httpx.Response) -> tuple[int, list[str], dict[str, Any]]:
    """Status, header names in order, and the body without the fields that differ on every call."""
    body = response.json()
    assert body.pop("id").startswith("chatcmpl-fake-")
    assert abs(body.pop("created") - time.time()) < 60
    return response.status_code, list(response.headers.keys()), body


def test_the_same_answers_as_the_full_fake_server() -> None:
    prompts = ["no candidates yet", "[c1] doc p.1", "[c2] doc p.2"]
    with standalone("tests.fakes.llm_server") as full, standalone("tests.fakes.lean_chat_server") as lean:
        for prompt in prompts:
            assert comparable(chat(lean, prompt)) == comparable(chat(full, prompt))
        assert (
            chat(lean, "[c1] doc", response_format={"type": "json_object"}).json()["choices"][0]["message"]["content"]
            == '{"pick": "c1"}'
        )
        # The JSON body is byte for byte what the full server writes, but for the id and the time.
        full_text, lean_text = chat(full, "[c2]").text, chat(lean, "[c2]").text
        assert lean_text.split('"model"')[1] == full_text.split('"model"')[1]
        assert chat(lean, "x").headers["server"] == "uvicorn"


def test_it_answers_after_the_delay_and_keeps_the_connection() -> None:
    with standalone("tests.fakes.lean_chat_server", "--delay-ms", "300") as lean, httpx.Client(timeout=5) as client:
        body = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}
        for _ in range(2):  # the second call reuses the connection the first opened
            started = time.monotonic()
            answer = client.post(f"{lean}/chat/completions", json=body)
            assert answer.status_code == 200
            assert 0.29 <= time.monotonic() - started < 2.0
        assert json.loads(answer.json()["choices"][0]["message"]["content"]) == {"ok": True}


def test_what_it_does_not_serve_is_refused_and_a_hang_up_is_survived() -> None:
    with standalone("tests.fakes.lean_chat_server", "--delay-ms", "200") as lean:
        assert httpx.get(f"{lean}/models", timeout=5).status_code == 404
        assert httpx.post(f"{lean}/chat/completions", content=b"not json", timeout=5).status_code == 400
        assert chat(lean, "hi", stream=True).status_code == 400
        host, port = lean.removeprefix("http://").split("/")[0].split(":")
        with socket.create_connection((host, int(port))) as sock:  # hang up while the reply is pending
            body = b'{"model": "m", "messages": []}'
            sock.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
            )
        time.sleep(0.3)  # the timer fires on a closed connection: nothing to write to, no error
        assert chat(lean, "[c1]").json()["choices"][0]["message"]["content"] == '{"pick": "c1"}'
