"""The three proposal-quality endpoints over HTTP with the embedded engine: samples, verdicts and bad input."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from litestar import Litestar
from litestar.testing import TestClient

from contracts.limits import PROPOSAL
from graphs.proposal_quality.validator import validate_advisor_report, validate_organizer_report
from tests.graphs.proposal_quality.samples import ADVISOR_SAMPLES, ORGANIZER_SAMPLES, Sample

VALIDATE = "/api/proposal-quality/validate"
ORGANIZER = "/api/organizer/run"
ADVISOR = "/api/advisor/run"


def run_body(sample: Sample) -> dict[str, Any]:
    body: dict[str, Any] = {"request_id": f"req-{sample.id}", "dashboard": sample.dashboard()}
    if sample.focus:
        body["focusNodeId"] = sample.focus
    if sample.intent:
        body["userIntent"] = sample.intent
    return body


# --- run endpoints, embedded engine -----------------------------------------------------------------


@pytest.mark.parametrize("sample", ORGANIZER_SAMPLES, ids=lambda s: s.id)
def test_organizer_run_on_every_sample(client: TestClient[Litestar], sample: Sample) -> None:
    response = client.post(ORGANIZER, json=run_body(sample))
    assert response.status_code == 200
    answer = response.json()
    assert answer["ok"] is True
    assert answer["errors"] == []
    assert answer["attempts"] == 1
    assert answer["request_id"] == f"req-{sample.id}"
    assert answer["usage"] == {
        "engine": "heuristic",
        "model": None,
        "llm_calls": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "total_tokens": 0,
        "fallback": False,
        "fallback_reason": None,
    }
    assert validate_organizer_report(answer["report"], sample.valid_ids).ok
    assert answer["rendered"]["kind"] == "organizer"
    assert answer["rendered"]["markdown"].startswith("## Organizer の整理提案")
    assert response.headers["x-request-id"] == f"req-{sample.id}"


def test_o4_decomposition_request_is_honoured(client: TestClient[Litestar]) -> None:
    o4 = next(s for s in ORGANIZER_SAMPLES if s.id == "O4")
    answer = client.post(ORGANIZER, json=run_body(o4)).json()
    (proposal,) = answer["report"]["decomposition_proposals"]
    assert proposal["target_node_id"] == "n4"
    assert len(proposal["suggested_children"]) >= 2


@pytest.mark.parametrize("sample", ADVISOR_SAMPLES, ids=lambda s: s.id)
def test_advisor_run_on_every_sample(client: TestClient[Litestar], sample: Sample) -> None:
    answer = client.post(ADVISOR, json=run_body(sample)).json()
    assert answer["ok"] is True, answer
    report = answer["report"]
    assert validate_advisor_report(report, sample.valid_ids).ok
    assert len(report["options"]) >= 2
    assert report["target_node_id"] == (sample.focus or (sample.valid_ids[0] if sample.valid_ids else ""))
    assert [s["key"] for s in answer["rendered"]["sections"]] == ["options", "criteria", "next_decision"]


def test_request_id_is_generated_or_taken_from_the_header(client: TestClient[Litestar]) -> None:
    body: dict[str, Any] = {"dashboard": {"trays": {}}}
    generated = client.post(ORGANIZER, json=body)
    assert generated.json()["request_id"] == generated.headers["x-request-id"]
    assert len(generated.json()["request_id"]) == 32
    from_header = client.post(ORGANIZER, json=body, headers={"X-Request-ID": "hdr-1"})
    assert from_header.json()["request_id"] == "hdr-1"


def test_trays_as_a_list_of_arrays(client: TestClient[Litestar]) -> None:
    body = {"dashboard": {"trays": [[{"id": "a", "title": "見積もり作成"}], [{"id": "b", "title": "見積もり確認"}]]}}
    answer = client.post(ORGANIZER, json=body).json()
    assert answer["ok"] is True
    assert answer["report"]["relation_proposals"][0]["from_node_id"] == "a"


# --- validate endpoint ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "sample"),
    [("organizer", s) for s in ORGANIZER_SAMPLES] + [("advisor", s) for s in ADVISOR_SAMPLES],
    ids=lambda v: v if isinstance(v, str) else v.id,
)
@pytest.mark.parametrize("ids_from", ["validNodeIds", "dashboard"])
def test_validate_accepts_every_sample(client: TestClient[Litestar], kind: str, sample: Sample, ids_from: str) -> None:
    ids: dict[str, Any] = (
        {"validNodeIds": sample.valid_ids} if ids_from == "validNodeIds" else {"dashboard": sample.dashboard()}
    )
    response = client.post(VALIDATE, json={"kind": kind, "report": sample.report, **ids})
    assert response.status_code == 200
    answer = response.json()
    assert answer["ok"] is True
    assert answer["errors"] == []
    assert answer["warnings"] == []
    assert answer["usage"]["engine"] == "heuristic"
    assert answer["usage"]["llm_calls"] == 0


def test_validate_reports_must_errors_and_should_warnings(client: TestClient[Litestar]) -> None:
    a1 = ADVISOR_SAMPLES[0].fresh_report()
    a1["options"] = a1["options"][:1]
    a1["options"][0]["label"] = "書き始める"
    a1.pop("criteria")
    answer = client.post(
        VALIDATE, json={"request_id": "v-1", "kind": "advisor", "report": a1, "validNodeIds": ["n1"]}
    ).json()
    assert answer == {
        "action": "VALIDATION",
        "ok": False,
        "errors": ["options must have at least 2 items"],
        "warnings": ["options[0].label should contain 案/パターン/候補", "criteria should have at least 2 items"],
        "request_id": "v-1",
        "usage": answer["usage"],
    }


def test_validate_against_a_dashboard_warns_where_the_report_mixes_nodes_up(client: TestClient[Litestar]) -> None:
    """With the dashboard, another node's title or another kind of status for the target is shown; with ids alone,
    nothing is known to compare."""
    sample = next(
        s for s in ADVISOR_SAMPLES if s.id == "A3"
    )  # n1 企画書の作成 (todo), n3 画面デザインのレビュー (todo)
    report = sample.fresh_report() | {"target_title": "企画書の作成", "current_status": "完了"}
    answer = client.post(VALIDATE, json={"kind": "advisor", "report": report, "dashboard": sample.dashboard()}).json()
    assert answer["ok"] is True
    assert answer["warnings"] == [
        "target_title '企画書の作成' is the title of node 'n1', not of 'n3' ('画面デザインのレビュー')",
        "current_status '完了' is not the dashboard's status of 'n3' ('todo')",
    ]
    by_ids = client.post(VALIDATE, json={"kind": "advisor", "report": report, "validNodeIds": sample.valid_ids}).json()
    assert by_ids["warnings"] == []


def test_validate_a_report_with_missing_keys_and_wrong_types(client: TestClient[Litestar]) -> None:
    report = {"decomposition_proposals": "none", "summary": 3}
    answer = client.post(VALIDATE, json={"kind": "organizer", "report": report, "validNodeIds": []}).json()
    assert answer["errors"] == [
        "decomposition_proposals must be an array",
        "grouping_proposals is required",
        "relation_proposals is required",
        "summary must be a string",
    ]


# --- bad input: 4xx INVALID_INPUT with the path ---------------------------------------------------


def _dashboard_body(endpoint: str, trays: Any) -> dict[str, Any]:
    """The smallest body of `endpoint` carrying a dashboard of these trays (validate needs a kind and a report)."""
    body: dict[str, Any] = {"dashboard": {"trays": trays}}
    return body | {"kind": "advisor", "report": {}} if endpoint == VALIDATE else body


def _error(response: Any, status: int, path: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["action"] == "ERROR"
    assert body["error_type"] == "INVALID_INPUT"
    assert path in [d["path"] for d in body["details"]], body["details"]
    assert "Traceback" not in response.text
    return body


@pytest.mark.parametrize(
    ("body", "path"),
    [
        pytest.param({"kind": "organizer", "report": [], "validNodeIds": []}, "$.report", id="report-array"),
        pytest.param({"kind": "organizer", "report": "{}", "validNodeIds": []}, "$.report", id="report-string"),
        pytest.param({"kind": "organizer", "validNodeIds": []}, "$.report", id="report-missing"),
        pytest.param({"kind": "planner", "report": {}, "validNodeIds": []}, "$.kind", id="unknown-kind"),
        pytest.param({"kind": "advisor", "report": {}, "validNodeIds": [1]}, "$.validNodeIds[0]", id="id-int"),
        pytest.param({"kind": "advisor", "report": {}, "validNodeIds": [""]}, "$.validNodeIds[0]", id="id-empty"),
        pytest.param({"kind": "advisor", "report": {}, "validNodeIds": "n1"}, "$.validNodeIds", id="ids-string"),
        pytest.param({"kind": "advisor", "report": {}, "dashboard": {}}, "$.dashboard.trays", id="dashboard-no-trays"),
        pytest.param(
            {"kind": "advisor", "report": {}, "dashboard": {"trays": {"t": [{"id": 7}]}}},
            "$.dashboard.trays.t[0].id",
            id="dashboard-id-int",
        ),
        pytest.param(
            {"kind": "advisor", "report": {}, "dashboard": {"trays": {"t": [{"id": "n1"}, {"id": "n1"}]}}},
            "$.dashboard.trays.t[1].id",
            id="dashboard-id-twice",
        ),
        pytest.param({"kind": "advisor", "report": {}}, "$.validNodeIds", id="no-ids"),
        pytest.param(
            {"kind": "advisor", "report": {}, "validNodeIds": [], "dashboard": {"trays": {}}},
            "$.validNodeIds",
            id="both-id-sources",
        ),
    ],
)
def test_validate_bad_input(client: TestClient[Litestar], body: dict[str, Any], path: str) -> None:
    _error(client.post(VALIDATE, json=body), 422, path)


@pytest.mark.parametrize(
    ("body", "path"),
    [
        pytest.param({}, "$.dashboard", id="no-dashboard"),
        pytest.param({"dashboard": {}}, "$.dashboard.trays", id="dashboard-no-trays"),
        pytest.param({"dashboard": []}, "$.dashboard", id="dashboard-array"),
        pytest.param({"dashboard": {"trays": "x"}}, "$.dashboard.trays", id="trays-string"),
        pytest.param({"dashboard": {"trays": {"t": [{"title": "no id"}]}}}, "$.dashboard.trays.t[0].id", id="no-id"),
        pytest.param({"dashboard": {"trays": [[{"id": None}]]}}, "$.dashboard.trays[0][0].id", id="id-null"),
        pytest.param(
            {"dashboard": {"trays": [[{"id": "n1"}], [{"id": "n1"}]]}}, "$.dashboard.trays[1][0].id", id="id-twice"
        ),
        pytest.param({"dashboard": {"trays": {}}, "focusNodeId": 3}, "$.focusNodeId", id="focus-int"),
        pytest.param({"dashboard": {"trays": {}}, "focusNodeId": "n9"}, "$.focusNodeId", id="focus-unknown"),
        pytest.param({"dashboard": {"trays": {}}, "userIntent": ["x"]}, "$.userIntent", id="intent-array"),
        pytest.param(
            {"dashboard": {"trays": {}}, "constraints": {"max_corrections": 3}},
            "$.constraints.max_corrections",
            id="more-reasks-than-the-seed",
        ),
        pytest.param(
            {"dashboard": {"trays": {}}, "constraints": {"timeout_ms": 0}}, "$.constraints.timeout_ms", id="timeout-0"
        ),
    ],
)
@pytest.mark.parametrize("path_", [ORGANIZER, ADVISOR])
def test_run_bad_input(client: TestClient[Litestar], body: dict[str, Any], path: str, path_: str) -> None:
    _error(client.post(path_, json=body), 422, path)


@pytest.mark.parametrize("path_", [ORGANIZER, ADVISOR])
def test_a_dashboard_over_the_node_total_is_413(client: TestClient[Litestar], path_: str) -> None:
    per_tray = PROPOSAL.nodes_total // 4 + 100  # each tray within its own limit, the sum over the total
    body = {"dashboard": {"trays": {f"t{t}": [{"id": f"{t}-{i}"} for i in range(per_tray)] for t in range(4)}}}
    error = _error(client.post(path_, json=body), 413, "$.dashboard.trays")
    assert "nodes_total" in error["message"]


def _listed_twice(first: str) -> str:
    return f"node id 'n1' is already listed at {first}"


@pytest.mark.parametrize(
    ("trays", "path", "message", "what"),
    [
        pytest.param(
            {"todo": [{"id": "n1", "title": "会場の予約"}], "done": [{"id": "n1", "title": "告知文のレビュー"}]},
            "$.dashboard.trays.done[0].id",
            _listed_twice("$.dashboard.trays.todo[0].id"),
            "a node id is listed twice",
            id="two-trays",
        ),
        pytest.param(
            {"todo": [{"id": "n1"}, {"id": "n2"}, {"id": "n1"}]},
            "$.dashboard.trays.todo[2].id",
            _listed_twice("$.dashboard.trays.todo[0].id"),
            "a node id is listed twice",
            id="one-tray",
        ),
        pytest.param(
            [[{"id": "n0"}, {"id": "n1"}], [{"id": "n1"}]],
            "$.dashboard.trays[1][0].id",
            _listed_twice("$.dashboard.trays[0][1].id"),
            "a node id is listed twice",
            id="listed-trays",
        ),
        pytest.param(
            {"保留 中": [{"id": "n1"}], "todo": [{"id": "n1"}]},
            "$.dashboard.trays.todo[0].id",
            _listed_twice('$.dashboard.trays["保留 中"][0].id'),
            "a node id is listed twice",
            id="tray-name-quoted-in-the-path",
        ),
        pytest.param(
            {"todo": [{"id": "n1", "parentId": "n1"}]},
            "$.dashboard.trays.todo[0].parentId",
            "node 'n1' names itself as its parent",
            "a parentId contradicts the dashboard",
            id="own-parent",
        ),
        pytest.param(
            [[{"id": "n1", "parentId": "n2"}], [{"id": "n2", "parentId": "n1"}]],
            "$.dashboard.trays[0][0].parentId",
            "node 'n1' is its own ancestor: n1 → n2 → n1",
            "a parentId contradicts the dashboard",
            id="parent-cycle",
        ),
    ],
)
@pytest.mark.parametrize("endpoint", [ORGANIZER, ADVISOR, VALIDATE])
def test_a_dashboard_that_contradicts_itself_is_422_at_the_field(
    client: TestClient[Litestar], endpoint: str, trays: Any, path: str, message: str, what: str
) -> None:
    """An id listed twice (named at the later listing, the message naming the first), a parent on a cycle."""
    error = _error(client.post(endpoint, json=_dashboard_body(endpoint, trays)), 422, path)
    assert error["details"][0] == {"path": path, "message": message}
    assert error["message"].startswith(what)
    assert path in error["message"]


@pytest.mark.parametrize("parent", ["archived-9", ""])
def test_a_parent_off_the_dashboard_gives_no_parent_on_it(client: TestClient[Litestar], parent: str) -> None:
    """A dashboard may leave a node's parent out (filtered, archived): the node is read as having none here."""
    trays = {"todo": [{"id": "n1", "title": "会場の予約"}, {"id": "n2", "title": "告知文", "parentId": parent}]}
    response = client.post(ADVISOR, json={"dashboard": {"trays": trays}, "focusNodeId": "n2"})
    assert response.status_code == 200, response.text
    assert response.json()["ok"] is True
    assert parent not in {
        i for s in response.json()["rendered"]["sections"] for it in s["items"] for i in it["node_ids"]
    } - {""}


