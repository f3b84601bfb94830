"""The reference loop: the rounds it sends fit the contract, and it drives the service to an end."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from litestar import Litestar
from litestar.testing import TestClient

from contracts.limits import LIBRARIAN
from reference_orchestrator import __main__ as cli
from reference_orchestrator import loop
from reference_orchestrator.corpus import Chunk, Corpus
from reference_orchestrator.loop import ServiceError, cut_snippet, execute_search, fit_round, run_question
from tests.support.asgi import asgi_client

LONG_CHUNK = ("東京タワーの高さは333メートルです。" + "東京タワーは港区芝公園にある電波塔で、" * 500)[:8_820]


class FixedResults:
    """A search side answering every query with `k` hits of `chars` characters, named after the query and rank."""

    def __init__(self, chars: int = 10) -> None:
        self.chars = chars

    def text_search(self, query: str, k: int) -> list[tuple[Chunk, float]]:
        return [(Chunk(query, rank, f"{query}#{rank}", "x" * self.chars), float(k - rank)) for rank in range(k)]

    vector_search = text_search


def _tower_corpus() -> Corpus:
    return Corpus([Chunk("tower", 0, "tower#0", LONG_CHUNK), Chunk("sky", 0, "sky#0", "スカイツリーは634メートル。")])


def _round(hits: int, chars: int) -> dict[str, Any]:
    """A round already sent: `hits` hits whose snippets add up to `chars` characters."""
    sizes = [chars // hits + (i < chars % hits) for i in range(hits)]
    return {"queries_text": ["q"], "queries_vector": [], "results": [{"snippet": "y" * size} for size in sizes]}


def test_a_chunk_longer_than_a_snippet_is_sent_cut_to_the_contracts_limit() -> None:
    assert len(LONG_CHUNK) == 8_820
    corpus = _tower_corpus()
    round_ = execute_search(corpus, {"queries_text": ["東京タワー"], "queries_vector": []}, k=5, vector=False)
    [hit] = round_["results"]
    assert hit["snippet"] == LONG_CHUNK[: LIBRARIAN.snippet_chars]


def test_a_round_keeps_every_querys_best_hits_within_the_hit_limit() -> None:
    queries = [f"q{i:02}" for i in range(16)]
    round_ = execute_search(FixedResults(), {"queries_text": queries, "queries_vector": []}, k=20, vector=False)
    results = round_["results"]
    assert len(results) == LIBRARIAN.hits_per_round == 300  # of 320
    per_query = {q: [h["page"] for h in results if h["metadata"]["query"] == q] for q in queries}
    assert all(ranks == list(range(len(ranks))) for ranks in per_query.values())  # each query's best, in order
    assert {len(ranks) for ranks in per_query.values()} == {19, 18}  # 300 = 12 × 19 + 4 × 18: rank by rank
    assert [h["metadata"]["query"] for h in results] == sorted(h["metadata"]["query"] for h in results)


@pytest.mark.parametrize(
    ("history", "hits", "chars"),
    [
        ([], 40, 400),  # 4 queries × 10 hits × 10 characters: all of it
        ([_round(300, 3_000)] * 3, 40, 400),
        ([_round(300, 3_000)] * 3 + [_round(75, 750)], 25, 250),  # hits_total: 1,000
        ([_round(10, 299_905)], 9, 90),  # snippet_chars_total: 300,000; a hit that does not fit is dropped
        ([_round(10, 300_000)], 0, 0),
    ],
)
def test_a_round_fits_what_the_history_leaves_of_the_totals(
    history: list[dict[str, Any]], hits: int, chars: int
) -> None:
    lists = [
        [{"snippet": "z" * 10, "metadata": {"query": f"q{i}"}, "rank": rank} for rank in range(10)] for i in range(4)
    ]
    kept = fit_round(lists, history)
    assert (len(kept), sum(len(h["snippet"]) for h in kept)) == (hits, chars)
    assert {h["rank"] for h in kept} == set(range(-(-hits // 4)))  # rank by rank across the four queries


def test_a_hit_that_does_not_fit_the_characters_left_is_dropped_and_a_shorter_one_kept() -> None:
    lists = [[{"snippet": "a" * 30}, {"snippet": "b" * 4}], [{"snippet": "c" * 8}]]
    kept = fit_round(lists, [_round(10, LIBRARIAN.snippet_chars_total - 12)])
    assert [h["snippet"] for h in kept] == ["b" * 4, "c" * 8]  # the 30 are not cut to 12


TOWER = "東京タワーは港区芝公園にある電波塔で、高さは333メートルです。"


def _history_leaving(chars: int) -> list[dict[str, Any]]:
    """One round that found the tower chunk whole, with filler hits leaving `chars` of `snippet_chars_total`."""
    filler = ("富士山は静岡県と山梨県にまたがる山である。" * 400)[: LIBRARIAN.snippet_chars]
    sizes = [len(filler)] * 37
    sizes.append(LIBRARIAN.snippet_chars_total - chars - len(TOWER) - sum(sizes))
    hits = [
        {"document_id": f"fuji{i}", "page": 1, "snippet": filler[:size], "metadata": {"query": "富士山"}}
        for i, size in enumerate(sizes)
    ]
    tower = {"document_id": "tower", "page": 3, "chunk_id": "tower#3", "snippet": TOWER, "score": 9.0}
    return [{"queries_text": ["東京タワー 高"], "queries_vector": [], "results": [tower, *hits]}]


def _think(client: TestClient[Litestar], history: list[dict[str, Any]]) -> dict[str, Any]:
    body = {"request_id": "cut", "user_query": "東京タワーの高さは何メートルですか", "subject_id": "d", "state": None}
    answer: dict[str, Any] = client.post("/agent/librarian/think", json={**body, "search_history": history}).json()
    assert answer["action"] == "COMPLETE", answer
    return answer


def test_the_last_hit_is_never_cut_into_a_second_version_that_disagrees(client: TestClient[Litestar]) -> None:
    """It was cut to the characters left, `東京タワーは…高さは33`: the Librarian then reported "The sources
    disagree (two versions of tower p.3: 333メートル vs 33)", and the cut text was evidence."""
    left = len(TOWER) - len("3メートルです。")  # the tower chunk again would have been cut to `…高さは33`
    history = _history_leaving(left)
    corpus = Corpus([Chunk("tower", 3, "tower#3", TOWER)])
    search = {"queries_text": ["東京タワー メートル"], "queries_vector": []}
    sent = execute_search(corpus, search, k=5, vector=False, history=history)
    assert sent["results"] == []

    answer = _think(client, [*history, sent])
    assert "disagree" not in answer["coverage_notes"]
    assert [item["snippets"] for item in answer["evidence"] if item["document_id"] == "tower"] == [[TOWER]]
    # what the old cut sent, and what the Librarian made of it
    cut = {**history[0]["results"][0], "snippet": TOWER[:left]}
    assert cut["snippet"].endswith("高さは33")
    answer = _think(client, [*history, {**search, "results": [cut]}])
    assert "two versions of tower p.3: 333メートル vs 33" in answer["coverage_notes"]


