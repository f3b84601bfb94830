"""Every agent end to end over HTTP against a running service, checked for contract properties, not text.

The same code runs against the real local model (`python -m bench.real_model`, `make real-model`) and, in
`make test`, against the scripted fake provider (tests/bench/test_real_model_harness.py), so the harness
cannot rot. Model calls and embeddings requests are read from the recording proxies in front of the model
and embeddings servers; fallbacks to the embedded rules from the service's JSON log lines and the responses.

A real model's output varies between runs even at temperature 0, so nothing here compares text: each agent
is judged on whether it completed and on properties every run must have —
- grounding: every id, page and snippet the service returns was in what the caller sent;
- bounded time: every step answered within its budget (`constraints.timeout_ms`);
- usage counted: each response's `usage` has exactly the calls and tokens the proxy saw for that step.
"""

from __future__ import annotations

import json
import re
import time
import unicodedata
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.real_model.proxy import Exchange, RecordingProxy
from reference_orchestrator.agent_sessions import grace_hits
from reference_orchestrator.corpus import Chunk, Corpus, jsquad_chunks
from reference_orchestrator.loop import execute_search

BUDGET_SLACK_S = 2.0
"""A step may overrun its budget by this much (the service answers TIMEOUT at the deadline, plus transport)."""
FALLBACK_WORDS = re.compile(r"heuristic|template|rule-based|extractive|embedded rules|falling back|fallback", re.I)

LIBRARIAN_QUESTION = "梅雨がみられるのはどの期間？"
GRACE_QUESTION = "オランダの憲法上の首都は？"
ACE_QUERY = "東京タワーの高さは何メートルですか？"
ACE_GROUND_TRUTH = "333メートル"
ACE_PLAYBOOK: dict[str, Any] = {
    "bullets": [
        {"id": "gen-00001", "section": "general", "content": "東京タワーの高さは300メートルである。"},
        {
            "id": "gen-00002",
            "section": "general",
            "content": "建造物の高さを答えるときは、アンテナを含むかを明記する。",
        },
        {"id": "gen-00003", "section": "general", "content": "数値を答えるときは単位を必ず付ける。"},
        {
            "id": "gen-00004",
            "section": "general",
            "content": "Always paginate: loop over page_index until an API returns an empty page.",
        },
        {"id": "gen-00005", "section": "general", "content": "東京スカイツリーの高さは634メートルである。"},
    ]
}
DASHBOARD: dict[str, Any] = {
    "trays": {
        "todo": [
            {"id": "n1", "title": "リリース準備、告知文の作成・当日の連絡体制", "status": "todo"},
            {"id": "n2", "title": "告知文のレビュー", "status": "todo"},
        ],
        "doing": [{"id": "n3", "title": "会場の予約", "status": "doing"}],
    }
}


ORGANIZER_LISTS = ("decomposition_proposals", "grouping_proposals", "relation_proposals")
MAX_CONSTRAINT_MS = 600_000
"""The contract's ceiling for `constraints.timeout_ms`; a longer budget is left to the server's REQUEST_TIMEOUT_MS."""


def constraints_for(timeout_ms: int) -> dict[str, int]:
    """`constraints.timeout_ms` for a step budget, when the contract can express it."""
    return {"timeout_ms": timeout_ms} if timeout_ms <= MAX_CONSTRAINT_MS else {}


@dataclass
class Step:
    """One HTTP call of an agent session, with the model calls made while it was in flight."""

    path: str
    request_id: str
    seconds: float
    budget_s: float
    status: int
    body: dict[str, Any]
    calls: list[Exchange]

    @property
    def action(self) -> str:
        """The response's `action` (`ok=…` for the proposal endpoints' REPORT and VALIDATION)."""
        if "ok" in self.body:
            return f"ok={str(self.body['ok']).lower()}"
        if "action" in self.body:
            return str(self.body["action"]) + (f" {self.body['error_type']}" if "error_type" in self.body else "")
        return f"HTTP {self.status}"


