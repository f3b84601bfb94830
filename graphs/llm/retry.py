"""Our one retry loop around provider calls, so every SDK runs with its own retries switched off.

Owning the loop means one policy for every provider (OpenAI, Azure, Gemini, OpenAI-compatible), a
per-attempt timeout that can never outlive the request's deadline, and retries that are logged.
Errors are classified without importing any provider SDK: by HTTP status (`status_code` on OpenAI
errors, `code` on google-genai errors, or `response.status_code`) and, failing that, by exception
class name, looking through the `__cause__` chain because LangChain re-raises SDK errors.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import structlog

from graphs.llm.errors import ModelFailure, ModelTimeout

T = TypeVar("T")

log = structlog.get_logger()

_TIMEOUT_NAMES = ("Timeout",)  # APITimeoutError, ReadTimeout, ConnectTimeout, ModelTimeoutError, TimeoutError
_CONNECTION_NAMES = (
    "APIConnectionError",
    "ConnectError",
    "ConnectionError",
    "ModelConnectionError",
    "NetworkError",
    "ReadError",
    "WriteError",
    "RemoteProtocolError",
    "ServerDisconnectedError",
    "ClientConnectorError",
    "ClientConnectionError",
)
_RETRYABLE_NAMES = ("RateLimitError", "InternalServerError", "ServiceUnavailable", "ModelAPIError")


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff with full jitter: sleep `uniform(0, min(cap, base * 2**n))` before retry n.

    A `Retry-After` (or `retry-after-ms`) the provider sends replaces the jittered delay, capped at
    `retry_after_cap_s`; the deadline always wins over both.
    """

    base_s: float = 0.25
    cap_s: float = 4.0
    retry_after_cap_s: float = 8.0

    def delay(self, retry: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number `retry` (0-based)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.retry_after_cap_s)
        return random.uniform(0.0, min(self.cap_s, self.base_s * 2**retry))  # noqa: S311 - jitter, not crypto


DEFAULT_BACKOFF = Backoff()


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a failed attempt means for the loop."""

    retryable: bool
    is_timeout: bool
    reason: str
    retry_after: float | None = None


def _causes(exc: BaseException) -> list[BaseException]:
    """`exc` and what it was raised from, outermost first (bounded, cycle-safe)."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain and len(chain) < 8:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _status_of(exc: BaseException) -> int | None:
    for attr in ("status_code", "code"):
        value = getattr(exc, attr, None)
        if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
            return value
    status = getattr(getattr(exc, "response", None), "status_code", None)
    return status if isinstance(status, int) and 100 <= status <= 599 else None


def _retry_after_of(exc: BaseException) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None or not hasattr(headers, "get"):
        return None
    if (millis := headers.get("retry-after-ms")) is not None:
        try:
            return float(millis) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:  # the HTTP-date form
        return email.utils.parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError):
        return None


def _class_names(exc: BaseException) -> list[str]:
    return [cls.__name__ for cls in type(exc).__mro__]


def classify(exc: BaseException) -> Verdict:
    """Decide whether `exc` is worth another attempt: 429, 5xx, timeouts and connection errors are."""
    chain = _causes(exc)
    retry_after = next((r for r in map(_retry_after_of, chain) if r is not None), None)
    for link in chain:
        status = _status_of(link)
        if status is not None:
            retryable = status == 429 or status >= 500
            return Verdict(retryable, status in (408, 504), f"HTTP {status}", retry_after if retryable else None)
    # The innermost cause says what happened: transports relabel errors on the way out (openai's
    # aiohttp transport raises ConnectTimeout for a refused connection), so a timeout wrapper
    # around a connection error is a connection error, not a slow provider.
    for link in reversed(chain):
        names = _class_names(link)
        if any(marker in name for name in names for marker in _TIMEOUT_NAMES):
            return Verdict(True, True, f"timeout ({type(exc).__name__})")
        if any(name in _CONNECTION_NAMES for name in names):
            return Verdict(True, False, f"connection error ({type(link).__name__})")
    names = [name for link in chain for name in _class_names(link)]
    if any(name in _RETRYABLE_NAMES for name in names):
        return Verdict(True, False, f"provider error ({type(exc).__name__})", retry_after)
    return Verdict(False, False, f"provider error ({type(exc).__name__})")


async def call_with_retries(
    fn: Callable[[], Awaitable[T]],
    *,
    max_retries: int,
    timeout_s: float,
    deadline: float | None,
    backoff: Backoff = DEFAULT_BACKOFF,
) -> T:
    """Await `fn()` with a per-attempt timeout, retrying transient failures within the deadline.

    Args:
        fn: Makes one fresh attempt each time it is called (e.g. `lambda: model.ainvoke(messages)`).
        max_retries: Attempts after the first; 0 means a single attempt.
        timeout_s: Upper bound of each attempt.
        deadline: Absolute `time.monotonic()` by which everything must be over; None for no deadline.
            Each attempt's timeout is cut to what is left, and a backoff that would end past the
            deadline is not slept: the loop gives up at once instead.
        backoff: The delay policy (tests shrink it).

    Raises:
        ModelTimeout: The last attempt timed out, or no time was left to make one.
        ModelFailure: A non-retryable error (400/401/403/404 ...), retries used up on a retryable one,
            or a retry the deadline left no room for.
    """
    retry = 0
    last: BaseException | None = None
    while True:
        budget = timeout_s if deadline is None else min(timeout_s, deadline - time.monotonic())
        if budget <= 0:
            raise ModelTimeout("the deadline passed before the model answered") from last
        try:
            async with asyncio.timeout(budget):
                return await fn()
        except TimeoutError as exc:
            last, verdict = exc, Verdict(True, True, f"no answer within {budget:.2f}s")
        except Exception as exc:
            last, verdict = exc, classify(exc)
        failure = ModelTimeout if verdict.is_timeout else ModelFailure
        if not verdict.retryable:
            raise failure(verdict.reason) from last
        if retry >= max_retries:
            raise failure(f"{verdict.reason}, after {retry + 1} attempt(s)") from last
        delay = backoff.delay(retry, verdict.retry_after)
        if deadline is not None and time.monotonic() + delay >= deadline:
            raise failure(f"{verdict.reason}; no time left to retry") from last
        retry += 1
        log.warning("llm_retry", attempt=retry + 1, of=max_retries + 1, reason=verdict.reason, delay_s=round(delay, 3))
        await asyncio.sleep(delay)