@pytest.mark.parametrize(
    ("text", "limit", "snippet"),
    [
        ("東京タワーは333メートル。", 20, "東京タワーは333メートル。"),  # fits: whole
        ("電波塔です。高さは333メートルです。", 14, "電波塔です。"),  # not `電波塔です。高さは333メ`
        ("It is tall! Height: 333 m", 17, "It is tall!"),
        ("How tall? 333.5 m here", 15, "How tall?"),  # the "." of 333.5 ends nothing
        ("Height 333.5 m tall", 10, "Height 333"),  # no sentence end at all: at the limit
        ("see example.com for 333 m", 20, "see example.com for "),
        ("第一章．高さは333メートル", 10, "第一章．"),  # a full-width period before Japanese
        ("電波塔\n高さは333メートル", 8, "電波塔\n"),
        ("本当？高さは333メートル", 8, "本当？"),
        ("高さは333メートル。次に", 11, "高さは333メートル。"),  # a sentence end at the limit
        ("It is 333 m. " + "c" * 30, 15, "It is 333 m."),
        (
            "a。" + "い" * LIBRARIAN.snippet_chars,  # the only sentence end is too far back: at the limit
            LIBRARIAN.snippet_chars,
            "a。" + "い" * (LIBRARIAN.snippet_chars - 2),
        ),
        (
            "い" * 6_500 + "。" + "う" * 2_000,  # within the tail: at the sentence end
            LIBRARIAN.snippet_chars,
            "い" * 6_500 + "。",
        ),
    ],
)
def test_a_long_snippet_is_cut_at_its_last_sentence_end_within_the_limit(text: str, limit: int, snippet: str) -> None:
    assert cut_snippet(text, limit) == snippet


