"""The one model-call helper (`ask_model`): what every agent gets from it.

Invented ids re-asked then dropped and logged; placeholder echoes re-asked then the reply refused and the
fallback recorded; every request and reply on the request's usage meter, failures included; a fresh meter
per request. The re-ask and grounding rules run against an in-process scripted model (`scripted_llm`);
token accounting and provider failures go through the real `ChatOpenAI` client to the loopback fake.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
import structlog

from graphs.context import AgentContext
from graphs.llm.ask import Prompt, ask_model
from graphs.llm.errors import ModelFailure
from graphs.llm.grounding import KnownIds
from tests.fakes.chat_model import ScriptedFactory
from tests.fakes.fixtures import ChatModelFactory, fake_openai_config
from tests.fakes.llm_server import FakeLLMServer, Reply, request_text
from tests.support.context import make_context

pytestmark = pytest.mark.llm

TEMPLATE = """Pick the items that answer {question}.
Items:
{items}
Reply with JSON only:
{{"picked": [{{"id": "i1", "why": "one short reason for picking it"}}], "note": "what the picked items leave open"}}
Rules: use only ids listed above and never invent an item that was not listed."""


class Pick(msgspec.Struct):
    id: str
    why: str


class Reply_(msgspec.Struct):
    picked: list[Pick]
    note: str = ""


def reply(*picks: tuple[str, str], note: str = "nothing open") -> str:
    return json.dumps({"picked": [{"id": i, "why": w} for i, w in picks], "note": note})


def _http_context(llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory, **overrides: object) -> AgentContext:
    """A request context whose model is the real `ChatOpenAI` client aimed at the loopback fake."""
    cfg = fake_openai_config(llm_server, **overrides)
    return make_context(llm=chat_model_factory(cfg), llm_config=cfg).for_request(timeout_s=10)


PROMPT = Prompt(TEMPLATE, {"question": "the tower's height", "items": "[i1] 333 m\n[i2] 634 m"})
KNOWN = [KnownIds("picked", {"i1", "i2"}, "one of the listed ids", key="id")]


async def test_invented_ids_are_reasked_then_dropped_and_logged(scripted_llm: ScriptedFactory) -> None:
    invented = reply(("i1", "333 m"), ("i9", "made up"))
    context, model = scripted_llm(invented, invented)
    with structlog.testing.capture_logs() as logs:
        answer = await ask_model(context, PROMPT, Reply_, agent="test", ids=KNOWN, fallback="the rules")
    assert answer.value is not None
    assert [p.id for p in answer.value.picked] == ["i1"]
    assert "$.picked[1].id: 'i9' is not one of the listed ids" in model.prompt_text(1)
    (dropped,) = [e for e in logs if e["event"] == "dropped ids the model invented"]
    assert (dropped["agent"], dropped["dropped"]) == ("test", ["i9"])
    assert context.usage.fallback is False  # an answer without the invented item is still the model's


async def test_a_placeholder_echo_is_reasked_then_refused_and_the_fallback_recorded(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory
) -> None:
    context = _http_context(llm_server, chat_model_factory)
    echo = reply(("i1", "one short reason for picking it"), note="what the picked items leave open")
    llm_server.script(Reply(content=echo, usage=(100, 20)), Reply(content=echo, usage=(120, 20)))
    with structlog.testing.capture_logs() as logs:
        answer = await ask_model(context, PROMPT, Reply_, agent="test", ids=KNOWN, fallback="the rules")
    assert answer.value is None
    assert answer.attempts == 2
    reask = request_text(llm_server.chat_requests[1])
    assert "$.picked[0].why: 'one short reason for picking it' repeats the prompt's example" in reask
    assert "$.note:" in reask
    assert answer.reasons[0].startswith("$.picked[0].why")
    usage = context.usage
    assert (usage.engine, usage.model, usage.fallback) == ("heuristic", "gpt-fake", True)
    assert (usage.llm_calls, usage.input_tokens, usage.output_tokens) == (2, 220, 40)
    assert usage.fallback_reason is not None
    assert usage.fallback_reason.startswith("test: unusable model output")
    (warning,) = [e for e in logs if e["event"] == "embedded rules replaced the model's output"]
    assert (warning["agent"], warning["attempts"], warning["log_level"]) == ("test", 2, "warning")


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("Use only ids listed above and never invent an item that was not listed.", id="instruction"),
        pytest.param("never invent an item that was not listed", id="piece-of-an-instruction"),
        pytest.param("ONE short reason   for picking it.", id="placeholder-respaced"),
    ],
)
async def test_copied_instructions_count_as_echoes(scripted_llm: ScriptedFactory, text: str) -> None:
    context, model = scripted_llm(reply(("i1", text)), reply(("i1", "333 m is the height")))
    answer = await ask_model(context, PROMPT, Reply_, agent="test", ids=KNOWN)
    assert answer.value is not None
    assert answer.value.picked[0].why == "333 m is the height"
    assert "repeats the prompt's example" in model.prompt_text(1)


async def test_short_placeholders_only_match_whole_strings(scripted_llm: ScriptedFactory) -> None:
    prompt = Prompt('Answer as {{"why": "one line"}}. Question: {q}', {"q": "x"})

    class Why(msgspec.Struct):
        why: str

    context, model = scripted_llm('{"why": "one line of the report states 333 m"}')
    answer = await ask_model(context, prompt, Why, agent="test")
    assert answer.value == Why(why="one line of the report states 333 m")
    assert len(model.prompts) == 1


async def test_the_placeholders_come_from_the_prompt_file(tmp_path: Path, scripted_llm: ScriptedFactory) -> None:
    (tmp_path / "mine.txt").write_text('# a test prompt\nReply as {{"why": "a brand-new placeholder"}}\n')
    prompt = Prompt.named("mine", tmp_path)

    class Why(msgspec.Struct):
        why: str

    context, model = scripted_llm('{"why": "a brand-new placeholder"}', '{"why": "a real reason"}')
    answer = await ask_model(context, prompt, Why, agent="test")
    assert answer.value == Why(why="a real reason")
    assert len(model.prompts) == 2


async def test_a_persistent_check_problem_makes_the_reply_unusable(scripted_llm: ScriptedFactory) -> None:
    context, _ = scripted_llm(reply(("i1", "333 m"), note=""), reply(("i1", "333 m"), note=""))

    def needs_note(value: Reply_) -> list[str]:
        return [] if value.note else ["$.note: say what is left open"]

    answer = await ask_model(context, PROMPT, Reply_, agent="test", check=needs_note)
    assert answer.value is None
    assert answer.reasons == ["$.note: say what is left open"]
    assert context.usage.fallback is False  # no `fallback` named: the caller decides what stands in


async def test_a_provider_failure_raises_with_the_calls_it_made_on_the_meter(
    llm_server: FakeLLMServer, chat_model_factory: ChatModelFactory
) -> None:
    context = _http_context(llm_server, chat_model_factory, max_retries=2)
    llm_server.default_reply = Reply(status=500, content="down", headers={"Retry-After": "0"})
    with pytest.raises(ModelFailure) as caught:
        await ask_model(context, PROMPT, Reply_, agent="test")
    assert caught.value.attempts == 3
    assert (context.usage.llm_calls, context.usage.total_tokens, context.usage.engine) == (3, 0, "openai")


def test_every_request_gets_its_own_meter() -> None:
    base = make_context()
    first, second = base.for_request(timeout_s=1), base.for_request(timeout_s=1)
    assert first.meter is not second.meter
    assert first.meter is not base.meter
    first.meter.fell_back(agent="test", reason="r")
    assert (first.usage.fallback, second.usage.fallback, base.usage.fallback) == (True, False, False)
