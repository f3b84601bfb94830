"""The shared retry loop: what is retried, how long it waits, and that the deadline always wins."""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import Awaitable, Callable

import httpx
import httpx2
import openai
import pytest
import structlog
from google.genai import errors as genai_errors
from hypothesis import given
from hypothesis import strategies as st
from langchain_google_genai.chat_models import GoogleAPIError, GoogleRateLimitError
from langchain_openai.chat_models.base import OpenAIAPIError, OpenAIRateLimitError

from graphs.llm.errors import ModelFailure, ModelTimeout
from graphs.llm.retry import Backoff, call_with_retries, classify

FAST = Backoff(base_s=0.001, cap_s=0.002, retry_after_cap_s=0.5)
_REQUEST = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")


def _openai_error(cls: type[openai.APIStatusError], status: int, headers: dict[str, str] | None = None) -> Exception:
    return cls("boom", response=httpx2.Response(status, request=_REQUEST, headers=headers), body=None)


def _google_error(code: int) -> Exception:
    details = {"error": {"code": code, "message": "boom", "status": "X"}}
    return (genai_errors.ClientError if code < 500 else genai_errors.ServerError)(code, details)


def _raised_from(outer: Exception, inner: Exception) -> Exception:
    try:
        raise outer from inner
    except Exception as exc:
        return exc


@pytest.mark.parametrize(
    ("exc", "retryable", "is_timeout"),
    [
        pytest.param(_openai_error(openai.RateLimitError, 429), True, False, id="openai-429"),
        pytest.param(_openai_error(openai.InternalServerError, 500), True, False, id="openai-500"),
        pytest.param(_openai_error(openai.InternalServerError, 503), True, False, id="openai-503"),
        pytest.param(_openai_error(openai.BadRequestError, 400), False, False, id="openai-400"),
        pytest.param(_openai_error(openai.AuthenticationError, 401), False, False, id="openai-401"),
        pytest.param(_openai_error(openai.PermissionDeniedError, 403), False, False, id="openai-403"),
        pytest.param(_openai_error(openai.NotFoundError, 404), False, False, id="openai-404"),
        pytest.param(openai.APITimeoutError(request=_REQUEST), True, True, id="openai-timeout"),
        pytest.param(openai.APIConnectionError(request=_REQUEST), True, False, id="openai-connection"),
        pytest.param(_openai_error(OpenAIRateLimitError, 429), True, False, id="langchain-openai-429"),
        pytest.param(_openai_error(OpenAIAPIError, 502), True, False, id="langchain-openai-502"),
        pytest.param(_google_error(429), True, False, id="genai-429"),
        pytest.param(_google_error(400), False, False, id="genai-400"),
        pytest.param(_google_error(403), False, False, id="genai-403"),
        pytest.param(_google_error(503), True, False, id="genai-503"),
        pytest.param(_google_error(504), True, True, id="genai-504-is-a-timeout"),
        pytest.param(_raised_from(GoogleRateLimitError("x"), _google_error(429)), True, False, id="lc-genai-429"),
        pytest.param(GoogleAPIError(code=500, response_json={}), True, False, id="langchain-genai-500"),
        pytest.param(httpx.ConnectError("refused"), True, False, id="httpx-connect"),
        pytest.param(httpx.ReadTimeout("slow"), True, True, id="httpx-read-timeout"),
        pytest.param(TimeoutError(), True, True, id="builtin-timeout"),
        pytest.param(ConnectionResetError(), True, False, id="builtin-connection"),
        pytest.param(ValueError("bad"), False, False, id="programming-error"),
        pytest.param(
            _raised_from(openai.APITimeoutError(request=_REQUEST), ConnectionRefusedError()),
            True,
            False,
            id="timeout-relabelling-a-refused-connection",
        ),
        pytest.param(
            _raised_from(openai.APITimeoutError(request=_REQUEST), TimeoutError()), True, True, id="timeout-of-timeout"
        ),
    ],
)
def test_classify(exc: Exception, retryable: bool, is_timeout: bool) -> None:
    verdict = classify(exc)
    assert (verdict.retryable, verdict.is_timeout) == (retryable, is_timeout)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "2"}, 2.0),
        ({"Retry-After": "0.5"}, 0.5),
        ({"retry-after-ms": "150"}, 0.15),
        ({}, None),
        ({"Retry-After": "soon"}, None),
    ],
)
def test_retry_after_is_read_from_the_response(headers: dict[str, str], expected: float | None) -> None:
    assert classify(_openai_error(openai.RateLimitError, 429, headers)).retry_after == expected


def test_retry_after_http_date() -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    retry_after = classify(_openai_error(openai.RateLimitError, 429, {"Retry-After": when})).retry_after
    assert retry_after is not None
    assert 25 < retry_after <= 31


