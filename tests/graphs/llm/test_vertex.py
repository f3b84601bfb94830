"""Gemini on Vertex AI with Application Default Credentials, through the real clients, against the loopback fake.

No API key anywhere. In process: a `service_account` key file (a fresh RSA key) whose `token_uri` is the fake's
OAuth 2.0 endpoint, so google-auth really signs a JWT and exchanges it for a token, and google-genai really sends
it as `Authorization: Bearer`. The live service gets no credentials file at all: like a Cloud Run service it
finds the metadata server (the fake, through `GCE_METADATA_HOST`) and takes its service account's token from it.
The fake refuses Vertex requests without a token it issued. (An `authorized_user` file cannot be used: google-auth
always sends its refresh to Google's own token endpoint.)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx
import msgspec
import pytest
from langchain_core.messages import HumanMessage

from graphs.embeddings.factory import make_embeddings
from graphs.llm.config import ConfigError, EmbeddingConfig, LLMConfig
from graphs.llm.structured_output import ainvoke_structured, inline_json_schema
from tests.fakes.fixtures import ChatModelFactory
from tests.fakes.llm_server import FakeLLMServer, _jwt_claims
from tests.graphs.llm.test_structured_output import GOOD, GOOD_PLAN, Plan
from tests.support.live_service import LiveService

pytestmark = pytest.mark.llm

PROJECT, LOCATION = "proj-123", "europe-west4"
SERVICE_ACCOUNT = "librarian-svc@proj-123.iam.gserviceaccount.com"


def write_service_account_key(directory: Path, server: FakeLLMServer) -> Path:
    """A `service_account` key file (new RSA key) whose token exchange goes to the fake."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    info = {
        "type": "service_account",
        "project_id": PROJECT,
        "private_key_id": "test-key-1",
        "private_key": pem,
        "client_email": SERVICE_ACCOUNT,
        "client_id": "1234567890",
        "token_uri": server.token_url,
    }
    path = directory / "service-account.json"
    path.write_text(json.dumps(info), encoding="utf-8")
    return path


