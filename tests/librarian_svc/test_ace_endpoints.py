"""The ACE endpoints end to end with the embedded engine: search, generate, reflect, curate, /workflow/run.

Covers what a caller sees: grounded, deterministic results; the learning loop improving the playbook;
and every kind of bad input answered with a structured INVALID_INPUT (never a 500).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from contracts.ace import MAX_BULLET_NUMBER
from contracts.limits import ACE
from graphs.ace.playbook.store import PlaybookStore
from tests.graphs.ace.helpers import JAPANESE_PLAYBOOK, as_json, real_playbook

SEARCH = "/agent/ace/search"
GENERATE = "/agent/ace/generate"
REFLECT = "/agent/ace/reflect"
CURATE = "/agent/ace/curate"
WORKFLOW = "/workflow/run"

APPWORLD = as_json(real_playbook())
MIXED = as_json(JAPANESE_PLAYBOOK)


@pytest.fixture(name="store_client")
def fixture_store_client(
    make_app: Callable[..., Litestar], tmp_path: Path
) -> Iterator[tuple[TestClient[Litestar], PlaybookStore]]:
    store = PlaybookStore(tmp_path)
    store.save("appworld", real_playbook())
    with TestClient(app=make_app({"PLAYBOOK_DATA_DIR": str(tmp_path)}), raise_server_exceptions=False) as client:
        yield client, store


def post(client: TestClient[Litestar], path: str, body: dict[str, Any], status: int = 200) -> dict[str, Any]:
    response = client.post(path, json=body)
    assert response.status_code == status, response.text
    answer: dict[str, Any] = response.json()
    return answer


# --- search -------------------------------------------------------------------------------------------


def test_a_japanese_query_finds_the_japanese_bullet(client: TestClient[Litestar]) -> None:
    answer = post(
        client, SEARCH, {"query": {"query_text": "東京タワーの高さは何メートルですか", "top_k": 2}, "playbook": MIXED}
    )
    assert answer["action"] == "RESULTS"
    assert answer["results"][0]["bullet"]["id"] == "gen-00001"
    assert answer["candidates"] == 4
    assert answer["usage"]["engine"] == "heuristic"
    scores = [r["combined_score"] for r in answer["results"]]
    assert scores == sorted(scores, reverse=True)
    assert len(scores) == 2


def test_search_filters_by_section_and_true_confidence(client: TestClient[Litestar]) -> None:
    body = {
        "query": {"query_text": "venmo balance payment", "section_filter": ["apis_to_use_for_specific_information"]},
        "playbook": APPWORLD,
        "dataset": "appworld",
    }
    answer = post(client, SEARCH, body)
    assert {r["bullet"]["section"] for r in answer["results"]} == {"apis_to_use_for_specific_information"}
    assert answer["results"][0]["bullet"]["id"] in {"api-00076", "api-00081"}
    liar = {
        "id": "gen-00009",
        "section": "general",
        "content": "venmo balance trick",
        "harmful": 5,
        "confidence_score": 0.99,
    }
    answer = post(client, SEARCH, {"query": {"query_text": "venmo balance"}, "playbook": {"bullets": [liar]}})
    assert answer["results"] == []  # its real confidence is 0.0, below the default min_confidence 0.3
    answer = post(
        client, SEARCH, {"query": {"query_text": "venmo balance", "min_confidence": 0}, "playbook": {"bullets": [liar]}}
    )
    assert answer["results"][0]["bullet"]["confidence_score"] == 0.0


def test_alpha_weights_the_vector_score(client: TestClient[Litestar]) -> None:
    for alpha in (0.0, 0.25, 1.0):
        answer = post(client, SEARCH, {"query": {"query_text": "paginate songs"}, "playbook": APPWORLD, "alpha": alpha})
        for r in answer["results"]:
            assert r["combined_score"] == pytest.approx(alpha * r["vector_score"] + (1 - alpha) * r["bm25_score"])


def test_search_is_deterministic(client: TestClient[Litestar]) -> None:
    body = {
        "query": {"query_text": "how to complete the task", "top_k": 20},
        "playbook": APPWORLD,
        "dataset": "appworld",
    }
    assert post(client, SEARCH, body)["results"] == post(client, SEARCH, body)["results"]


# --- generate ------------------------------------------------------------------------------------------


def test_generate_answers_from_the_bullets_it_names(client: TestClient[Litestar]) -> None:
    answer = post(
        client,
        GENERATE,
        {"query": "How do I get all items from a paginated API?", "playbook": APPWORLD, "dataset": "appworld"},
    )
    assert answer["action"] == "ANSWER"
    used = answer["trajectory"]["used_bullet_ids"]
    contents = {b["id"]: b["content"] for b in APPWORLD["bullets"]}
    assert (
        "paginat" in contents[used[0]].lower()
    )  # e.g. shr-00344, "... paginated APIs: always implement proper pagination"
    shown = {r["bullet"]["id"] for r in answer["search_results"]}
    assert set(used) <= shown
    for bullet_id in used:
        assert f"[{bullet_id}]" in answer["answer"]
    assert answer["trajectory"]["generated_answer"] == answer["answer"]
    assert answer["trajectory"]["dataset"] == "appworld"
    assert len(answer["trajectory"]["reasoning_steps"]) >= 3
    assert answer["produced_by"] == "heuristic"


def test_generate_in_japanese(client: TestClient[Litestar]) -> None:
    answer = post(client, GENERATE, {"query": "東京タワーの高さは？", "playbook": MIXED})
    assert answer["trajectory"]["used_bullet_ids"][0] == "gen-00001"
    assert answer["answer"].startswith("「東京タワーの高さ」について")  # it answers the query, then applies the bullet
    assert "333メートル" in answer["answer"]


def test_generate_says_so_when_nothing_matches(client: TestClient[Litestar]) -> None:
    answer = post(client, GENERATE, {"query": "zzqx", "playbook": MIXED})
    assert answer["trajectory"]["used_bullet_ids"] == []
    assert "no guidance" in answer["answer"]


# --- reflect and curate -----------------------------------------------------------------------------------


def test_reflect_skips_unknown_ids_and_evaluates_each_used_bullet(client: TestClient[Litestar]) -> None:
    trajectory = {
        "query": "東京タワーの高さは？",
        "generated_answer": "東京タワーの高さは300メートル。",
        "used_bullet_ids": ["gen-00001", "gen-99999", "gen-00001", "gen-00004"],
    }
    wrong = {
        "bullets": [
            {"id": "gen-00001", "section": "general", "content": "東京タワーの高さは300メートル。"},
            MIXED["bullets"][3],
        ]
    }
    answer = post(
        client,
        REFLECT,
        {"trajectory": trajectory, "playbook": wrong, "ground_truth": "333メートル", "max_iterations": 3},
    )
    assert answer["action"] == "REFLECTION"
    assert answer["skipped_bullet_ids"] == ["gen-99999"]
    reflection = answer["reflection"]
    assert [(e["bullet_id"], e["tag"]) for e in reflection["bullet_evaluations"]] == [
        ("gen-00001", "harmful"),
        ("gen-00004", "neutral"),
    ]
    assert "333メートル" in reflection["insights"][0]["key_insight"]
    assert reflection["iteration_count"] == 1  # the rules do not refine
    assert reflection["trajectory_dataset"] == "default"
    assert answer["model_problem"] is None


def test_the_loop_learns_the_missing_lesson(client: TestClient[Litestar]) -> None:
    """generate → reflect against the ground truth → curate → the next generate answers with the lesson."""
    question = "How many songs can a Spotify queue hold?"
    first = post(client, GENERATE, {"query": question, "playbook": APPWORLD, "dataset": "appworld"})
    reflected = post(
        client,
        REFLECT,
        {"trajectory": first["trajectory"], "playbook": APPWORLD, "ground_truth": "A queue holds at most 1000 songs"},
    )
    curated = post(
        client, CURATE, {"reflection": reflected["reflection"], "playbook": APPWORLD, "trajectory": first["trajectory"]}
    )
    assert curated["action"] == "CURATED"
    (added,) = [d for d in curated["deltas"] if d["type"] == "ADD"]
    assert added["bullet_id"].startswith(("shr-", "api-", "psw-", "cms-", "code-", "vc-", "ts-", "misc-"))
    assert added["bullet_id"].endswith("-00360")
    playbook = curated["playbook"]
    assert playbook["metadata"]["last_bullet_number"] == 360
    by_id = {b["id"]: b for b in playbook["bullets"]}
    for evaluation in reflected["reflection"]["bullet_evaluations"]:
        old = next(b for b in APPWORLD["bullets"] if b["id"] == evaluation["bullet_id"])
        new = by_id[evaluation["bullet_id"]]
        assert (new["helpful"] - old["helpful"], new["harmful"] - old["harmful"]) == {
            "helpful": (1, 0),
            "harmful": (0, 1),
            "neutral": (0, 0),
        }[evaluation["tag"]]
    second = post(client, GENERATE, {"query": question, "playbook": playbook, "dataset": "appworld"})
    assert second["trajectory"]["used_bullet_ids"][0] == added["bullet_id"]
    assert "1000 songs" in second["answer"]


def test_curate_applies_the_callers_deltas_first(client: TestClient[Litestar]) -> None:
    reflection = {"insights": [], "bullet_evaluations": [], "trajectory_query": "q", "trajectory_dataset": "appworld"}
    deltas = [
        {"type": "DELETE", "section": "others", "bullet_id": "misc-00003"},
        {"type": "UPDATE", "section": "others", "bullet_id": "misc-00008", "content": "Call complete_task at the end."},
        {"type": "ADD", "section": "verification_checklist", "content": "Count the results before answering."},
    ]
    answer = post(
        client, CURATE, {"reflection": reflection, "playbook": APPWORLD, "deltas": deltas, "dataset": "appworld"}
    )
    assert [(d["type"], d["bullet_id"]) for d in answer["deltas"]] == [
        ("DELETE", "misc-00003"),
        ("UPDATE", "misc-00008"),
        ("ADD", "vc-00360"),
    ]
    ids = [b["id"] for b in answer["playbook"]["bullets"]]
    assert "misc-00003" not in ids
    assert len(ids) == len(APPWORLD["bullets"])


def test_curate_enforces_a_size_budget(client: TestClient[Litestar]) -> None:
    reflection = {"insights": [], "bullet_evaluations": [], "trajectory_query": "q", "trajectory_dataset": "default"}
    doubtful = {**MIXED["bullets"][1], "harmful": 3}
    playbook = {"bullets": [MIXED["bullets"][0], doubtful, *MIXED["bullets"][2:]]}
    answer = post(client, CURATE, {"reflection": reflection, "playbook": playbook, "max_bullets": 3})
    assert answer["pruned_bullet_ids"] == ["gen-00002"]
    assert len(answer["playbook"]["bullets"]) == 3


# --- bad input ---------------------------------------------------------------------------------------------

REFLECTION = {"insights": [], "bullet_evaluations": [], "trajectory_query": "q", "trajectory_dataset": "appworld"}
ADD = {"type": "ADD", "section": "general", "content": "Count the results before answering."}
DUPLICATE = {"bullets": [MIXED["bullets"][0], MIXED["bullets"][0]]}


@pytest.mark.parametrize(
    ("path", "body", "status", "where"),
    [
        pytest.param(
            SEARCH,
            {"query": {"query_text": "x"}, "playbook": DUPLICATE},
            400,
            "$.playbook.bullets[1].id",
            id="duplicate-ids",
        ),
        pytest.param(
            SEARCH,
            {
                "query": {"query_text": "x"},
                "playbook": {"bullets": [{"id": "a-1", "section": "s", "content": "c", "helpful": -1}]},
            },
            422,
            "$.playbook.bullets[0].helpful",
            id="negative-counter",
        ),
        pytest.param(
            CURATE,
            {
                "reflection": REFLECTION,
                "playbook": {"bullets": [{"id": "a-1", "section": "s", "content": "c", "helpfull": 7}]},
            },
            422,
            "$.playbook.bullets[0].helpfull",
            id="misspelled-counter",
        ),
        pytest.param(
            GENERATE,
            {
                "query": "x",
                "dataset": "appworld",
                "playbook": {"bullets": [{"id": "a-1", "section": "made_up", "content": "c"}]},
            },
            400,
            "$.playbook.bullets[0].section",
            id="unknown-section",
        ),
        pytest.param(
            SEARCH,
            {
                "query": {"query_text": "x"},
                "playbook": {"bullets": [{"id": "a-1", "section": "s", "content": " \u200b "}]},
            },
            400,
            "$.playbook.bullets[0].content",
            id="blank-bullet",
        ),
        pytest.param(
            SEARCH,
            {"query": {"query_text": "x", "section_filter": ["made_up"]}, "playbook": APPWORLD, "dataset": "appworld"},
            400,
            "$.query.section_filter[0]",
            id="unknown-section-filter",
        ),
        pytest.param(
            CURATE,
            {
                "reflection": REFLECTION,
                "playbook": APPWORLD,
                "deltas": [{"type": "UPDATE", "section": "others", "bullet_id": "misc-09999", "content": "x"}],
            },
            400,
            "$.deltas[0].bullet_id",
            id="delta-names-a-missing-bullet",
        ),
        pytest.param(
            CURATE,
            {
                "reflection": REFLECTION,
                "playbook": APPWORLD,
                "deltas": [{"type": "UPDATE", "section": "others", "bullet_id": "shr-00001", "content": "x"}],
            },
            400,
            "$.deltas[0].section",
            id="update-names-another-section",
        ),
        pytest.param(
            CURATE,
            {
                "reflection": REFLECTION,
                "playbook": APPWORLD,
                "deltas": [{"type": "DELETE", "section": "others", "bullet_id": "shr-00001"}],
            },
            400,
            "$.deltas[0].section",
            id="delete-names-another-section",
        ),
        pytest.param(
            CURATE,
            {
                "reflection": REFLECTION,
                "playbook": APPWORLD,
                "deltas": [
                    {
                        "type": "DELETE",
                        "section": "strategies_and_hard_rules",
                        "bullet_id": "shr-00001",
                        "content": "whatever",
                    }
                ],
            },
            400,
            "$.deltas[0].content",
            id="delete-names-other-content",
        ),
        pytest.param(
            CURATE,
            {
                "reflection": {**REFLECTION, "trajectory_dataset": "default"},
                "playbook": {**MIXED, "metadata": {"last_bullet_number": MAX_BULLET_NUMBER}},
                "deltas": [ADD],
            },
            422,
            "$.playbook.metadata.last_bullet_number",
            id="no-bullet-id-left",
        ),
        pytest.param(
            REFLECT,
            {"trajectory": {"query": "q", "dataset": "default"}, "playbook": {}, "dataset": "appworld"},
            400,
            "$.trajectory.dataset",
            id="reflect-datasets-differ",
        ),
        pytest.param(
            REFLECT,
            {"trajectory": {"query": "q"}, "playbook": {}, "dataset": "appworld"},
            400,
            "$.dataset",
            id="reflect-dataset-against-the-trajectorys-default",
        ),
        pytest.param(
            CURATE,
            {"reflection": REFLECTION, "trajectory": {"query": "q"}, "playbook": APPWORLD},
            400,
            "$.reflection.trajectory_dataset",
            id="curate-reflection-dataset-against-the-trajectorys-default",
        ),
        pytest.param(
            CURATE,
            {"reflection": REFLECTION, "playbook": APPWORLD, "dataset": "default"},
            400,
            "$.dataset",
            id="curate-dataset-against-the-reflections",
        ),
        pytest.param(
            CURATE,
            {
                "reflection": {**REFLECTION, "trajectory_query": "another question"},
                "trajectory": {"query": "q", "dataset": "appworld"},
                "playbook": APPWORLD,
            },
            400,
            "$.reflection.trajectory_query",
            id="curate-reflection-on-another-query",
        ),
        pytest.param(
            CURATE,
            {
                "reflection": {**REFLECTION, "bullet_evaluations": [{"bullet_id": "shr-00001", "tag": "helpful"}]},
                "trajectory": {"query": "q", "dataset": "appworld", "used_bullet_ids": ["shr-00005"]},
                "playbook": APPWORLD,
            },
            400,
            "$.reflection.bullet_evaluations[0].bullet_id",
            id="evaluation-of-an-unused-bullet",
        ),
        pytest.param(
            CURATE,
            {
                "reflection": {**REFLECTION, "bullet_evaluations": [{"bullet_id": "nope-1", "tag": "harmful"}]},
                "playbook": APPWORLD,
            },
            400,
            "$.reflection.bullet_evaluations[0].bullet_id",
            id="evaluation-of-an-unknown-bullet",
        ),
        pytest.param(
            REFLECT,
            {"trajectory": {"query": "q"}, "playbook": {}, "max_iterations": 9},
            422,
            "$.max_iterations",
            id="too-many-iterations",
        ),
        pytest.param(WORKFLOW, {"query": "x", "dataset": "../secrets"}, 422, "$.dataset", id="path-traversal"),
        pytest.param(
            SEARCH, {"query": {"query_text": "x", "top_k": 0}, "playbook": {}}, 422, "$.query.top_k", id="top-k-zero"
        ),
        pytest.param(GENERATE, {"playbook": {}}, 422, "$.query", id="missing-query"),
    ],
)
def test_bad_input_is_invalid_input_with_the_path(
    client: TestClient[Litestar], path: str, body: dict[str, Any], status: int, where: str
) -> None:
    answer = post(client, path, {"request_id": "bad-1", **body}, status)
    assert answer["action"] == "ERROR"
    assert answer["error_type"] == "INVALID_INPUT"
    assert answer["request_id"] == "bad-1"
    assert where in [d["path"] for d in answer["details"]]


MISCASED = "AppWorld"
"""`appworld` with other letter case: a different dataset, with the permissive default rules."""


@pytest.mark.parametrize(
    ("path", "body", "where"),
    [
        pytest.param(SEARCH, {"query": {"query_text": "x"}, "playbook": {}, "dataset": MISCASED}, ["$.dataset"]),
        pytest.param(GENERATE, {"query": "x", "playbook": {}, "dataset": MISCASED}, ["$.dataset"]),
        pytest.param(
            REFLECT,
            {"trajectory": {"query": "q", "dataset": MISCASED}, "playbook": {}},
            ["$.trajectory.dataset"],
            id="reflect-trajectory",
        ),
        pytest.param(
            CURATE,
            {"reflection": {**REFLECTION, "trajectory_dataset": "APPWORLD"}, "playbook": {}, "dataset": MISCASED},
            ["$.dataset", "$.reflection.trajectory_dataset"],
        ),
        pytest.param(WORKFLOW, {"query": "x", "dataset": MISCASED}, ["$.dataset"]),
        pytest.param(SEARCH, {"query": {"query_text": "x"}, "playbook": {}, "dataset": "Default"}, ["$.dataset"]),
    ],
)
def test_a_dataset_spelled_with_other_case_is_refused(
    client: TestClient[Litestar], path: str, body: dict[str, Any], where: list[str]
) -> None:
    """Not run under `default`'s permissive rules (or over another, empty, stored playbook) as if it were new."""
    answer = post(client, path, {"request_id": "case-1", **body}, 422)
    assert answer["error_type"] == "INVALID_INPUT"
    assert [d["path"] for d in answer["details"]] == where
    assert "case-sensitive" in answer["details"][0]["message"]