@dataclass
class AgentRun:
    """One agent's session: its steps, outcome, contract properties and what the logs said."""

    name: str
    steps: list[Step] = field(default_factory=list)
    completed: bool = False
    outcome: str = ""
    grounding: bool | None = None
    grounding_problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    fallbacks: list[str] = field(default_factory=list)
    failure: str | None = None

    @property
    def calls(self) -> list[Exchange]:
        """Every model call of the session."""
        return [call for step in self.steps for call in step.calls]

    @property
    def seconds(self) -> float:
        """Wall time of all steps."""
        return sum(step.seconds for step in self.steps)

    @property
    def bounded_time(self) -> bool:
        """Every step answered within its budget."""
        return all(step.seconds <= step.budget_s + BUDGET_SLACK_S for step in self.steps)

    @property
    def usage_problems(self) -> list[str]:
        """Steps whose `usage` disagrees with the calls the proxy saw."""
        problems = []
        for step in self.steps:
            usage = step.body.get("usage")
            seen = (
                len(step.calls),
                sum(c.prompt_tokens for c in step.calls),
                sum(c.completion_tokens for c in step.calls),
            )
            if usage is None:
                if step.calls:
                    problems.append(f"{step.request_id}: {step.action} body has no usage, {seen[0]} model call(s) made")
                continue
            told = (usage.get("llm_calls", 0), usage.get("input_tokens", 0), usage.get("output_tokens", 0))
            if told != seen:
                problems.append(f"{step.request_id}: usage says calls/in/out {told}, the wire saw {seen}")
        return problems

    @property
    def usage_counted(self) -> bool:
        """Every response's usage matches the wire."""
        return not self.usage_problems


class StepRecorder:
    """httpx event hooks that turn each request into a `Step` (sequential sessions only)."""

    def __init__(self, chat: RecordingProxy, budget_s: float) -> None:
        self.chat = chat
        self.budget_s = budget_s
        self.steps: list[Step] = []
        self._open: dict[int, tuple[float, int]] = {}

    async def on_request(self, request: httpx.Request) -> None:
        self._open[id(request)] = (time.monotonic(), len(self.chat))

    async def on_response(self, response: httpx.Response) -> None:
        started, index = self._open.pop(id(response.request), (time.monotonic(), len(self.chat)))
        await response.aread()
        seconds = time.monotonic() - started
        sent = _json(response.request.content)
        budget_ms = (sent.get("constraints") or {}).get("timeout_ms")
        self.steps.append(
            Step(
                path=response.request.url.path,
                request_id=str(sent.get("request_id") or response.headers.get("x-request-id", "")),
                seconds=seconds,
                budget_s=min(self.budget_s, budget_ms / 1000) if budget_ms else self.budget_s,
                status=response.status_code,
                body=_json(response.content),
                calls=[e for e in self.chat.since(index) if e.is_chat],
            )
        )

    def take(self) -> list[Step]:
        """The steps recorded since the last `take`."""
        steps, self.steps = self.steps, []
        return steps


def _json(raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


# --- the corpus the orchestrator searches -----------------------------------------------------------


class EmbeddedCorpus(Corpus):
    """BM25 as the reference orchestrator runs it, and vector search with a real embeddings server (pgvector's
    stand-in), each chunk embedded as a passage and each query as a query."""

    def __init__(self, chunks: list[Chunk], embeddings_url: str | None) -> None:
        super().__init__(chunks)
        self.embeddings_url = embeddings_url
        self._passages: np.ndarray | None = None

    def _embed(self, texts: list[str], role: str) -> np.ndarray:
        assert self.embeddings_url is not None
        vectors = []
        for start in range(0, len(texts), 16):
            response = httpx.post(
                f"{self.embeddings_url}/embeddings",
                json={"model": "e5", "input": texts[start : start + 16], "input_type": role},
                timeout=120,
            )
            response.raise_for_status()
            vectors += [row["embedding"] for row in response.json()["data"]]
        matrix = np.asarray(vectors, dtype=np.float32)
        norms = np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-9)
        normalised: np.ndarray = matrix / norms
        return normalised

    def vector_search(self, query: str, k: int) -> list[tuple[Chunk, float]]:
        if self.embeddings_url is None:
            return super().vector_search(query, k)
        if self._passages is None:
            self._passages = self._embed([c.text for c in self.chunks], "passage")
        scores = self._passages @ self._embed([query], "query")[0]
        top = np.argsort(-scores, kind="stable")[:k]
        return [(self.chunks[i], float(scores[i])) for i in top if scores[i] > 0]


