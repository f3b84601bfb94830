"""The embedded ACE engine's output is something a user can act on (issue 13, item 10).

Generator: it applies the relevant bullets to the query and drops off-topic ones, citing what it used.
Reflector: lessons are reusable strategies, not memorised question → answer pairs; only a bullet that
said something the ground truth contradicts is harmful (list numbering, dates and ids are not figures).
"""

from __future__ import annotations

import asyncio
import re

import pytest

from contracts.ace import Bullet, Playbook, SearchQuery, Trajectory
from graphs.ace.generator.heuristic import GeneratedAnswer, generate_extractive
from graphs.ace.heuristic_text import stem
from graphs.ace.reflector.heuristic import derive_insights, evaluate_bullets, judge
from graphs.ace.search.hybrid import HybridSearch
from graphs.ace.search.index import IndexCache
from graphs.embeddings.cache import CachedEmbeddings
from graphs.embeddings.hashing import HashingEmbeddings
from graphs.text.tokenize import content_tokens
from tests.graphs.ace.helpers import JAPANESE_PLAYBOOK, bullet, playbook, real_playbook

SEARCH = HybridSearch(CachedEmbeddings(HashingEmbeddings(dim=256), model="engine-test"), alpha=0.5, cache=IndexCache())
PAGINATION = playbook(
    bullet("gen-00001", "Always paginate: loop over page_index until an API returns an empty page."),
    bullet("gen-00002", "Use show_venmo_balance before approving a payment request."),
    bullet(
        "gen-00003",
        "Once you are done, call apis.supervisor.complete_task(), i.e. do not pass an answer when none is asked for.",
    ),
    bullet("gen-00004", "The search API returns at most 20 items per page, so keep paginating to get every item."),
    bullet("gen-00005", "Log in to the API with the supervisor's account before any call."),
)
LONG = playbook(
    bullet(
        "gen-00001",
        "For the Spotify app, log in first with the supervisor's password from the profile, because every "
        "Spotify API call needs the access token. Song lists are paginated, so loop over page_index until a "
        "page comes back empty. Remember to call complete_task at the end of every task, with the answer "
        "when the task asks for one.",
    ),
    bullet("gen-00002", "Use show_venmo_balance before approving a payment request."),
)


def generate(p: Playbook, query: str, top_k: int = 5) -> GeneratedAnswer:
    hits = asyncio.run(SEARCH.asearch(SearchQuery(query_text=query, top_k=top_k, min_confidence=0.0), p))
    weights = asyncio.run(SEARCH.aterm_weights(p, content_tokens(query), key=stem))
    return generate_extractive(query, "default", len(p.bullets), hits, weights)


@pytest.mark.parametrize(
    ("p", "query", "used"),
    [
        pytest.param(
            PAGINATION, "How do I get all items from a paginated API?", ["gen-00004", "gen-00001"], id="pagination"
        ),
        pytest.param(PAGINATION, "How do I pay a Venmo payment request?", ["gen-00002"], id="venmo"),
        pytest.param(JAPANESE_PLAYBOOK, "東京タワーの高さは？", ["gen-00001"], id="tower-ja"),
        pytest.param(JAPANESE_PLAYBOOK, "富士山の標高は何メートル？", ["gen-00002"], id="fuji-ja"),
        pytest.param(PAGINATION, "What is the weather tomorrow?", [], id="nothing-relevant"),
    ],
)
def test_the_generator_uses_the_relevant_bullets_and_drops_off_topic_ones(
    p: Playbook, query: str, used: list[str]
) -> None:
    answer = generate(p, query)
    assert answer.trajectory.used_bullet_ids == used
    cited = re.findall(r"\[([a-z]+-\d{5})\]", answer.answer)
    assert cited == used  # every applied point names its bullet, nothing else is cited
    dropped = [i for i in (b.id for b in p.bullets) if i not in used]
    steps = "\n".join(answer.trajectory.reasoning_steps)
    for dropped_id in dropped:
        assert f"Left out [{dropped_id}]" in steps  # the reasoning says why each one was not applied


def test_generic_and_function_words_do_not_make_a_bullet_relevant() -> None:
    """misc-00008 ("... i.e. do not pass ...") shares "i" and "do" with "How do I ...", and AppWorld's "API"."""
    answer = generate(real_playbook(), "How do I get all items from a paginated API?", top_k=10)
    contents = {b.id: b.content.lower() for b in real_playbook().bullets}
    assert answer.trajectory.used_bullet_ids
    assert "misc-00008" not in answer.trajectory.used_bullet_ids
    assert all("paginat" in contents[i] for i in answer.trajectory.used_bullet_ids)


@pytest.mark.parametrize(
    ("p", "query", "first_line"),
    [
        (PAGINATION, "How do I get all items from a paginated API?", "To get all items from a paginated API:"),
        (PAGINATION, "Pay the pending Venmo payment request", "To pay the pending Venmo payment request:"),
        (JAPANESE_PLAYBOOK, "東京タワーの高さは何メートルですか", "「東京タワーの高さ」について"),
        (PAGINATION, "Which API call returns items per page?", "To answer “Which API call returns items per page?”"),
    ],
)
def test_the_answer_addresses_the_query(p: Playbook, query: str, first_line: str) -> None:
    answer = generate(p, query).answer
    assert answer.splitlines()[0].startswith(first_line)
    assert re.fullmatch(r"1\. .+ \[[a-z]+-\d{5}\]", answer.splitlines()[1])