def test_an_enormous_report_is_refused_with_its_path(client: TestClient[Litestar]) -> None:
    report = ORGANIZER_SAMPLES[0].fresh_report() | {"summary": "まず" + "あ" * 100_000}
    body = {"kind": "organizer", "report": report, "validNodeIds": []}
    error = _error(client.post(VALIDATE, json=body), 413, "$.report")
    assert "bytes as JSON" in error["message"]


def test_a_deep_report_is_refused_with_its_path(client: TestClient[Litestar]) -> None:
    deep: Any = "x"
    for _ in range(200):
        deep = {"a": deep}
    body = {"kind": "advisor", "report": deep, "validNodeIds": []}
    _error(client.post(VALIDATE, json=body), 413, "$.report")


@pytest.mark.parametrize("endpoint", [VALIDATE, ORGANIZER, ADVISOR])
def test_hostile_nesting_beyond_the_decoder_is_400(client: TestClient[Litestar], endpoint: str) -> None:
    n = 100_000
    raw = '{"kind": "organizer", "validNodeIds": [], "dashboard": {"trays": {}}, "report": {"a": '
    raw += "[" * n + "]" * n + "}}"
    response = client.post(endpoint, content=raw, headers={"Content-Type": "application/json"})
    _error(response, 400, "$")


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        pytest.param(b'{"kind": "organizer", "report": ', 400, id="malformed"),
        pytest.param(b"", 400, id="empty"),
        pytest.param(b"[1, 2]", 422, id="array-body"),
        pytest.param(b'{"kind": "organizer", "report": {"summary": "\xff"}, "validNodeIds": []}', 400, id="bad-utf8"),
    ],
)
def test_malformed_bodies(client: TestClient[Litestar], raw: bytes, status: int) -> None:
    response = client.post(VALIDATE, content=raw, headers={"Content-Type": "application/json"})
    _error(response, status, "$")


