"""Build the configured embedder, always behind the content-hash cache.

Provider SDKs are imported inside their `match` arm so a deployment loads only the one it uses, and the default
(`hashing`) needs neither a key nor the network.
"""

from __future__ import annotations

from typing import assert_never

from langchain_core.embeddings import Embeddings
from pydantic import SecretStr

from graphs.embeddings.cache import CachedEmbeddings
from graphs.embeddings.hashing import HashingEmbeddings
from graphs.llm.config import EmbeddingConfig

EMBEDDING_MODULES: dict[str, tuple[str, ...]] = {
    "hashing": (),
    "gemini": ("langchain_google_genai",),
    "vertex": ("langchain_google_genai", "google.auth"),
    "openai": ("langchain_openai", "graphs.embeddings.openai_roles"),
}
"""What each arm of `make_embeddings` imports, so a worker's fork server can import it ahead
(`librarian_svc.worker_preload`); tests/graphs/llm/test_providers_modules.py keeps it true."""


def describe(cfg: EmbeddingConfig) -> str:
    """Name the embedder for readiness output, usage reports and cache keys.

    The hashing embedder's vectors depend on its dimension, so it is part of the name
    ("hashing-char-ngram-v1/512"); remote models are named by provider and model ("openai:text-embedding-3-small").

    Args:
        cfg: The resolved embedder configuration.

    Returns:
        A short, stable, secret-free description.
    """
    if cfg.provider == "hashing":
        return f"{cfg.model}/{cfg.dim}"
    return f"{cfg.provider}:{cfg.model}"


def make_embeddings(cfg: EmbeddingConfig) -> CachedEmbeddings:
    """Create the embedder `cfg` describes, wrapped in a `CachedEmbeddings` of `cfg.cache_size` entries.

    Remote providers return their model's native dimension; `cfg.dim` only sizes the hashing embedder.

    Args:
        cfg: The resolved embedder configuration (see `graphs.llm.config.resolve_embedding_config`).

    Returns:
        The cached embedder.
    """
    inner: Embeddings
    match cfg.provider:
        case "hashing":
            inner = HashingEmbeddings(dim=cfg.dim)
        case "gemini":
            from langchain_google_genai import GoogleGenerativeAIEmbeddings

            # `base_url` goes to google-genai's HttpOptions, so a proxy or a loopback fake can stand in for the API.
            inner = GoogleGenerativeAIEmbeddings(
                model=cfg.model, api_key=_secret(cfg.api_key), base_url=cfg.base_url, vertexai=False
            )
        case "vertex":
            from langchain_google_genai import GoogleGenerativeAIEmbeddings

            from graphs.llm.providers import application_default_credentials

            inner = GoogleGenerativeAIEmbeddings(
                model=cfg.model,
                vertexai=True,
                project=cfg.project,
                location=cfg.location,
                credentials=application_default_credentials("EMBEDDING_PROVIDER"),
                base_url=cfg.base_url,
            )
        case "openai":
            from langchain_openai import OpenAIEmbeddings

            from graphs.embeddings.openai_roles import RoleTaggedOpenAIEmbeddings

            # check_embedding_ctx_length=False sends raw text: the length check needs tiktoken, whose encodings are
            # downloaded at run time, and OpenAI-compatible servers do not take token ids anyway.
            embedder_class = RoleTaggedOpenAIEmbeddings if cfg.input_type else OpenAIEmbeddings
            inner = embedder_class(
                model=cfg.model, api_key=_secret(cfg.api_key), base_url=cfg.base_url, check_embedding_ctx_length=False
            )
        case _:
            assert_never(cfg.provider)
    # Two servers may serve different models under one name, so the endpoint is part of the cache key.
    key = describe(cfg) if cfg.base_url is None else f"{describe(cfg)}@{cfg.base_url}"
    return CachedEmbeddings(inner, model=key, max_entries=cfg.cache_size)


def _secret(value: str | None) -> SecretStr | None:
    """Wrap a key so the SDK models keep it out of their repr."""
    return None if value is None else SecretStr(value)


async def aclose_embeddings(embeddings: object) -> None:
    """Close the HTTP connections a provider embedder holds (at shutdown, on the loop that used them).

    Duck-typed like `aclose_chat_model`, so no provider SDK is imported to close another provider's client.
    """
    inner = getattr(embeddings, "inner", embeddings)
    client = getattr(inner, "client", None)  # GoogleGenerativeAIEmbeddings: a google-genai Client
    aio = getattr(client, "aio", None)
    if client is not None and aio is not None and hasattr(aio, "aclose"):
        client.close()
        await aio.aclose()
    async_client = getattr(inner, "async_client", None)  # OpenAIEmbeddings: openai's resource wrapper
    root = getattr(async_client, "_client", None)
    if root is not None and hasattr(root, "close"):
        await root.close()
