"""The Haystack component with the real haystack-ai package and the real default scorer.

Only the pipeline's generator is a stand-in (a component answering the shipped example's answer
as a ``ChatMessage``, as a chat generator does); the groundsense component scores with the real
scorer, loaded by the component itself. The framework is imported by the tests that use it.
"""

import asyncio

import pytest

from groundsense.errors import InputError
from integration_example import INVENTED, SUPPORTED

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
    """A stand-in chat generator, a checker (on the shared default detector), and a router that sends a passing answer on
    and a failing one to review with its feedback."""
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


def test_the_pipeline_saves_and_loads_with_its_detector_options(integration, tmp_path):
    from haystack import Pipeline

    pipeline = Pipeline()
    pipeline.add_component("check", integration.GroundsenseChecker({"mode": "two_pass", "target_recall": 0.6}))
    loaded = Pipeline.loads(pipeline.dumps(), allowed_modules=["groundsense.integrations.haystack"]).get_component("check")
    assert isinstance(loaded, integration.GroundsenseChecker)
    assert loaded.detector_options == {"mode": "two_pass", "target_recall": 0.6}


def test_bad_options_and_inputs_are_refused(integration, checker, example):
    from haystack import Document
    from haystack.dataclasses import ChatMessage

    with pytest.raises(InputError, match="unknown detector option.*modes.*use "):
        integration.GroundsenseChecker({"modes": "full"})
    with pytest.raises(InputError, match="mode must be one of"):
        integration.GroundsenseChecker({"mode": "fast"})
    with pytest.raises(InputError, match="Document with text content"):
        checker.run(replies=[example["answer"]], documents=[Document(content=None)])
    with pytest.raises(InputError, match="ChatMessage with text"):
        checker.run(replies=[ChatMessage.from_assistant(None)], documents=documents(example))
    assert checker.run(replies=[], documents=documents(example))["passing"] is False  # no reply does not pass