@given(retry=st.integers(0, 20))
def test_full_jitter_stays_within_the_exponential_cap(retry: int) -> None:
    backoff = Backoff()
    assert 0 <= backoff.delay(retry, None) <= min(backoff.cap_s, backoff.base_s * 2**retry)


@pytest.mark.parametrize(("retry_after", "expected"), [(3.0, 3.0), (100.0, 8.0), (-1.0, 0.0)])
def test_retry_after_replaces_jitter_and_is_capped(retry_after: float, expected: float) -> None:
    assert Backoff().delay(5, retry_after) == expected


class Flaky:
    """An async callable that raises the given exceptions in turn, then returns "ok"."""

    def __init__(self, *failures: BaseException, hang_s: float = 0.0) -> None:
        self.failures = list(failures)
        self.calls = 0
        self.hang_s = hang_s

    async def __call__(self) -> str:
        self.calls += 1
        if self.hang_s:
            await asyncio.sleep(self.hang_s)
        if self.failures:
            raise self.failures.pop(0)
        return "ok"


async def _run(
    fn: Callable[[], Awaitable[str]], *, max_retries: int = 3, timeout_s: float = 1.0, deadline: float | None = None
) -> str:
    return await call_with_retries(fn, max_retries=max_retries, timeout_s=timeout_s, deadline=deadline, backoff=FAST)


async def test_success_needs_one_call() -> None:
    fn = Flaky()
    assert await _run(fn) == "ok"
    assert fn.calls == 1


async def test_transient_errors_are_retried_until_success() -> None:
    fn = Flaky(_openai_error(openai.RateLimitError, 429), _google_error(503), httpx.ConnectError("x"))
    assert await _run(fn, max_retries=3) == "ok"
    assert fn.calls == 4


@pytest.mark.parametrize("status", [400, 401, 403, 404])
async def test_client_errors_are_not_retried(status: int) -> None:
    fn = Flaky(_google_error(status))
    with pytest.raises(ModelFailure, match=f"HTTP {status}") as caught:
        await _run(fn)
    assert not isinstance(caught.value, ModelTimeout)
    assert fn.calls == 1


async def test_retries_used_up_raise_model_failure_with_the_cause() -> None:
    errors = [_openai_error(openai.InternalServerError, 500) for _ in range(3)]
    fn = Flaky(*errors)
    with pytest.raises(ModelFailure, match="HTTP 500, after 3 attempt") as caught:
        await _run(fn, max_retries=2)
    assert not isinstance(caught.value, ModelTimeout)
    assert caught.value.__cause__ is errors[-1]
    assert fn.calls == 3


async def test_attempt_timeout_raises_model_timeout() -> None:
    fn = Flaky(hang_s=5)
    started = time.monotonic()
    with pytest.raises(ModelTimeout):
        await _run(fn, max_retries=1, timeout_s=0.05)
    assert fn.calls == 2
    assert time.monotonic() - started < 0.5


async def test_deadline_cuts_the_attempt_short() -> None:
    fn = Flaky(hang_s=5)
    started = time.monotonic()
    with pytest.raises(ModelTimeout):
        await _run(fn, max_retries=10, timeout_s=5.0, deadline=started + 0.1)
    assert 0.09 < time.monotonic() - started < 0.5


async def test_deadline_already_passed_makes_no_call() -> None:
    fn = Flaky()
    with pytest.raises(ModelTimeout):
        await _run(fn, deadline=time.monotonic() - 1)
    assert fn.calls == 0


async def test_backoff_never_sleeps_past_the_deadline() -> None:
    fn = Flaky(_openai_error(openai.RateLimitError, 429, {"Retry-After": "0.4"}))
    started = time.monotonic()
    with pytest.raises(ModelFailure, match="no time left"):
        await _run(fn, deadline=started + 0.2)
    assert time.monotonic() - started < 0.1
    assert fn.calls == 1


async def test_retry_after_is_honoured() -> None:
    fn = Flaky(_openai_error(openai.RateLimitError, 429, {"Retry-After": "0.2"}))
    started = time.monotonic()
    assert await _run(fn) == "ok"
    assert time.monotonic() - started >= 0.19


async def test_each_retry_is_logged_without_secrets() -> None:
    secret = "sk-live-SECRET"
    fn = Flaky(
        _openai_error(openai.InternalServerError, 500, {"x-key": secret}),
        openai.APIConnectionError(message=f"cannot reach with key {secret}", request=_REQUEST),
    )
    with structlog.testing.capture_logs() as logs:
        assert await _run(fn) == "ok"
    retries = [entry for entry in logs if entry["event"] == "llm_retry"]
    assert [entry["attempt"] for entry in retries] == [2, 3]
    assert secret not in repr(logs)