def test_a_playbook_over_the_cap_is_refused(client: TestClient[Litestar]) -> None:
    bullets = [{"id": f"b-{i}", "section": "s", "content": "x"} for i in range(ACE.bullets + 1)]
    answer = post(client, SEARCH, {"query": {"query_text": "x"}, "playbook": {"bullets": bullets}}, 422)
    assert answer["details"][0]["path"] == "$.playbook.bullets"
    assert str(ACE.bullets) in answer["details"][0]["message"]


def test_malformed_json_is_400(client: TestClient[Litestar]) -> None:
    response = client.post(CURATE, content=b'{"reflection": ', headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error_type"] == "INVALID_INPUT"


def test_the_request_id_comes_from_the_body_or_the_header(client: TestClient[Litestar]) -> None:
    body = {"query": {"query_text": "x"}, "playbook": MIXED}
    assert post(client, SEARCH, {**body, "request_id": "from-body"})["request_id"] == "from-body"
    response = client.post(SEARCH, json=body, headers={"X-Request-ID": "from-header"})
    assert response.json()["request_id"] == "from-header"
    assert response.headers["x-request-id"] == "from-header"


# --- /workflow/run ------------------------------------------------------------------------------------------


def test_workflow_runs_over_the_stored_playbook(store_client: tuple[TestClient[Litestar], PlaybookStore]) -> None:
    client, _ = store_client
    answer = post(client, WORKFLOW, {"query": "How do I get all items from a paginated API?"})
    assert answer["action"] == "COMPLETE"
    assert answer["search_results_count"] == 10  # seed 000's SearchQuery default top_k
    assert answer["used_bullet_ids"][0] == "shr-00344"  # "... from paginated APIs: always implement proper pagination"
    assert "[shr-00344]" in answer["llm_response"]
    assert answer["reflection"] is None
    assert answer["deltas"] == []
    assert answer["playbook_saved"] is False


def test_workflow_learns_and_saves_only_when_asked(store_client: tuple[TestClient[Litestar], PlaybookStore]) -> None:
    client, store = store_client
    body = {"query": "How many songs can a Spotify queue hold?", "ground_truth": "A queue holds at most 1000 songs"}
    dry = post(client, WORKFLOW, body)
    assert dry["reflection"]["insights"]
    assert [d["type"] for d in dry["deltas"]] == ["ADD"]
    assert dry["playbook_saved"] is False
    assert len(store.load("appworld").bullets) == 359
    saved = post(client, WORKFLOW, {**body, "save": True})
    assert saved["playbook_saved"] is True
    stored = store.load("appworld")
    assert len(stored.bullets) == 360
    assert stored.metadata.last_bullet_number == 360
    again = post(client, WORKFLOW, {"query": "How many songs can a Spotify queue hold?"})
    assert "1000 songs" in again["llm_response"]


def test_workflow_over_a_missing_dataset_is_empty(store_client: tuple[TestClient[Litestar], PlaybookStore]) -> None:
    client, _ = store_client
    answer = post(client, WORKFLOW, {"query": "anything", "dataset": "never-stored"})
    assert answer["search_results_count"] == 0
    assert answer["used_bullet_ids"] == []


def test_a_corrupt_stored_playbook_is_a_clear_500(store_client: tuple[TestClient[Litestar], PlaybookStore]) -> None:
    client, store = store_client
    store.path_for("broken").write_text('{"bullets": [{"id": 1}]}', encoding="utf-8")
    answer = post(client, WORKFLOW, {"query": "x", "dataset": "broken", "request_id": "r-corrupt"}, 500)
    assert answer["error_type"] == "OTHER"
    assert answer["request_id"] == "r-corrupt"
    assert "corrupt" in answer["message"]
    assert "broken" in answer["message"]


def test_workflow_never_creates_a_stored_playbook(store_client: tuple[TestClient[Litestar], PlaybookStore]) -> None:
    client, store = store_client
    body = {"query": "x", "dataset": "fresh", "ground_truth": "y", "save": True}
    answer = post(client, WORKFLOW, body, 400)
    assert answer["error_type"] == "INVALID_INPUT"
    assert answer["details"][0]["path"] == "$.save"
    assert not store.path_for("fresh").exists()


def test_curate_keeps_the_playbook_within_the_contract(client: TestClient[Litestar]) -> None:
    lessons = range(ACE.bullets)
    full = {"bullets": [{"id": f"general-{i:05d}", "section": "general", "content": f"lesson {i}"} for i in lessons]}
    reflection = {"insights": [], "bullet_evaluations": [], "trajectory_query": "q", "trajectory_dataset": "default"}
    deltas = [{"type": "ADD", "section": "general", "content": "one more lesson about venmo"}]
    answer = post(client, CURATE, {"reflection": reflection, "playbook": full, "deltas": deltas})
    assert len(answer["playbook"]["bullets"]) == ACE.bullets  # the default budget is the contract's cap
    assert answer["pruned_bullet_ids"] == ["general-00000"]  # equal confidence: the oldest untouched goes


@pytest.mark.parametrize(
    ("mark", "delta", "expected"),
    [
        pytest.param(MAX_BULLET_NUMBER - 1, ADD, MAX_BULLET_NUMBER, id="the-last-id"),
        pytest.param(4, {**ADD, "bullet_id": "x-999999999999"}, 5, id="an-adds-given-id-is-ignored"),
    ],
)
def test_curate_issues_ids_within_the_contract(
    client: TestClient[Litestar], mark: int, delta: dict[str, Any], expected: int
) -> None:
    reflection = {"insights": [], "bullet_evaluations": [], "trajectory_query": "q", "trajectory_dataset": "default"}
    body = {"reflection": reflection, "playbook": {**MIXED, "metadata": {"last_bullet_number": mark}}}
    answer = post(client, CURATE, {**body, "deltas": [delta]})
    assert answer["playbook"]["metadata"]["last_bullet_number"] == expected
    assert [d["bullet_id"] for d in answer["deltas"]] == [f"general-{expected:05d}"]
    post(client, CURATE, {"reflection": reflection, "playbook": answer["playbook"]})  # the service takes it back


def test_a_full_stored_playbook_refuses_new_ids_and_stays_readable(
    store_client: tuple[TestClient[Litestar], PlaybookStore],
) -> None:
    client, store = store_client
    text = "## GENERAL\n[gen-999999999999] Always paginate.\n"
    assert client.put("/playbooks/hw", content=text, headers={"content-type": "text/plain"}).status_code == 200
    runs = [
        {"query": q, "dataset": "hw", "ground_truth": truth, "save": True, "request_id": f"r-{i}"}
        for i, (q, truth) in enumerate(
            [("How many songs?", "At most 77"), ("Which API lists my playlists?", "Call show_playlist_library")]
        )
    ]
    post(client, WORKFLOW, runs[0])
    before = store.path_for("hw").read_bytes()
    assert store.load("hw").metadata.last_bullet_number == MAX_BULLET_NUMBER
    answer = post(client, WORKFLOW, runs[1], 422)
    assert (answer["error_type"], answer["request_id"]) == ("INVALID_INPUT", "r-1")
    assert answer["details"][0]["path"] == "$.dataset"
    assert "'hw' has no bullet id left" in answer["message"]
    assert store.path_for("hw").read_bytes() == before  # nothing written
    assert client.get("/playbooks/hw").status_code == 200
    post(client, WORKFLOW, {**runs[1], "save": False}, 422)  # a dry run could not issue the id either


def test_an_id_past_the_maximum_is_kept_and_moves_no_mark(
    store_client: tuple[TestClient[Litestar], PlaybookStore],
) -> None:
    """`doc-20240101120000` is a valid id; no id the service issues can equal it, so new ids go on from the mark."""
    client, _ = store_client
    text = "## GENERAL\n[doc-20240101120000] Always paginate.\n[gen-00003] Count the results first.\n"
    stored = client.put("/playbooks/hw", content=text, headers={"content-type": "text/plain"})
    assert (stored.status_code, stored.json()["last_bullet_number"]) == (200, 3)
    run = {"query": "How many songs?", "dataset": "hw", "ground_truth": "At most 77", "save": True}
    answer = post(client, WORKFLOW, run)
    assert [d["bullet_id"] for d in answer["deltas"] if d["type"] == "ADD"] == ["general-00004"]
    exported = client.get("/playbooks/hw").text
    assert "[doc-20240101120000] Always paginate." in exported


@pytest.mark.parametrize("caller", ["UPDATE", "DELETE"])
def test_the_curator_leaves_alone_a_bullet_the_caller_updates_or_deletes(
    client: TestClient[Litestar], caller: str
) -> None:
    """Its rule would delete the bullet for harmful votes; the caller's own delta of that bullet comes first."""
    wrong = {"id": "gen-00001", "section": "general", "content": "The Tokyo Tower is 300 metres tall.", "harmful": 3}
    reflection = {
        "insights": [],
        "bullet_evaluations": [{"bullet_id": "gen-00001", "tag": "harmful", "reason": "wrong height"}],
        "trajectory_query": "How tall is the Tokyo Tower?",
        "trajectory_dataset": "default",
    }
    fix = {"type": caller, "section": "general", "bullet_id": "gen-00001"}
    if caller == "UPDATE":
        fix["content"] = "The Tokyo Tower is 333 metres tall."
    answer = post(client, CURATE, {"reflection": reflection, "playbook": {"bullets": [wrong]}, "deltas": [fix]})
    assert [(d["type"], d["bullet_id"]) for d in answer["deltas"]] == [(caller, "gen-00001")]
    assert "the curator's DELETE of gen-00001 was left out" in " ".join(answer["notes"])
    contents = [b["content"] for b in answer["playbook"]["bullets"]]
    assert contents == (["The Tokyo Tower is 333 metres tall."] if caller == "UPDATE" else [])
