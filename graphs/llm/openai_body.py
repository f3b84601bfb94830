"""The OpenAI SDK's chat-completions resource, minus a request-body "transform" that never changes our bodies.

langchain-openai sends every non-streaming call through `AsyncCompletions.create`, which runs the SDK's
generic `async_maybe_transform` over the whole body before posting it: a recursive walk that checks each
message against every member of the six-way message-type union, to rename aliased keys, format dates and
files, and dump pydantic models. The chat-completion parameter types declare no alias and no format
(`tests/graphs/llm/test_openai_body.py` walks them, so an SDK that adds one fails the suite), and
langchain-openai hands over plain dicts and lists, so for our calls the walk returns its input unchanged.
It cost about 0.3 ms of CPU per call, a sixth of the SDK's share of a model call.

`PlainBodyCompletions.create` (`plain_body_class`) posts the same body through the SDK's own `_post` (same
options, same authentication, same response type, same error mapping), only without the walk; streaming calls
go to the SDK's `create` untouched. Everything else (HTTP, retries off, parsing) is the SDK's.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the SDK is imported when an OpenAI model is built, never by importing this module
    from openai import AsyncOpenAI
    from openai.resources.chat.completions import AsyncCompletions


def given(params: dict[str, Any]) -> dict[str, Any]:
    """`params` without the SDK's "not given" markers (the transform drops them the same way)."""
    from openai._types import NotGiven, Omit

    return {key: value for key, value in params.items() if not isinstance(value, NotGiven | Omit)}


@cache
def plain_body_class() -> type[AsyncCompletions]:
    """`PlainBodyCompletions`: `client.chat.completions` whose non-streaming `create` posts its parameters as they are.

    Defined on first use, so that importing this module does not import the SDK.
    """
    from openai import AsyncStream
    from openai._base_client import make_request_options
    from openai._types import not_given, omit
    from openai.resources.chat.completions import AsyncCompletions
    from openai.resources.chat.completions.completions import validate_response_format
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    class PlainBodyCompletions(AsyncCompletions):
        async def create(  # keyword-only pass-through of the SDK's signature
            self,
            *,
            extra_headers: Any = None,
            extra_query: Any = None,
            extra_body: Any = None,
            timeout: Any = not_given,  # noqa: ASYNC109 - the SDK's own per-request option, passed through
            **params: Any,
        ) -> Any:
            """`AsyncCompletions.create`, without the body transform when the call does not stream."""
            if params.get("stream") is True:
                return await super().create(
                    extra_headers=extra_headers,
                    extra_query=extra_query,
                    extra_body=extra_body,
                    timeout=timeout,
                    **params,
                )
            validate_response_format(params.get("response_format", omit))
            return await self._post(
                "/chat/completions",
                body=given(params),
                options=make_request_options(
                    extra_headers=extra_headers,
                    extra_query=extra_query,
                    extra_body=extra_body,
                    timeout=timeout,
                    security={"bearer_auth": True},
                ),
                cast_to=ChatCompletion,
                stream=False,
                stream_cls=AsyncStream[ChatCompletionChunk],
            )

    return PlainBodyCompletions


def plain_body_completions(client: AsyncOpenAI) -> AsyncCompletions:
    """The chat-completions resource langchain-openai calls (`ChatOpenAI.async_client`), for `client`."""
    return plain_body_class()(client)
