"""Admission by working memory: how many heavy requests one worker holds at once, decided before their bodies are read.

The request limits bound what one request may cost, not how many arrive together: a worker of a
1 GiB instance that ran 40 of the largest ACE requests at once (each holds about a hundred times its
body in embeddings and indexes) would be killed for memory, dropping every request in flight. So each
request's working memory is estimated from its declared body size (`Content-Length`) and its
operation's factor (`AgentSpec.memory_per_body_byte`), and the worker lets heavy requests in only while
their estimates fit `WORKER_MEMORY_BUDGET_MB`; the others wait in arrival order.

The wait happens at the door, before the body is read: a waiting request holds a socket and at most
uvicorn's 64 KiB read buffer (the rest of its body waits in the kernel and the client, TCP's own
backpressure), not its body, its decoded structs and the allocator arenas its decoding touched. Admitting
after decoding (the first version) lowered the peak at a dozen such requests at once, but at 40 the
memory held before admission dominated and the budget bounded nothing. A body without `Content-Length`
(chunked) is counted at `MAX_BODY_BYTES`; one declared over `MAX_BODY_BYTES` is not held (it gets its 413).

Once admitted, a heavy request's body must keep pace with `MIN_BODY_RATE_KB_S` (`body_window`), so a slow
sender cannot keep the memory it was given for long.

A request's budget is its own `timeout_ms`, which is in the body, so at the door only the server's
budget (`REQUEST_TIMEOUT_MS`) bounds the wait. Past it the request is answered 503 with `Retry-After` and
the ERROR body (`error_type: TIMEOUT`): nothing of it was read, so nothing was consumed and the caller
sends it again as it was (a stateful step included: its state is in the caller's hands, unread). Once in,
the time waited counts against the request's own deadline (`scope_wait_s`): one whose budget ran out
while waiting answers ERROR TIMEOUT carrying its state, as any slow step does.

Requests whose estimate is under `EXEMPT_MB` (bodies under 50 KB at the factor of 20: a Librarian step
with a short history, a usual GRACE step) never wait: at the instance's concurrency they fit in what the
budget leaves, and a lock would only cost them time.

After heavy requests the allocator is asked to hand its free pages back (`malloc_trim`, on a worker
thread, after the response is sent, once `TRIM_EVERY_MB` of them has finished): glibc otherwise keeps a
finished request's heap, so a worker stays at its high-water mark. With 80 of the heaviest requests at
once on the `cloudrun.yaml` instance (README, "Memory"), in three runs each beside a run without it: the
instance's RSS after the burst 621-781 MB vs 978-1,066, the peak never higher (939 vs 1,174, 1,174 vs
1,179, 1,053 vs 1,138-1,192 MB). Server CPU was the same in two runs and 21 % higher in one, on a machine
shared with other sessions. Those heaviest requests each exceed `TRIM_EVERY_MB`, so they still trim after
every one.
(`MALLOC_ARENA_MAX=2` made no consistent difference to the peak, so it is not set.)
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Callable
from typing import Any

import structlog
from litestar.types import ASGIApp, Receive, Scope, Send

from librarian_svc import body_window, drain
from librarian_svc.malloc_thresholds import libc_function
from librarian_svc.raw_error import unavailable
from librarian_svc.request_context import current_request_id

log = structlog.get_logger(__name__)

EXEMPT_MB = 1.0
"""Estimates below this run at once, outside the budget."""

TRIM_EVERY_MB = 64.0
"""`malloc_trim` once the heavy requests finished since the last trim add up to this much estimated memory.

A trim walks the heap and costs about 2 ms of a 12 ms three-round Librarian step (a 161 KB body, a 3.2 MB
estimate: measured in-process, trim on vs off, two runs each). After every request that was 20% of such
a step; now such steps trim once in 20, while a heavy ACE request (1.1 MB body, about 110 MB estimated)
still trims after each, which is what gives a burst's memory back."""

RETRY_AFTER_S = 2
"""What a 503 from the door suggests: about the time the heaviest accepted request holds its memory."""


MALLOC_TRIM = libc_function("malloc_trim")
"""glibc's `malloc_trim`, or None where the C library has none."""

_WAIT_KEY = "librarian_admission_wait_s"
_WAITING_KEY = "librarian_admission_waiting"


class MemoryBudget:
    """A first-come, first-served weighted semaphore counted in megabytes, for one worker's event loop."""

    def __init__(self, capacity_mb: float) -> None:
        """`capacity_mb`: the working memory heavy requests may hold at once."""
        self.capacity_mb = capacity_mb
        self.in_use_mb = 0.0
        self._finished_since_trim_mb = 0.0
        self._waiting: deque[tuple[float, asyncio.Future[None]]] = deque()

    async def reserve(self, need_mb: float) -> float:
        """Wait until `need_mb` fits; what was reserved (0 for an exempt request), for `release`."""
        if need_mb < EXEMPT_MB:
            return 0.0
        need = min(need_mb, self.capacity_mb)
        await self._acquire(need)
        return need

    def release(self, held_mb: float) -> None:
        """Give back what `reserve` returned."""
        if held_mb:
            self._release(held_mb)

    def trim_due(self, finished_mb: float) -> bool:
        """Count a finished heavy request; True when `TRIM_EVERY_MB` has finished since the last trim."""
        self._finished_since_trim_mb += finished_mb
        if self._finished_since_trim_mb < TRIM_EVERY_MB:
            return False
        self._finished_since_trim_mb = 0.0
        return True

    @property
    def waiting(self) -> int:
        """Requests waiting for their turn."""
        return len(self._waiting)

    async def _acquire(self, need: float) -> None:
        if not self._waiting and self.in_use_mb + need <= self.capacity_mb:
            self.in_use_mb += need
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (need, granted)
        self._waiting.append(entry)
        try:
            await granted
        except asyncio.CancelledError:  # the deadline passed while waiting
            if granted.done() and not granted.cancelled():
                self._release(need)  # granted in the same tick as the cancellation: give it back
            else:
                if entry in self._waiting:  # `_wake` drops entries whose future was cancelled
                    self._waiting.remove(entry)
                self._wake()  # a large request leaving the head of the queue may unblock smaller ones
            raise

    def _release(self, need: float) -> None:
        self.in_use_mb -= need
        self._wake()

    def _wake(self) -> None:
        """Grant waiting requests in arrival order while the head of the queue fits."""
        while self._waiting and self.in_use_mb + self._waiting[0][0] <= self.capacity_mb:
            need, granted = self._waiting.popleft()
            if not granted.done():
                self.in_use_mb += need
                granted.set_result(None)