def jsquad_corpus(
    path: Path, question: str, *, others: int = 12, embeddings_url: str | None = None
) -> tuple[EmbeddedCorpus, str]:
    """The question's article plus the first two paragraphs of `others` other articles; and the gold chunk id."""
    by_title: dict[str, list[Chunk]] = {}
    gold = ""
    for chunk, questions in jsquad_chunks(path):
        by_title.setdefault(chunk.document_id, []).append(chunk)
        if any(text == question for _, text in questions):
            gold = chunk.chunk_id
    if not gold:
        raise ValueError(f"{question!r} is not a JSQuAD question in {path}")
    title = gold.split("#")[0]
    chunks = list(by_title[title])
    for other in [t for t in by_title if t != title][:others]:
        chunks += by_title[other][:2]
    return EmbeddedCorpus(chunks, embeddings_url), gold


# --- the agents ---------------------------------------------------------------------------------------


def _normalise(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


async def run_librarian(
    client: httpx.AsyncClient, recorder: StepRecorder, corpus: Corpus, gold: str, *, timeout_ms: int
) -> AgentRun:
    """The Librarian loop: SEARCH answered from the corpus (BM25 + vector, top 5 each) until COMPLETE or ERROR."""
    run = AgentRun("librarian")
    history: list[dict[str, Any]] = []
    state: Any = None
    issued: set[str] = set()
    for call in range(1, 9):
        body = {
            "request_id": f"rm-librarian-{call}",
            "user_query": LIBRARIAN_QUESTION,
            "subject_id": "jsquad",
            "search_history": history,
            "state": state,
            "constraints": {"max_loops": 3, "max_queries": 4, "max_evidence": 5, **constraints_for(timeout_ms)},
        }
        answer = (await client.post("/agent/librarian/think", json=body)).json()
        if answer.get("action") != "SEARCH":
            break
        queries = [*answer.get("queries_text", []), *answer.get("queries_vector", [])]
        repeated = [q for q in queries if _normalise(q) in issued]
        if repeated:
            run.grounding_problems.append(f"step {call} re-issued {repeated}")
        issued |= {_normalise(q) for q in queries}
        run.notes.append(f"step {call} SEARCH text={answer.get('queries_text')} vector={answer.get('queries_vector')}")
        history.append(execute_search(corpus, answer, k=5, vector=True))
        state = answer["state"]
    run.steps = recorder.take()
    final = run.steps[-1].body if run.steps else {}
    run.outcome = run.steps[-1].action if run.steps else "no response"
    run.completed = final.get("action") == "COMPLETE"
    hits = [hit for round_ in history for hit in round_["results"]]
    run.grounding_problems += _evidence_problems(final.get("evidence", []), hits)
    run.grounding = not run.grounding_problems
    found = {(e["document_id"], p) for e in final.get("evidence", []) for p in e.get("pages", [])}
    title, page = gold.split("#")
    run.notes.append(
        f"evidence {sorted(found)}; gold {gold} {'found' if (title, int(page)) in found else 'not found'}; "
        f"coverage_notes: {str(final.get('coverage_notes', ''))[:160]!r}"
    )
    for item in final.get("evidence", []):
        run.notes.append(f"why_relevant {item['document_id']}: {str(item.get('why_relevant'))[:120]!r}")
    return run


def _evidence_problems(evidence: list[dict[str, Any]], hits: list[dict[str, Any]]) -> list[str]:
    problems = []
    for item in evidence:
        mine = [h for h in hits if h["document_id"] == item["document_id"]]
        if not mine:
            problems.append(f"evidence document {item['document_id']!r} was never a hit")
            continue
        pages = {h.get("page") for h in mine}
        problems += [f"{item['document_id']} page {p} was never a hit" for p in item.get("pages", []) if p not in pages]
        texts = [h["snippet"] for h in mine]
        problems += [
            f"{item['document_id']} snippet {s[:30]!r} is not from a hit"
            for s in item.get("snippets", [])
            if not any(s in text for text in texts)
        ]
    return problems


async def run_grace(client: httpx.AsyncClient, recorder: StepRecorder, corpus: Corpus, *, timeout_ms: int) -> AgentRun:
    """A GRACE session: searches answered from the corpus, every ASK_USER answered with PROCEED."""
    run = AgentRun("grace")
    body: dict[str, Any] = {
        "request_id": "rm-grace-1",
        "query": GRACE_QUESTION,
        "state": None,
        "constraints": constraints_for(timeout_ms),
    }
    given: list[dict[str, Any]] = []
    for call in range(1, 21):
        answer = (await client.post("/agent/grace/step", json=body)).json()
        action = answer.get("action")
        if action not in {"SEARCH", "ASK_USER"}:
            break
        body = {
            "request_id": f"rm-grace-{call + 1}",
            "state": answer["state"],
            "constraints": constraints_for(timeout_ms),
        }
        if action == "SEARCH":
            hits = grace_hits(corpus, answer["query"], min(5, answer.get("top_k") or 5))
            given += hits
            run.notes.append(f"step {call} SEARCH {answer['query']!r} → {len(hits)} hits")
            body["tool_result"] = {"step_id": answer["step_id"], "hits": hits, "turn": answer["turn"]}
        else:
            step = answer.get("step") or {}
            run.notes.append(f"step {call} ASK_USER {answer.get('kind')} → PROCEED")
            body["user_response"] = {
                "decision": "PROCEED",
                # A PLAN ask is approved as it is and reads no input (400 if given); a question reads it.
                **({} if answer.get("kind") == "PLAN" else {"input": "この情報で続けてください"}),
                "turn": answer["turn"],
                **({"step_id": step["step_id"]} if step.get("step_id") else {}),
            }
    run.steps = recorder.take()
    final = run.steps[-1].body if run.steps else {}
    run.outcome = run.steps[-1].action if run.steps else "no response"
    run.completed = final.get("action") == "COMPLETE"
    for source in final.get("sources", []):
        if not any(h["document_id"] == source["document_id"] and source["snippet"] in h["snippet"] for h in given):
            run.grounding_problems.append(f"source {source['document_id']!r} {source['snippet'][:30]!r} not a hit")
    run.grounding = not run.grounding_problems
    answer_text = str(final.get("answer", ""))
    citations = re.findall(r"\[S\d+\]", answer_text)
    run.notes.append(f"answer {answer_text[:120]!r}; citations {citations}; confidence {final.get('confidence')}")
    return run


async def run_ace(client: httpx.AsyncClient, recorder: StepRecorder, *, timeout_ms: int) -> AgentRun:
    """ACE's learning loop with the service's (real) embeddings: generate → reflect → curate."""
    run = AgentRun("ace")
    ids = {b["id"] for b in ACE_PLAYBOOK["bullets"]}
    constraints = constraints_for(timeout_ms)

    async def post(step: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = await client.post(path, json={"request_id": f"rm-ace-{step}", "constraints": constraints, **body})
        return _json(response.content)

    generated = await post("generate", "/agent/ace/generate", {"query": ACE_QUERY, "playbook": ACE_PLAYBOOK})
    trajectory = generated.get("trajectory")
    used = set((trajectory or {}).get("used_bullet_ids", []))
    if not used <= ids:
        run.grounding_problems.append(f"generate used unknown bullets {sorted(used - ids)}")
    run.notes.append(
        f"generate ({generated.get('produced_by')}): {str(generated.get('answer'))[:100]!r} used {sorted(used)}"
    )
    reflected: dict[str, Any] = {}
    if trajectory:
        reflected = await post(
            "reflect",
            "/agent/ace/reflect",
            {"trajectory": trajectory, "playbook": ACE_PLAYBOOK, "ground_truth": ACE_GROUND_TRUTH},
        )
        evaluations = (reflected.get("reflection") or {}).get("bullet_evaluations", [])
        evaluated = {e["bullet_id"] for e in evaluations}
        if not evaluated <= used:
            run.grounding_problems.append(f"reflect evaluated bullets that were not used {sorted(evaluated - used)}")
        insights = (reflected.get("reflection") or {}).get("insights", [])
        run.notes.append(
            f"reflect ({reflected.get('produced_by')}): {len(insights)} insight(s), "
            f"tags {[(e['bullet_id'], e['tag']) for e in evaluations]}, model_problem {reflected.get('model_problem')}"
        )
    curated: dict[str, Any] = {}
    if reflected.get("reflection"):
        curated = await post(
            "curate",
            "/agent/ace/curate",
            {"reflection": reflected["reflection"], "playbook": ACE_PLAYBOOK, "trajectory": trajectory},
        )
        for delta in curated.get("deltas", []):
            if delta.get("type") in ("UPDATE", "DELETE") and delta.get("bullet_id") not in ids:
                run.grounding_problems.append(f"curate {delta['type']} of unknown bullet {delta.get('bullet_id')}")
        bullet_ids = [b["id"] for b in (curated.get("playbook") or {}).get("bullets", [])]
        if len(bullet_ids) != len(set(bullet_ids)):
            run.grounding_problems.append("curated playbook has duplicate ids")
        deltas = [(d.get("type"), d.get("bullet_id")) for d in curated.get("deltas", [])]
        run.notes.append(f"curate ({curated.get('produced_by')}): deltas {deltas}")
    run.steps = recorder.take()
    run.outcome = " → ".join(step.action for step in run.steps)
    run.completed = len(run.steps) == 3 and all(s.status == 200 and s.body.get("action") != "ERROR" for s in run.steps)
    run.grounding = not run.grounding_problems
    return run


async def run_proposal(client: httpx.AsyncClient, recorder: StepRecorder, kind: str, *, timeout_ms: int) -> AgentRun:
    """One Organizer or Advisor run on the README's dashboard; every node id in the report must be on it."""
    run = AgentRun(kind)
    body: dict[str, Any] = {
        "request_id": f"rm-{kind}",
        "dashboard": DASHBOARD,
        "focusNodeId": "n1" if kind == "organizer" else "n3",
        "constraints": {**constraints_for(timeout_ms), "notes": ["今週中に決める"]},
    }
    if kind == "advisor":
        body["userIntent"] = "進め方に迷っている"
    answer = _json((await client.post(f"/api/{kind}/run", json=body)).content)
    run.steps = recorder.take()
    run.outcome = run.steps[-1].action if run.steps else "no response"
    run.completed = answer.get("ok") is True
    valid = {node["id"] for tray in DASHBOARD["trays"].values() for node in tray}
    used = set(_node_ids(answer.get("report")))
    if not used <= valid:
        run.grounding_problems.append(f"report names nodes not on the dashboard {sorted(used - valid)}")
    run.grounding = not run.grounding_problems
    errors, warnings = answer.get("errors", []), answer.get("warnings", [])
    run.notes.append(f"attempts {answer.get('attempts')}, errors {errors[:3]}, warnings {warnings[:3]}")
    report = answer.get("report") or {}
    if kind == "organizer":
        sizes = {key: len(report.get(key) or []) for key in ORGANIZER_LISTS}
        run.notes.append(f"proposals {sizes}, summary {str(report.get('summary'))[:80]!r}")
    else:
        labels = [str(option.get("label")) for option in report.get("options") or []]
        run.notes.append(f"options {labels}, next_decision {str(report.get('next_decision'))[:60]!r}")
    return run


def _node_ids(report: Any) -> Iterable[str]:
    if isinstance(report, dict):
        for key, value in report.items():
            if key in ("target_node_id", "from_node_id", "to_node_id") and isinstance(value, str) and value:
                yield value
            elif key == "node_ids" and isinstance(value, list):
                yield from (v for v in value if isinstance(v, str))
            else:
                yield from _node_ids(value)
    elif isinstance(report, list):
        for item in report:
            yield from _node_ids(item)


# --- the whole run --------------------------------------------------------------------------------------


@dataclass
class HarnessConfig:
    """Where everything is and how long a step may take."""

    base_url: str
    chat: RecordingProxy
    embeddings: RecordingProxy | None
    jsquad: Path
    orchestrator_embeddings_url: str | None
    timeout_ms: int


AgentRunner = Callable[[], Awaitable[AgentRun]]


async def run_all(cfg: HarnessConfig, log_lines: Callable[[], list[dict[str, Any]]]) -> list[AgentRun]:
    """Run every agent once, in order; an agent whose session breaks is reported, never hides the others."""
    recorder = StepRecorder(cfg.chat, budget_s=cfg.timeout_ms / 1000)
    hooks: dict[str, list[Callable[..., Any]]] = {"request": [recorder.on_request], "response": [recorder.on_response]}
    librarian_corpus, gold = jsquad_corpus(
        cfg.jsquad, LIBRARIAN_QUESTION, embeddings_url=cfg.orchestrator_embeddings_url
    )
    grace_corpus, _ = jsquad_corpus(cfg.jsquad, GRACE_QUESTION)
    runs: list[AgentRun] = []
    timeout = httpx.Timeout(cfg.timeout_ms / 1000 + 30)
    async with httpx.AsyncClient(base_url=cfg.base_url, timeout=timeout, event_hooks=hooks) as client:
        agents: list[tuple[str, AgentRunner]] = [
            ("librarian", lambda: run_librarian(client, recorder, librarian_corpus, gold, timeout_ms=cfg.timeout_ms)),
            ("grace", lambda: run_grace(client, recorder, grace_corpus, timeout_ms=cfg.timeout_ms)),
            ("ace", lambda: run_ace(client, recorder, timeout_ms=cfg.timeout_ms)),
            ("organizer", lambda: run_proposal(client, recorder, "organizer", timeout_ms=cfg.timeout_ms)),
            ("advisor", lambda: run_proposal(client, recorder, "advisor", timeout_ms=cfg.timeout_ms)),
        ]
        for name, runner in agents:
            try:
                run = await runner()
            except Exception as exc:  # a broken session is a finding, not the end of the report
                run = AgentRun(
                    name, steps=recorder.take(), outcome="harness error", failure=f"{type(exc).__name__}: {exc}"
                )
            runs.append(run)
    _attach_logs(runs, log_lines())
    return runs


def _attach_logs(runs: list[AgentRun], lines: list[dict[str, Any]]) -> None:
    """Warnings of each agent's requests; those that mean the embedded rules answered are its fallbacks."""
    for run in runs:
        ids = {step.request_id for step in run.steps}
        for line in lines:
            if line.get("request_id") not in ids or line.get("severity") not in ("WARNING", "ERROR"):
                continue
            detail = {k: v for k, v in line.items() if k in ("errors", "dropped", "reason", "error", "error_type")}
            text = f"{line.get('message')}" + (f" {json.dumps(detail, ensure_ascii=False)[:300]}" if detail else "")
            (run.fallbacks if FALLBACK_WORDS.search(str(line.get("message"))) else run.warnings).append(text)
        for step in run.steps:
            engine = (step.body.get("usage") or {}).get("engine")
            produced = step.body.get("produced_by")
            if step.calls and "heuristic" in (engine, produced):
                run.fallbacks.append(
                    f"{step.request_id}: answered by the embedded rules after {len(step.calls)} call(s)"
                )


# --- the report ------------------------------------------------------------------------------------------


def _mark(value: bool | None) -> str:
    return {True: "yes", False: "NO", None: "-"}[value]


def render_report(runs: list[AgentRun], *, title: str, settings: dict[str, str], extra: list[Exchange]) -> str:
    """The printed report: one table row per agent, then each agent's details, then the wire totals."""
    lines = [title, "settings: " + ", ".join(f"{k}={v}" for k, v in settings.items()), ""]
    header = (
        f"{'agent':<10} {'completed':<9} {'outcome':<30} {'steps':>5} {'calls':>5} {'re-asks':>7} "
        f"{'fallbacks':>9} {'latency s':>9} {'max step s':>10}  grounding  bounded  usage"
    )
    lines += [header, "-" * len(header)]
    for run in runs:
        calls = run.calls
        lines.append(
            f"{run.name:<10} {_mark(run.completed):<9} {run.outcome[:30]:<30} {len(run.steps):>5} {len(calls):>5} "
            f"{sum(c.is_reask for c in calls):>7} {len(run.fallbacks):>9} {run.seconds:>9.1f} "
            f"{max((s.seconds for s in run.steps), default=0.0):>10.1f}  {_mark(run.grounding):<9}  "
            f"{_mark(run.bounded_time if run.steps else None):<7}  {_mark(run.usage_counted if run.steps else None)}"
        )
    for run in runs:
        lines += ["", f"[{run.name}] {run.outcome}" + (f" — harness error: {run.failure}" if run.failure else "")]
        for step in run.steps:
            wire = ", ".join(
                f"{c.prompt_tokens}→{c.completion_tokens} tok {c.seconds:.1f}s {c.finish_reason}"
                + (" re-ask" if c.is_reask else "")
                for c in step.calls
            )
            lines.append(
                f"  {step.request_id}: {step.action} in {step.seconds:.1f}s (budget {step.budget_s:.0f}s)"
                + (f"; model: {wire}" if wire else "; no model call")
            )
        lines += [f"  note: {note}" for note in run.notes]
        lines += [f"  fallback: {text}" for text in run.fallbacks]
        lines += [f"  warning: {text}" for text in run.warnings]
        lines += [f"  grounding problem: {text}" for text in run.grounding_problems]
        lines += [f"  usage problem: {text}" for text in run.usage_problems]
        lines += [
            f"  over budget: {s.request_id} {s.seconds:.1f}s"
            for s in run.steps
            if s.seconds > s.budget_s + BUDGET_SLACK_S
        ]
    chat = [c for run in runs for c in run.calls]
    lines += [
        "",
        f"model calls: {len(chat)}, re-asks {sum(c.is_reask for c in chat)}, cut off at the token cap "
        f"{sum(c.finish_reason == 'length' for c in chat)}, abandoned when the service timed out "
        f"{sum(c.status == 499 for c in chat)}, HTTP errors {sum(c.status not in (200, 499) for c in chat)}, "
        f"prompt tokens {sum(c.prompt_tokens for c in chat)}, "
        f"completion tokens {sum(c.completion_tokens for c in chat)}, "
        f"model time {sum(c.seconds for c in chat):.1f}s, response formats {sorted({c.response_format for c in chat})}",
    ]
    if extra:
        roles: dict[str, int] = {}
        for e in extra:
            role = str(e.request.get("input_type") or "none")
            roles[role] = roles.get(role, 0) + len(e.inputs)
        lines.append(f"embeddings (service → server): {len(extra)} requests, texts by input_type {roles}")
    return "\n".join(lines)


def contract_holds(runs: list[AgentRun]) -> bool:
    """Grounding, bounded time and usage hold for every agent that ran (completion may vary with the model)."""
    return all(
        run.failure is None and run.grounding is not False and run.bounded_time and run.usage_counted for run in runs
    )