async def test_a_loop_over_a_chunk_longer_than_a_snippet_completes(app: Litestar) -> None:
    """It used to end at step 2: INVALID_INPUT, `$.search_history[0].results[0].snippet` over 8,000 characters."""
    corpus = _tower_corpus()
    async with asgi_client(app) as client:
        result = await run_question(
            client, corpus, "東京タワーの高さは何メートルですか", request_id="long", vector=False
        )
    assert result.action == "COMPLETE", result.final
    assert result.final["evidence"][0]["document_id"] == "tower"


def _error(error_type: str) -> Callable[[httpx.Request, dict[str, Any]], httpx.Response]:
    """A 200 ERROR as the service answers it: with the request's state, which the README says to send again."""

    def answer(request: httpx.Request, body: dict[str, Any]) -> httpx.Response:
        error = {"action": "ERROR", "request_id": body["request_id"], "error_type": error_type, "message": "m"}
        return httpx.Response(200, json={**error, "details": [], "state": body["state"], "usage": None})

    return answer


def _page(status: int) -> Callable[[httpx.Request, dict[str, Any]], httpx.Response]:
    """What a proxy or load balancer in front of the service answers: an HTML page."""

    def answer(request: httpx.Request, body: dict[str, Any]) -> httpx.Response:
        return httpx.Response(status, headers={"content-type": "text/html"}, text=f"<html><h1>{status}</h1></html>")

    return answer


def _refused(request: httpx.Request, body: dict[str, Any]) -> httpx.Response:
    raise httpx.ConnectError("connection refused", request=request)


def _no_action(request: httpx.Request, body: dict[str, Any]) -> httpx.Response:
    return httpx.Response(200, json={"detail": "not the Librarian"})