def body_bytes(headers: list[tuple[bytes, bytes]], max_body_bytes: int) -> int:
    """The body's size as declared; a body without a length counts at the cap, one that will be refused as 0."""
    declared = next((value for name, value in headers if name.lower() == b"content-length"), None)
    if declared is None:
        return max_body_bytes if _has_body(headers) else 0
    try:
        size = int(declared)
    except ValueError:
        return 0  # the server refuses a malformed length before the app sees it
    return size if size <= max_body_bytes else 0  # over the cap: 413 before a byte of the body is read


def _has_body(headers: list[tuple[bytes, bytes]]) -> bool:
    return any(name.lower() == b"transfer-encoding" for name, _ in headers)


def waiting_for_admission(scope: Any) -> bool:
    """True while this request waits at the door (its body unread on purpose: the read timeout must not cut it)."""
    holder = scope.get("state") if isinstance(scope, dict) else None
    return isinstance(holder, dict) and bool(holder.get(_WAITING_KEY))


def scope_wait_s(scope: Any) -> float:
    """How long this request waited at the door (it counts against its own deadline)."""
    holder = scope.get("state", {})
    value = holder.get(_WAIT_KEY, 0.0) if isinstance(holder, dict) else 0.0
    return float(value)


def admission_middleware(
    budget: MemoryBudget, *, max_body_bytes: int, max_wait_s: float, min_body_rate_kb_s: float, spec_key: str
) -> Callable[[ASGIApp], ASGIApp]:
    """Litestar route middleware (it runs after routing, before the handler reads the body): the door."""

    def middleware(app: ASGIApp) -> ASGIApp:
        async def admit(scope: Scope, receive: Receive, send: Send) -> None:
            handler = scope.get("route_handler")
            spec = handler.opt.get(spec_key) if handler is not None else None
            need = 0.0
            if spec is not None and spec.body != "none":  # its working memory, from its declared body size
                need = body_bytes(list(scope["headers"]), max_body_bytes) * spec.memory_per_body_byte / 1_000_000
            if need < EXEMPT_MB:
                await app(scope, receive, send)
                return
            held = await _wait_at_door(scope, send, budget, need, max_wait_s)
            if held is None:
                return
            body_window.open_window(scope, min_body_rate_kb_s)  # the memory is held from now
            try:
                await app(scope, receive, send)
            finally:
                budget.release(held)
                if budget.trim_due(need) and MALLOC_TRIM is not None:  # off the event loop
                    asyncio.get_running_loop().run_in_executor(None, MALLOC_TRIM, 0)

        return admit

    return middleware


async def _wait_at_door(scope: Scope, send: Send, budget: MemoryBudget, need: float, max_wait_s: float) -> float | None:
    """What was reserved once `need` fits; None when the wait ran out (the 503 is sent)."""
    clock = asyncio.get_running_loop().time  # the clock the read timeout runs on (`http_protocol`)
    arrived = clock()
    state = scope.setdefault("state", {})
    state[_WAITING_KEY] = True
    try:
        async with asyncio.timeout(max_wait_s) as timer:
            with drain.bounded(timer):  # SIGTERM: a request still at the door is told at once
                held = await budget.reserve(need)
    except TimeoutError:
        await _refuse(scope, send, need, budget, clock() - arrived)
        return None
    finally:
        state[_WAITING_KEY] = False
    state[_WAIT_KEY] = clock() - arrived
    return held


async def _refuse(scope: Scope, send: Send, need_mb: float, budget: MemoryBudget, waited_s: float) -> None:
    """503 + Retry-After + the ERROR body: the request could not get its memory in time (its body is unread)."""
    shutting_down = drain.is_draining()
    message = (
        "the instance is shutting down before this request could start; send it again (nothing of it was read)"
        if shutting_down
        else f"the worker's memory for heavy requests stayed in use for {waited_s:.1f} s (this request needs about "
        f"{need_mb:.0f} MB of WORKER_MEMORY_BUDGET_MB={budget.capacity_mb:g}); nothing of it was read: send it "
        f"again as it was after Retry-After"
    )
    log.warning(
        "request not admitted",
        reason="shutdown" if shutting_down else "memory",
        need_mb=round(need_mb, 1),
        waited_s=round(waited_s, 2),
        in_use_mb=round(budget.in_use_mb, 1),
        waiting=budget.waiting,
    )
    headers, body = unavailable(current_request_id(scope), "TIMEOUT", message, math.ceil(RETRY_AFTER_S))
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