def test_body_over_the_limit_is_413(client: TestClient[Litestar]) -> None:
    raw = b'{"dashboard": {"trays": {}}, "userIntent": "' + b"a" * 9_000_000 + b'"}'
    response = client.post(ORGANIZER, content=raw, headers={"Content-Type": "application/json"})
    _error(response, 413, "$")


def test_wrong_method_is_405(client: TestClient[Litestar]) -> None:
    response = client.get(ORGANIZER)
    assert response.status_code == 405
    assert response.json()["error_type"] == "INVALID_INPUT"


def test_routes_are_documented(client: TestClient[Litestar]) -> None:
    schema = client.get("/schema/openapi.json").json()
    operations = {op["operationId"] for item in schema["paths"].values() for op in item.values()}
    assert {"proposalQualityValidate", "organizerRun", "advisorRun"} <= operations


# --- property: any dashboard, through HTTP ----------------------------------------------------------

titles = st.text(
    alphabet=st.sampled_from(list("推奨ベスト正解すべきが必要ですしてくださいログイン画面、・ab")), max_size=12
)


def _trays(listed: list[tuple[str, int, str]]) -> dict[str, list[dict[str, str]]]:
    trays: dict[str, list[dict[str, str]]] = {}
    for tray, i, title in listed:
        trays.setdefault(tray, []).append({"id": f"n{i}", "title": title})
    return trays


