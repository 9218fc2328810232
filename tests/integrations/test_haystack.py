"""The Haystack component with the real haystack-ai package and the real default scorer.

Only the pipeline's generator is a stand-in (a component answering the shipped example's answer
as a ``ChatMessage``, as a chat generator does); the groundsense component scores with the real
scorer, loaded by the component itself. The framework is imported by the tests that use it.
"""

import asyncio

import pytest
from helpers.integration_example import INVENTED, SUPPORTED

from groundsense.errors import InputError

pytestmark = pytest.mark.slow


def documents(example):
    from haystack import Document

    return [Document(content=p, meta={"source": f"passage-{i}"}) for i, p in enumerate(example["passages"])]


@pytest.fixture(scope="module")
def checker(integration):
    component = integration.GroundsenseChecker()
    component.warm_up()
    return component


def guarded_pipeline(integration):
    """A stand-in chat generator, a checker (on the shared default detector), and a router that sends a
    passing answer on and a failing one to review with its feedback."""
    from haystack import Pipeline, component
    from haystack.components.routers import ConditionalRouter
    from haystack.dataclasses import ChatMessage

    @component
    class FixedChatGenerator:
        @component.output_types(replies=list[ChatMessage])
        def run(self, answer: str) -> dict:
            return {"replies": [ChatMessage.from_assistant(answer)]}

    routes = [
        {"condition": "{{ passing }}", "output": "{{ grounded_replies }}", "output_name": "answer",
         "output_type": list[str]},
        {"condition": "{{ not passing }}", "output": "{{ reports[0].feedback }}", "output_name": "review",
         "output_type": str},
    ]
    pipeline = Pipeline()
    pipeline.add_component("llm", FixedChatGenerator())
    pipeline.add_component("check", integration.GroundsenseChecker())  # an instance joins one pipeline only
    pipeline.add_component("router", ConditionalRouter(routes=routes))
    pipeline.connect("llm.replies", "check.replies")
    for output in ("passing", "grounded_replies", "reports"):
        pipeline.connect(f"check.{output}", f"router.{output}")
    return pipeline


def test_run_reports_each_reply(checker, example, offline):
    out = checker.run(replies=[example["answer"], SUPPORTED], documents=documents(example), query=example["question"])
    first, second = out["reports"]
    assert [s.text for s in first.unsupported] == [INVENTED] and first.score == pytest.approx(2 / 3)
    assert second.passing is True
    assert out["grounded_replies"] == [SUPPORTED, SUPPORTED]
    assert out["passing"] is False  # one reply fails
    assert offline == []


def test_a_pipeline_routes_on_the_verdict(integration, example):
    pipeline = guarded_pipeline(integration)
    inputs = {"check": {"documents": documents(example), "query": example["question"]}}
    blocked = pipeline.run({**inputs, "llm": {"answer": example["answer"]}})
    assert "answer" not in blocked["router"] and INVENTED in blocked["router"]["review"]
    passed = pipeline.run({**inputs, "llm": {"answer": SUPPORTED}})
    assert passed["router"] == {"answer": [SUPPORTED]}


def test_a_pipeline_run_async(integration, example):
    pipeline = guarded_pipeline(integration)
    out = asyncio.run(pipeline.run_async({"llm": {"answer": example["answer"]},
                                          "check": {"documents": documents(example), "query": example["question"]}}))
    assert INVENTED in out["router"]["review"]


def test_the_pipeline_saves_and_loads_with_its_detector_options(integration, example):
    from haystack import Pipeline

    pipeline = Pipeline()
    pipeline.add_component("check", integration.GroundsenseChecker({"mode": "two_pass", "max_answer_tokens": 24}))
    loaded = Pipeline.loads(pipeline.dumps(), allowed_modules=["groundsense.integrations.haystack"])
    assert loaded.get_component("check").detector_options == {"mode": "two_pass", "max_answer_tokens": 24}
    out = loaded.run({"check": {"replies": [example["answer"]], "documents": documents(example)}})["check"]
    report = out["reports"][0]
    assert report.result.mode == "two_pass"
    assert report.unjudged and out["passing"] is False  # past 24 answer tokens: not judged, so not passing


def test_components_with_the_same_options_share_one_detection(integration, checker):
    other = integration.GroundsenseChecker({"k": 5, "mode": "full"})  # the defaults, spelled out
    other.warm_up()
    other.warm_up()
    assert other._detection is checker._detection


def test_a_chat_message_s_text_parts_are_checked_together(checker, example):
    from haystack.dataclasses import ChatMessage, TextContent

    message = ChatMessage.from_assistant(SUPPORTED)
    message._content.append(TextContent(INVENTED))  # a second text part, as some generators return
    report = checker.run(replies=[message], documents=documents(example), query=example["question"])["reports"][0]
    assert [s.text for s in report.result.sentences][-1] == INVENTED  # the second part is scored too
    assert report.result.sentences[-1].flagged is not None


def test_bad_options_and_inputs_are_refused(integration, checker, example):
    from pathlib import Path

    from haystack import Document
    from haystack.dataclasses import ChatMessage

    for options, message in [
        ({"modes": "full"}, "unknown detector option.*modes.*use "),
        ({"mode": "fast"}, "mode must be one of"),
        ("two_pass", "must be a dict"),
        ({"calibration": Path("c.json")}, "calibration.*plain values"),
        ({"calibration": False}, "needs a calibration"),
    ]:
        with pytest.raises(InputError, match=message):
            integration.GroundsenseChecker(options)
    for replies, docs, message in [
        ([example["answer"]], [Document(content=None)], "Document with text content"),
        ([example["answer"]], [*documents(example), Document(content=" ")], "Document with text content"),
        ([example["answer"]], [], "non-empty list of Documents"),
        ([ChatMessage.from_assistant(None)], documents(example), "ChatMessage with text"),
        (example["answer"], documents(example), "replies must be a list"),
    ]:
        with pytest.raises(InputError, match=message):
            checker.run(replies=replies, documents=docs)
    assert checker.run(replies=[], documents=documents(example))["passing"] is False  # no reply does not pass


@pytest.mark.parametrize(("chosen", "enabled"), [(None, False), ("True", True)])
def test_haystack_telemetry_is_off_unless_the_user_chose(chosen, enabled):
    """Also when haystack is imported before the integration."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "HAYSTACK_TELEMETRY_ENABLED"}
    if chosen is not None:
        env["HAYSTACK_TELEMETRY_ENABLED"] = chosen
    code = ("import haystack, groundsense.integrations.haystack, haystack.telemetry._telemetry as t; "
            "print(t.telemetry is not None)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.stdout.strip() == str(enabled), done.stderr[-2000:]