def test_a_long_bullet_is_applied_by_its_sentences_that_speak_to_the_query() -> None:
    answer = generate(LONG, "How do I list all songs in Spotify?").answer
    assert "Song lists are paginated, so loop over page_index until a page comes back empty." in answer
    assert "complete_task" not in answer  # the sentence about finishing a task does not answer this query


# --- the reflector -----------------------------------------------------------------------------------------


def failed(query: str, used: list[Bullet]) -> Trajectory:
    """A failed answer that applied the bullets word for word (what the extractive generator does)."""
    answer = "\n".join(f"{n}. {b.content} [{b.id}]" for n, b in enumerate(used, start=1))
    return Trajectory(query=query, generated_answer=answer, used_bullet_ids=[b.id for b in used])


SPOTIFY = "How many songs can a Spotify queue hold?"
LIMIT = "A Spotify queue holds at most 1000 songs"


@pytest.mark.parametrize(
    ("content", "truth", "tag"),
    [
        pytest.param(
            "For Spotify queue reset tasks: (1) collect the songs, (2) clear the queue, (3) add the songs, "
            "(4) shuffle the queue, (5) play music.",
            LIMIT,
            "neutral",
            id="list-numbering",
        ),
        pytest.param(
            "1. Open the Spotify queue\n2. Count the songs\n3. Report the count", LIMIT, "neutral", id="numbered-lines"
        ),
        pytest.param(
            "As of 2024-05-01, check the Spotify queue songs with show_song_queue.", LIMIT, "neutral", id="date"
        ),
        pytest.param(
            "Spotify queue songs: see shr-00042 and api-00107 (page_size 50 per call).", LIMIT, "neutral", id="ids"
        ),
        pytest.param("Step 2: list the Spotify queue songs before adding more.", LIMIT, "neutral", id="step-label"),
        pytest.param("A Spotify queue holds at most 500 songs.", LIMIT, "harmful", id="wrong-figure"),
        pytest.param("A Spotify queue holds at most five hundred songs.", LIMIT, "harmful", id="number-word"),
        pytest.param("東京タワーの高さは三百メートルである。", "333メートル", "harmful", id="kanji-numeral"),
        pytest.param(
            "Always paginate the Spotify queue songs: loop over page_index.",
            "Do not paginate the Spotify queue songs: the endpoint returns every song at once.",
            "harmful",
            id="opposite-polarity",
        ),
    ],
)
def test_only_a_bullet_the_ground_truth_contradicts_is_harmful(content: str, truth: str, tag: str) -> None:
    used = [bullet("shr-00001", content, section="s")]
    query = "東京タワーの高さは？" if "タワー" in content else SPOTIFY
    trajectory = failed(query, used)
    verdict = judge(trajectory, truth, "")
    assert verdict.outcome == "failure"
    (evaluation,) = evaluate_bullets(trajectory, truth, verdict, used)
    assert evaluation.tag == tag, evaluation.reason


MEMORISED = re.compile(r"for tasks like|expected result is|the answer is|正解は", re.IGNORECASE)


@pytest.mark.parametrize(
    ("query", "truth", "report", "action"),
    [
        (SPOTIFY, LIMIT, "", "give the exact figure with its unit"),
        ("東京タワーの高さは？", "333メートル", "", "正確な数値を単位つきで答え"),
        ("When does the rainy season start in Tokyo?", "It starts on 2024-06-07", "", "give the exact date"),
        ("梅雨がみられるのはどの期間？", "5月から7月", "", "正確な日付"),
        (
            "How do I approve all pending Venmo requests?",
            "Call show_venmo_balance, then add_to_venmo_balance, then approve_payment_request for each request",
            "",
            "follow this procedure",
        ),
        ("Who wrote the novel Moby-Dick?", "Herman Melville", "", "give the specific answer"),
        ("日本の首都はどこ？", "東京", "", "具体的な答え"),
        ("Pay the electricity bill", "", "FAILED test_payment: insufficient funds", "check before finishing"),
    ],
    ids=["figure-en", "figure-ja", "date-en", "date-ja", "procedure", "name-en", "name-ja", "report-only"],
)
def test_lessons_are_reusable_strategies_not_memorised_answers(
    query: str, truth: str, report: str, action: str
) -> None:
    trajectory = Trajectory(query=query, generated_answer="The playbook has no guidance that matches this query.")
    verdict = judge(trajectory, truth, report)
    (insight,) = derive_insights(trajectory, truth, verdict, [], [])
    lesson = insight.key_insight
    assert query.rstrip("?？") not in lesson  # named by its topic, not by quoting the question
    assert MEMORISED.search(lesson) is None
    assert action in lesson  # what to do for this kind of task
    assert (truth or "FAILED test_payment") in lesson  # and the fact or check it rests on


def test_a_lesson_warns_about_the_bullet_that_misled() -> None:
    used = [bullet("shr-00001", "A Spotify queue holds at most 500 songs.", section="s")]
    trajectory = failed(SPOTIFY, used)
    verdict = judge(trajectory, LIMIT, "")
    evaluations = evaluate_bullets(trajectory, LIMIT, verdict, used)
    (insight,) = derive_insights(trajectory, LIMIT, verdict, used, evaluations)
    assert "Do not reuse 500 songs from shr-00001" in insight.key_insight
    assert verdict.wrong_figures == [("500 songs", "1000 songs")]
