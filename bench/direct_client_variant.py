"""The service with a minimal chat-completions client instead of langchain-openai + the OpenAI SDK: a contrast.

`python -m bench.direct_client_variant` runs `librarian_svc` unchanged except that an
`openai-compatible` model is `DirectChat` below: a LangChain chat model (the public `BaseChatModel`
extension point) that posts the same chat-completions body with one shared aiohttp session and
decodes the reply with msgspec. It measures what the SDK layer costs a think step under load
(`python -m bench.librarian_concurrency --model-client direct`); it is not the service's client.
It handles only what the benchmark exchanges: no streaming, no tools, errors as `DirectHTTPError`
with the status (which `graphs.llm.retry.classify` reads), nothing of the SDK's typed errors,
retries or Azure/OpenAI specifics.
"""

from __future__ import annotations

import sys
from typing import Any

import aiohttp
import msgspec
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import PrivateAttr

from graphs.llm.config import LLMConfig

APP_FACTORY = "bench.direct_client_variant:create_app"
_ROLES = {"human": "user", "ai": "assistant", "system": "system"}


class DirectHTTPError(Exception):
    """A non-2xx answer; `status_code` is what the shared retry loop classifies by."""

    def __init__(self, status_code: int, body: bytes) -> None:
        super().__init__(f"HTTP {status_code}: {body[:200]!r}")
        self.status_code = status_code


class DirectChat(BaseChatModel):
    """Chat completions over one aiohttp session per model, opened on first use (on the serving loop)."""

    base_url: str
    model_name: str
    api_key: str = "not-needed"
    temperature: float | None = None
    max_tokens: int | None = None
    extra_body: dict[str, Any] | None = None
    _session: aiohttp.ClientSession | None = PrivateAttr(default=None)

    @property
    def _llm_type(self) -> str:
        return "direct-openai-compatible"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        raise NotImplementedError("the service only calls its models asynchronously")

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self._session is None:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1000, keepalive_timeout=60))
        body: dict[str, Any] = {
            "messages": [{"role": _ROLES[m.type], "content": m.content} for m in messages],
            "model": self.model_name,
            "stream": False,
        }
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_completion_tokens"] = self.max_tokens
        body |= self.extra_body or {}
        body |= kwargs.get("extra_body") or {}
        headers = {"content-type": "application/json", "authorization": f"Bearer {self.api_key}"}
        url = self.base_url.rstrip("/") + "/chat/completions"
        async with self._session.post(url, data=msgspec.json.encode(body), headers=headers) as response:
            raw = await response.read()
            if response.status >= 400:
                raise DirectHTTPError(response.status, raw)
        reply = msgspec.json.decode(raw)
        message = reply["choices"][0]["message"]
        usage = reply.get("usage") or {}
        tokens = {
            "input_tokens": int(usage.get("prompt_tokens") or 0),
            "output_tokens": int(usage.get("completion_tokens") or 0),
            "total_tokens": int(usage.get("total_tokens") or 0),
        }
        ai = AIMessage(content=message.get("content") or "", usage_metadata=tokens)
        return ChatResult(generations=[ChatGeneration(message=ai)])

    async def aclose(self) -> None:
        """Close the session (`graphs.llm.providers.aclose_chat_model` calls this at shutdown)."""
        if self._session is not None:
            await self._session.close()


def direct_chat_model(cfg: LLMConfig) -> DirectChat:
    return DirectChat(
        base_url=cfg.base_url or "",
        model_name=cfg.model or "",
        api_key=cfg.api_key or "not-needed",
        temperature=cfg.temperature,
        max_tokens=cfg.max_output_tokens,
        extra_body={"max_tokens": cfg.max_output_tokens},
    )


def create_app() -> Any:
    """Each worker's app factory: the service's own, with `openai-compatible` models made by `direct_chat_model`."""
    import librarian_svc.services as services
    from graphs.llm import providers
    from librarian_svc.workers import create_worker_app

    def make(cfg: LLMConfig) -> BaseChatModel | None:
        return direct_chat_model(cfg) if cfg.provider == "openai-compatible" else providers.make_chat_model(cfg)

    services.make_chat_model = make  # type: ignore[attr-defined]
    return create_worker_app()


if __name__ == "__main__":
    from librarian_svc.__main__ import main

    sys.exit(main(APP_FACTORY))
