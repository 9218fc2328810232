"""The Pydantic AI output validator with the real pydantic-ai package and the real default scorer, offline.

Only the agent's model is a stand-in: Pydantic AI's own ``FunctionModel``, playing a script of
responses (call the retrieval tool, answer with the invented sentence, answer without it) and
recording what it is sent. The agent, its retrieval tool and retry loop, and groundsense's
detection are real. The framework is imported by the tests that use it, not at collection."""

import pytest
from helpers.integration_example import INVENTED, SUPPORTED

from groundsense.errors import InputError


def scripted_model(*responses):
    """A ``FunctionModel`` answering each request with the next response (a text, a tool call
    part, or a list of tool call parts), and the list of the last message it was sent each time
    (its parts)."""
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import FunctionModel

    sent = []

    def respond(messages, info):
        sent.append(messages[-1].parts)
        response = responses[len(sent) - 1]
        parts = (response if isinstance(response, list)
                 else [TextPart(response) if isinstance(response, str) else response])
        return ModelResponse(parts=parts)

    return FunctionModel(respond), sent


def call_retrieve(call_id="call-1"):
    from pydantic_ai.messages import ToolCallPart

    return ToolCallPart("retrieve", {"query": "Golden Gate Bridge opening and span"}, tool_call_id=call_id)


def rag_agent(model, example, validator, **options):
    """An agent whose tool ``retrieve`` returns the example's passages, guarded by ``validator``."""
    from pydantic_ai import Agent

    def retrieve(query: str) -> list[str]:
        """Search the knowledge base for passages about the query."""
        return example["passages"]

    agent = Agent(model, tools=[retrieve], **options)
    agent.output_validator(validator)
    return agent


@pytest.mark.slow
def test_the_agent_retries_until_its_answer_is_grounded(integration, detector, example, offline, monkeypatch):
    """The model retrieves the same passages twice: each counts once, or every passage's
    leave-one-out drop would vanish behind its copy (the real detection runs; what it is
    given is recorded)."""
    given, detect = [], detector.detect
    monkeypatch.setattr(detector, "detect",
                        lambda **arguments: (given.append(arguments["passages"]), detect(**arguments))[1])
    model, sent = scripted_model([call_retrieve("call-1"), call_retrieve("call-2")], example["answer"], SUPPORTED)
    agent = rag_agent(model, example, integration.GroundsenseOutputValidator(detection=detector))

    result = agent.run_sync(example["question"])
    assert given == [example["passages"]] * 2  # the answer, then its revision, against the passages once each
    assert result.output == SUPPORTED
    assert len(sent) == 3  # the tool call, the answer with the invented sentence, the revised one
    retry_prompt = sent[2][0].content
    assert integration.REVISE in retry_prompt and f'Unsupported:\n- [2] "{INVENTED}"' in retry_prompt
    assert "opened to traffic" not in retry_prompt  # only the unsupported sentence is named
    assert offline == []


@pytest.mark.slow
def test_the_evidence_function_reads_the_run_deps(integration, detector, example):
    model, sent = scripted_model(SUPPORTED)
    validator = integration.GroundsenseOutputValidator(evidence=lambda ctx: ctx.deps["documents"], detection=detector)
    agent = rag_agent(model, example, validator, deps_type=dict)

    documents = [{"text": passage} for passage in example["passages"]]  # retrieved by the application
    result = agent.run_sync(example["question"], deps={"documents": documents})
    assert result.output == SUPPORTED and len(sent) == 1  # no tool was called, and no retry was needed


def earlier_run(example):
    """A message history in which an earlier run retrieved the passages and answered."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolReturnPart, UserPromptPart

    return [
        ModelRequest(parts=[UserPromptPart(example["question"])], run_id="earlier"),
        ModelResponse(parts=[call_retrieve()], run_id="earlier"),
        ModelRequest(parts=[ToolReturnPart("retrieve", example["passages"], tool_call_id="call-1")], run_id="earlier"),
        ModelResponse(parts=[TextPart(SUPPORTED)], run_id="earlier"),
    ]


@pytest.mark.parametrize("history", [None, earlier_run], ids=["no history", "an earlier run retrieved"])
def test_an_answer_without_retrieval_in_its_run_is_sent_back_to_retrieve(integration, example, history):
    from pydantic_ai.exceptions import UnexpectedModelBehavior

    model, sent = scripted_model(SUPPORTED, SUPPORTED)  # answers twice without calling the tool
    agent = rag_agent(model, example, integration.GroundsenseOutputValidator())
    with pytest.raises(UnexpectedModelBehavior, match="output"):  # the output retry (one by default) is spent
        agent.run_sync("And how long is the main span?", message_history=history and history(example))
    assert len(sent) == 2 and integration.RETRIEVE_FIRST in sent[1][0].content


@pytest.mark.parametrize("deps", [None, [], ["  "]])
def test_an_evidence_function_with_no_passages_stops_the_run(integration, example, deps):
    model, sent = scripted_model(SUPPORTED)
    agent = rag_agent(model, example, integration.GroundsenseOutputValidator(evidence=lambda ctx: ctx.deps),
                      deps_type=list)
    with pytest.raises(InputError, match="the evidence function returned no passage with text"):
        agent.run_sync(example["question"], deps=deps)
    assert len(sent) == 1  # not sent back to the model, which cannot change the application's evidence


def test_a_tool_return_that_is_no_passage_stops_the_run_naming_evidence(integration, example):
    from pydantic_ai import Agent
    from pydantic_ai.messages import ToolCallPart

    model, sent = scripted_model(ToolCallPart("weather", {"city": "San Francisco"}), SUPPORTED)
    agent = Agent(model)
    agent.output_validator(integration.GroundsenseOutputValidator())

    @agent.tool_plain
    def weather(city: str) -> dict:
        """The weather in a city."""
        return {"city": city, "fog": True}

    with pytest.raises(InputError, match=r"passage's text from a dict.*GroundsenseOutputValidator\(evidence="):
        agent.run_sync(example["question"])


def test_an_empty_answer_is_sent_back_to_the_model(integration, example):
    from pydantic_ai.exceptions import UnexpectedModelBehavior

    model, sent = scripted_model(" ", "\n")
    agent = rag_agent(model, example, integration.GroundsenseOutputValidator())
    with pytest.raises(UnexpectedModelBehavior, match="output"):
        agent.run_sync(example["question"])
    assert len(sent) == 2 and integration.EMPTY in sent[1][0].content