# each id once across the trays: a dashboard that lists an id twice is refused (below)
dashboards = st.lists(
    st.tuples(st.sampled_from(["todo", "doing", "done", "保留"]), st.integers(0, 20), titles),
    unique_by=lambda node: node[1],
    max_size=20,
).map(_trays)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(trays=dashboards, kind=st.sampled_from([ORGANIZER, ADVISOR]))
def test_any_dashboard_gets_a_valid_grounded_report(
    client: TestClient[Litestar], trays: dict[str, Any], kind: str
) -> None:
    response = client.post(kind, json={"dashboard": {"trays": trays}})
    assert response.status_code == 200
    answer = response.json()
    assert answer["ok"] is True, answer["errors"]
    ids = {node["id"] for tray in trays.values() for node in tray}
    check = validate_organizer_report if kind == ORGANIZER else validate_advisor_report
    assert check(answer["report"], ids).ok


def test_dashboard_nodes_keep_their_other_fields_while_the_request_stays_strict(client: TestClient[Litestar]) -> None:
    """A dashboard is passed through from GET /api/dashboard: its nodes' other fields are ignored, not refused."""
    node = {"id": "n1", "title": "企画書を書く", "status": "todo", "estimate": 3, "assignee": {"name": "a"}}
    dashboard = {"trays": {"todo": [node, {"id": "n2", "title": "レビュー", "due": "2026-12-01"}]}}
    ok = client.post("/api/advisor/run", json={"dashboard": dashboard, "focusNodeId": "n1"})
    assert ok.status_code == 200, ok.text
    misspelled = client.post("/api/advisor/run", json={"dashboard": dashboard, "focus_node_id": "n1"})
    assert misspelled.status_code == 422
    assert misspelled.json()["details"][0]["path"] == "$.focus_node_id"


def test_advisor_options_use_the_nodes_children_sent_as_parent_id(client: TestClient[Litestar]) -> None:
    trays = {
        "todo": [
            {"id": "r", "title": "リリース準備", "status": "todo"},
            {"id": "c2", "title": "当日の連絡体制", "status": "todo", "parentId": "r"},
        ],
        "保留": [{"id": "c3", "title": "会場の予約", "status": "保留", "parentId": "r"}],
    }
    response = client.post(ADVISOR, json={"dashboard": {"trays": trays}, "focusNodeId": "r"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["ok"], body["errors"]
    labels = [option["label"] for option in body["report"]["options"]]
    assert any("会場の予約" in label for label in labels)  # the child on hold
    assert "子ノード2件" in body["report"]["summary"]
