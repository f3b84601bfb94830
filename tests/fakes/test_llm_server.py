"""The fake LLM server speaks what the real clients parse: chat, streaming, embeddings, errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import openai
import pytest
from langchain_core.messages import HumanMessage
from langchain_google_genai import GoogleGenerativeAIEmbeddings
from langchain_openai import OpenAIEmbeddings
from pydantic import SecretStr

from tests.fakes.fixtures import (  # noqa: F401 - fixtures, until tests/conftest.py imports them
    ChatModelFactory,
    chat_model_factory_fixture,
    fake_gemini_config,
    fake_llm_fixture,
    fake_openai_config,
    llm_server_fixture,
)
from tests.fakes.llm_server import FakeLLMServer, Reply, fake_embedding, request_text

pytestmark = pytest.mark.llm

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("make_config", [fake_openai_config, fake_gemini_config])
async def test_chat_and_streaming_through_the_real_clients(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, make_config: type
) -> None:
    model = chat_model_factory(make_config(llm_server))
    llm_server.script(Reply(content="hello", usage=(3, 4)), Reply(content="streamed"))
    reply = await model.ainvoke([HumanMessage("hi")])
    assert reply.content == "hello"
    assert reply.usage_metadata is not None
    assert (reply.usage_metadata["input_tokens"], reply.usage_metadata["output_tokens"]) == (3, 4)
    chunks = [chunk async for chunk in model.astream([HumanMessage("hi")])]
    assert "".join(str(chunk.content) for chunk in chunks) == "streamed"


async def test_responder_computes_replies_from_the_prompt(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory
) -> None:
    llm_server.responder = lambda body: Reply(content=request_text(body).upper())
    model = chat_model_factory(fake_gemini_config(llm_server))
    reply = await model.ainvoke([HumanMessage("echo me")])
    assert reply.content == "ECHO ME"


async def test_embeddings_through_the_real_clients(llm_server: FakeLLMServer) -> None:
    http_client = openai.DefaultAsyncHttpxClient()
    openai_embedder = OpenAIEmbeddings(
        model="text-embedding-3-small",
        api_key=SecretStr("k"),
        base_url=llm_server.url,
        check_embedding_ctx_length=False,  # no tiktoken download
        http_async_client=http_client,
    )
    gemini_embedder = GoogleGenerativeAIEmbeddings(
        model="models/gemini-embedding-001", api_key=SecretStr("k"), base_url=llm_server.gemini_url
    )
    try:
        from_openai = await openai_embedder.aembed_documents(["hello world", "goodbye"])
        from_gemini = await gemini_embedder.aembed_documents(["hello world", "goodbye"])
    finally:
        await http_client.aclose()
        gemini_embedder.client.close()
        await gemini_embedder.client.aio.aclose()
    assert from_openai[0] == pytest.approx(fake_embedding("hello world"), abs=1e-6)
    assert from_gemini[1] == pytest.approx(fake_embedding("goodbye"))
    assert from_openai[0] != from_openai[1]


def test_scripted_errors_and_raw_bodies(llm_server: FakeLLMServer) -> None:
    limit = Reply(status=429, headers={"Retry-After": "3"})
    llm_server.script(limit, Reply(status=502, body=b"<html>bad gateway</html>", content_type="text/html"))
    with httpx.Client(base_url=llm_server.url) as client:
        limited = client.post("/chat/completions", json={"model": "m", "messages": []})
        broken = client.post("/chat/completions", json={"model": "m", "messages": []})
        default = client.post("/chat/completions", json={"model": "m", "messages": []})
    assert (limited.status_code, limited.headers["retry-after"]) == (429, "3")
    assert limited.json()["error"]["code"] == "429"
    assert (broken.status_code, broken.text) == (502, "<html>bad gateway</html>")
    assert default.json()["choices"][0]["message"]["content"] == "{}"
    assert len(llm_server.requests) == 3


def test_standalone_command_serves_a_fixed_reply_and_prompt_rules() -> None:
    command = [sys.executable, "-m", "tests.fakes.llm_server", "--port", "0", "--reply", '{"ok": true}']
    command += ["--reply-if", "[c1]", '{"pick": "c1"}', "--reply-if", "[c", '{"pick": "any"}']
    with subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            banner = process.stdout.readline()
            base_url = banner.split("OpenAI base_url=")[1].split()[0]

            def reply_to(prompt: str) -> str:
                body = {"model": "m", "messages": [{"role": "user", "content": prompt}]}
                answer = httpx.post(f"{base_url}/chat/completions", json=body, timeout=5)
                return str(answer.json()["choices"][0]["message"]["content"])

            assert reply_to("no candidates yet") == '{"ok": true}'
            assert reply_to("[c1] doc p.1") == '{"pick": "c1"}'
            assert reply_to("[c2] doc p.2") == '{"pick": "any"}'
        finally:
            process.terminate()
            process.wait(timeout=5)