class Scripted(httpx.AsyncBaseTransport):
    """The in-process service, except that the calls numbered in `canned` (from 1) get the canned answer."""

    def __init__(self, app: Litestar, canned: dict[int, Callable[[httpx.Request, dict[str, Any]], httpx.Response]]):
        self.inner = httpx.ASGITransport(app=app)  # type: ignore[arg-type]  # see tests/support/asgi.py
        self.canned = canned
        self.bodies: list[dict[str, Any]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        canned = self.canned.get(len(self.bodies))
        return canned(request, body) if canned else await self.inner.handle_async_request(request)


async def _loop(
    app: Litestar,
    canned: dict[int, Callable[[httpx.Request, dict[str, Any]], httpx.Response]],
    *,
    vector: bool = True,
) -> Any:
    transport = Scripted(app, canned)
    async with httpx.AsyncClient(transport=transport, base_url="http://svc") as client:
        result = await run_question(
            client, _tower_corpus(), "東京タワーの高さは何メートルですか", request_id="r", retry_delay=0, vector=vector
        )
    return result, transport.bodies


@pytest.mark.parametrize(
    ("canned", "request_ids"),
    [
        ({1: _error("MODEL_FAILURE")}, ["r-1", "r-1-r1", "r-2"]),
        ({2: _error("TIMEOUT")}, ["r-1", "r-2", "r-2-r1"]),
        ({2: _error("TIMEOUT"), 3: _error("MODEL_FAILURE")}, ["r-1", "r-2", "r-2-r1", "r-2-r2"]),  # both retries
        ({2: _page(502)}, ["r-1", "r-2", "r-2-r1"]),
        ({1: _page(429), 2: _page(503)}, ["r-1", "r-1-r1", "r-1-r2"]),
        ({2: _refused}, ["r-1", "r-2", "r-2-r1"]),
    ],
)
async def test_a_step_that_failed_for_a_while_is_sent_again_unchanged(
    app: Litestar,
    canned: dict[int, Callable[[httpx.Request, dict[str, Any]], httpx.Response]],
    request_ids: list[str],
) -> None:
    """It used to end at a TIMEOUT or MODEL_FAILURE the README says to retry, and crash on a proxy's page."""
    result, bodies = await _loop(app, canned)
    assert result.action == "COMPLETE", result.final
    assert [body["request_id"] for body in bodies][: len(request_ids)] == request_ids
    assert result.calls == len(bodies)
    for sent, again in itertools.pairwise(bodies):
        if "-r" in again["request_id"]:  # the same state and history, a request id of its own
            assert {**again, "request_id": None} == {**sent, "request_id": None}


@pytest.mark.parametrize(
    ("canned", "calls", "outcome"),
    [
        ({2: _error("TIMEOUT"), 3: _error("TIMEOUT"), 4: _error("TIMEOUT")}, 4, "TIMEOUT"),  # the last answer ends it
        ({2: _error("LOOP_LIMIT")}, 2, "LOOP_LIMIT"),  # not one a retry cures
        ({1: _page(502), 2: _page(502), 3: _page(502)}, 3, "HTTP 502 text/html: '<html><h1>502</h1></html>'"),
        ({1: _page(404)}, 1, "HTTP 404 text/html: '<html><h1>404</h1></html>'"),  # a wrong base URL: at once
        ({1: _no_action}, 1, """HTTP 200 application/json: '{"detail":"not the Librarian"}'"""),
    ],
)
async def test_a_step_that_keeps_failing_ends_the_loop_saying_how(
    app: Litestar,
    canned: dict[int, Callable[[httpx.Request, dict[str, Any]], httpx.Response]],
    calls: int,
    outcome: str,
) -> None:
    if outcome.startswith("HTTP"):
        with pytest.raises(ServiceError) as raised:
            await _loop(app, canned)
        assert str(raised.value).endswith(outcome)
        return
    result, bodies = await _loop(app, canned)
    assert (len(bodies), result.calls, result.final["error_type"]) == (calls, calls, outcome)


def _busy(
    status: int, retry_after: str, *, page: bool = False
) -> Callable[[httpx.Request, dict[str, Any]], httpx.Response]:
    """A 429 or 503 with `Retry-After`: the service's ERROR body (its 503 says 1 or 2), or a proxy's page."""

    def answer(request: httpx.Request, body: dict[str, Any]) -> httpx.Response:
        headers = {"retry-after": retry_after}
        if page:
            return httpx.Response(status, headers={**headers, "content-type": "text/html"}, text="<html>busy</html>")
        error = {"action": "ERROR", "request_id": body["request_id"], "error_type": "OTHER", "message": "busy"}
        return httpx.Response(status, headers=headers, json={**error, "details": [], "state": None, "usage": None})

    return answer


@pytest.mark.parametrize(
    ("canned", "waits"),
    [
        ({1: _busy(503, "1")}, [1.0]),  # the service's 503: not 0.2 s later, but after the second it asks for
        ({1: _busy(429, "2"), 2: _busy(503, "1")}, [2.0, 1.0]),
        ({1: _busy(503, "3", page=True)}, [3.0]),  # a proxy's page, no Librarian answer: the header still counts
        ({1: _busy(503, "3600")}, [10.0]),  # at most RETRY_AFTER_CAP_S
        ({1: _busy(503, "0"), 2: _busy(503, "0")}, [0.2, 0.4]),  # shorter than the backoff: the backoff
        ({1: _busy(503, "Wed, 21 Oct 2015 07:28:00 GMT")}, [0.2]),  # an HTTP date is not read
        ({1: _busy(503, "1.5")}, [0.2]),  # nor anything but whole seconds
        ({1: _page(503), 2: _error("TIMEOUT")}, [0.2, 0.4]),  # no header: as before
    ],
)
async def test_a_retry_waits_as_long_as_retry_after_asks(
    app: Litestar,
    monkeypatch: pytest.MonkeyPatch,
    canned: dict[int, Callable[[httpx.Request, dict[str, Any]], httpx.Response]],
    waits: list[float],
) -> None:
    """It used to retry 0.2 s and then 0.4 s later whatever the answer's `Retry-After` said."""
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(loop, "asyncio", SimpleNamespace(sleep=sleep))  # the loop's waits only
    transport = Scripted(app, canned)
    async with httpx.AsyncClient(transport=transport, base_url="http://svc") as client:
        result = await run_question(client, _tower_corpus(), "東京タワーの高さは何メートルですか", request_id="r")
    assert result.action == "COMPLETE", result.final
    assert slept == waits
    retried = [f"r-1-r{attempt}" for attempt in range(1, len(waits) + 1)]
    assert [body["request_id"] for body in transport.bodies][: len(waits) + 1] == ["r-1", *retried]


def test_the_command_line_reports_an_answer_that_is_no_librarian_action(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It used to end in a json.decoder.JSONDecodeError traceback."""

    async def proxy_page(*args: Any, **kwargs: Any) -> Any:
        raise ServiceError(httpx.Response(502, headers={"content-type": "text/html"}, text="<html>Bad Gateway"))

    monkeypatch.setattr(cli, "run_question", proxy_page)
    corpus = tmp_path / "chunks.jsonl"
    corpus.write_text(json.dumps({"document_id": "d", "page": 0, "chunk_id": "d#0", "text": "t"}) + "\n")
    with pytest.raises(SystemExit) as exited:
        cli.main(["--base-url", "http://127.0.0.1:9", "--corpus", str(corpus), "--question", "q"])
    assert (
        exited.value.code
        == "error: ServiceError: /agent/librarian/think answered HTTP 502 text/html: '<html>Bad Gateway'"
    )


@pytest.mark.parametrize(("vector", "reported"), [(True, ["梅雨の時期"]), (False, [])])
def test_a_round_reports_only_the_searches_that_ran(vector: bool, reported: list[str]) -> None:
    """With vector search off the round used to list the queries_vector anyway, with no hit: tried, nothing found."""
    action = {"queries_text": ["梅雨 期間"], "queries_vector": ["梅雨の時期"]}
    round_ = execute_search(FixedResults(), action, k=2, vector=vector)
    assert (round_["queries_text"], round_["queries_vector"]) == (["梅雨 期間"], reported)
    assert {hit["retrieval"] for hit in round_["results"]} == ({"text", "vector"} if vector else {"text"})


async def test_a_loop_without_vector_search_sends_rounds_of_text_queries_only(app: Litestar) -> None:
    """The service accepts a round whose queries_vector is empty although the SEARCH asked for some."""
    result, bodies = await _loop(app, {}, vector=False)
    assert result.action == "COMPLETE", result.final
    asked = [step["queries_vector"] for step in result.steps if step["action"] == "SEARCH"]
    assert any(asked)
    assert all(round_["queries_vector"] == [] for body in bodies for round_ in body["search_history"])