@pytest.fixture(name="adc_file")
def fixture_adc_file(tmp_path: Path, llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = write_service_account_key(tmp_path, llm_server)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    return path


def vertex_config(server: FakeLLMServer, **overrides: object) -> LLMConfig:
    config = LLMConfig(
        provider="vertex",
        model="gemini-2.5-flash",
        project=PROJECT,
        location=LOCATION,
        base_url=server.gemini_url,
        timeout_s=5.0,
        max_retries=0,
        max_output_tokens=321,
    )
    return msgspec.structs.replace(config, **overrides)


@pytest.mark.usefixtures("adc_file")
async def test_chat_authenticates_with_an_adc_token(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory
) -> None:
    cfg = vertex_config(llm_server)
    llm_server.script(GOOD, GOOD)
    model = chat_model_factory(cfg)
    first = await ainvoke_structured(model, [HumanMessage("plan")], Plan, cfg=cfg)
    second = await ainvoke_structured(model, [HumanMessage("plan again")], Plan, cfg=cfg)
    assert (first.value, second.value) == (GOOD_PLAN, GOOD_PLAN)
    assert first.usage.engine == "vertex"

    token_calls = [call for call in llm_server.calls if call.path == "/token"]
    assert len(token_calls) == 1, "the token is fetched once and reused until it expires"
    assert token_calls[0].body["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
    claims = _jwt_claims(token_calls[0].body["assertion"])
    assert claims is not None
    assert (claims["iss"], claims["scope"]) == (SERVICE_ACCOUNT, "https://www.googleapis.com/auth/cloud-platform")
    (token,) = llm_server.issued_tokens

    chats = [call for call in llm_server.calls if call.path != "/token"]
    assert [call.path for call in chats] == [
        f"/v1beta1/projects/{PROJECT}/locations/{LOCATION}/publishers/google/models/gemini-2.5-flash:generateContent"
    ] * 2
    assert {call.headers["authorization"] for call in chats} == {f"Bearer {token}"}
    assert not any("x-goog-api-key" in call.headers for call in chats)
    generation = chats[0].body["generationConfig"]
    assert generation["maxOutputTokens"] == 321
    assert generation["responseJsonSchema"] == inline_json_schema(Plan)


@pytest.mark.usefixtures("adc_file")
async def test_embeddings_on_vertex_use_the_same_credentials(llm_server: FakeLLMServer) -> None:
    cfg = EmbeddingConfig(
        provider="vertex",
        model="gemini-embedding-001",
        project=PROJECT,
        location=LOCATION,
        base_url=llm_server.gemini_url,
    )
    embeddings = make_embeddings(cfg)
    vectors = await embeddings.aembed_documents(["東京タワー", "スカイツリー"])
    query = await embeddings.aembed_query("東京タワーの高さ")
    assert len(vectors) == 2
    assert len(query) == len(vectors[0]) > 0

    (token,) = llm_server.issued_tokens
    predicts = [call for call in llm_server.calls if call.path.endswith(":predict")]
    assert predicts
    assert {call.path for call in predicts} == {
        f"/v1beta1/projects/{PROJECT}/locations/{LOCATION}/publishers/google/models/gemini-embedding-001:predict"
    }
    assert {call.headers["authorization"] for call in predicts} == {f"Bearer {token}"}
    contents = [instance["content"] for call in predicts for instance in call.body["instances"]]
    assert contents == ["東京タワー", "スカイツリー", "東京タワーの高さ"]


def test_no_credentials_is_a_config_error_at_build_time(
    llm_server: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    from graphs.llm.providers import make_chat_model

    with pytest.raises(ConfigError, match="LLM_PROVIDER=vertex needs Application Default Credentials"):
        make_chat_model(vertex_config(llm_server))


@pytest.mark.live
def test_the_service_on_cloud_run_takes_its_token_from_the_metadata_server(
    llm_server: FakeLLMServer, tmp_path: Path, start_live_service: Callable[..., LiveService]
) -> None:
    service = start_live_service(
        {
            "LLM_PROVIDER": "vertex",
            "GOOGLE_CLOUD_PROJECT": PROJECT,
            "GOOGLE_CLOUD_LOCATION": LOCATION,
            "GEMINI_BASE_URL": llm_server.gemini_url,
            "LLM_MAX_RETRIES": "0",
            # No credentials file: google-auth finds the metadata server, as on Cloud Run.
            "GCE_METADATA_HOST": llm_server.metadata_host,
            "GCE_METADATA_IP": llm_server.metadata_host,
            "HOME": str(tmp_path),  # no gcloud login to find either
        }
    )
    ready = httpx.get(f"{service.base_url}/ready", timeout=5).json()
    assert (ready["engine"], ready["embedding"]) == ("vertex", "vertex:gemini-embedding-001")
    llm_server.script('{"answer": "333 m [gen-00001]", "reasoning_steps": ["read"], "used_bullet_ids": ["gen-00001"]}')
    playbook = {"bullets": [{"id": "gen-00001", "section": "general", "content": "東京タワーの高さは333メートル"}]}
    response = httpx.post(
        f"{service.base_url}/agent/ace/generate",
        json={"query": "東京タワーの高さは？", "playbook": playbook},
        timeout=20,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["produced_by"] == "vertex"
    assert (body["usage"]["engine"], body["usage"]["llm_calls"]) == ("vertex", 1)
    chats = [call for call in llm_server.calls if call.path.endswith(":generateContent")]
    assert len(chats) == 1
    assert chats[0].headers["authorization"].removeprefix("Bearer ") in llm_server.issued_tokens
    embeds = [call for call in llm_server.calls if call.path.endswith(":predict")]
    assert embeds, "the embedder follows the chat provider onto Vertex AI"
    assert {call.headers["authorization"].removeprefix("Bearer ") for call in embeds} <= set(llm_server.issued_tokens)
    token_calls = [call for call in llm_server.calls if call.path.endswith("/token")]
    assert token_calls
    assert {call.path for call in token_calls} == {"/computeMetadata/v1/instance/service-accounts/default/token"}
    assert {call.headers["metadata-flavor"] for call in token_calls} == {"Google"}


@pytest.mark.live
@pytest.mark.parametrize(
    ("env", "missing"),
    [
        ({"GOOGLE_CLOUD_PROJECT": PROJECT}, "GOOGLE_CLOUD_LOCATION"),
        ({"GOOGLE_CLOUD_LOCATION": LOCATION}, "GOOGLE_CLOUD_PROJECT"),
        (
            {"GOOGLE_CLOUD_PROJECT": PROJECT, "GOOGLE_CLOUD_LOCATION": LOCATION},
            "Application Default Credentials",
        ),
    ],
)
def test_vertex_misconfiguration_stops_the_process_with_one_line(
    tmp_path: Path, env: dict[str, str], missing: str
) -> None:
    import os
    import subprocess
    import sys

    from tests.support.live_service import PROJECT_ROOT

    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "GOOGLE_", "GEMINI_"))}
    full = clean | env | {"LLM_PROVIDER": "vertex", "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "none.json")}
    result = subprocess.run(
        [sys.executable, "-m", "librarian_svc"],
        cwd=PROJECT_ROOT,
        env=full | {"PYTHONPATH": str(PROJECT_ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("librarian-svc: configuration error: LLM_PROVIDER=vertex needs")
    assert missing in lines[0]
