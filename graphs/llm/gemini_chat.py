"""langchain-google-genai's chat model, its `generateContent` calls sent without google-genai's per-call rebuild.

`ChatGoogleGenerativeAI._agenerate` builds the request (`_prepare_request`), hands it to google-genai's
`AsyncModels.generate_content` and converts the reply (`_response_to_result`). `LeanChatGoogleGenerativeAI` keeps the
first and the last, and the error mapping between them, and sends the request through `graphs.llm.gemini_request`,
which cuts 1.6-2.4 ms of CPU from each model-backed think step (`python -m bench.model_step_cpu --provider gemini
--sdk-post`; its docstring says where the time went, and which calls it takes: the others go through
`generate_content` as before). Streaming keeps the library's path.
"""

from __future__ import annotations

from typing import Any

from google.genai.errors import ClientError, ServerError
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from langchain_google_genai import ChatGoogleGenerativeAI
from langchain_google_genai.chat_models import _handle_client_error, _handle_server_error, _response_to_result
from pydantic import PrivateAttr

from graphs.llm.gemini_request import GeminiTransport, generate_content


class LeanChatGoogleGenerativeAI(ChatGoogleGenerativeAI):
    """`ChatGoogleGenerativeAI` whose non-streaming calls go through `graphs.llm.gemini_request`."""

    _transport: GeminiTransport = PrivateAttr(default_factory=GeminiTransport)

    def __init__(self, **kwargs: Any) -> None:
        """The library's constructor, aliases included (`google_api_key`, `base_url`, …)."""
        super().__init__(**kwargs)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        """The library's `_agenerate`, line for line, with `generate_content` sent by `gemini_request`."""
        if self.client is None:
            raise ValueError("Client not initialized.")
        request = self._prepare_request(
            messages,
            stop=stop,
            **{**kwargs, "cached_content": kwargs.get("cached_content") or self.cached_content},
        )
        try:
            response = await generate_content(self._transport, self.async_client.models, **request)
        except ClientError as e:
            _handle_client_error(e, request)
            raise  # pragma: no cover - the handler always raises
        except ServerError as e:
            _handle_server_error(e)
            raise  # pragma: no cover - the handler always raises
        return _response_to_result(response)

    async def aclose(self) -> None:
        """Close this model's own session, then the library's clients (on the event loop that used them)."""
        await self._transport.aclose()
        await super().aclose()
