"""The AlignScore route, called by NeMo Guardrails' own fact-checking code (nemoguardrails 0.24)."""

import asyncio
import re
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from groundsense.inputs.files import load_example
from groundsense.service.app import create_app
from groundsense.service.settings import ServiceSettings

pytest.importorskip("nemoguardrails", reason="install groundsense[nemo]")
from nemoguardrails import RailsConfig  # noqa: E402
from nemoguardrails.http import HttpxHTTPClient  # noqa: E402
from nemoguardrails.library.factchecking.align_score.actions import alignscore_check_facts  # noqa: E402
from nemoguardrails.library.factchecking.align_score.request import alignscore_request  # noqa: E402
from nemoguardrails.llm.taskmanager import LLMTaskManager  # noqa: E402

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"
EXAMPLE = load_example("passages-qa")
EVIDENCE = "\n".join(EXAMPLE["passages"])  # what NeMo sends: its relevant chunks, one per line
SUPPORTED = "The Golden Gate Bridge opened to traffic on May 27, 1937. Its main span is 4,200 feet long."
FIRST = SUPPORTED.split(". ")[0] + "."
HALF = f"{FIRST} The toll is paid in seashells."  # the second sentence is flagged
MOSTLY_INVENTED = f"{HALF} Gustave Eiffel designed it."  # the second and third are


def run(coroutine):
    return asyncio.run(coroutine)


def docs_config(url: str) -> RailsConfig:
    """The config.yml of docs/integrations.md, its endpoint pointed at ``url``."""
    (yaml,) = re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8").split("## NeMo Guardrails")[1], re.S)
    return RailsConfig.from_content(yaml_content=yaml.replace("http://127.0.0.1:8000", url))


@pytest.mark.parametrize(
    "body, message",
    [
        ({"evidence": EVIDENCE}, "no 'claim' field"),
        ({"claim": SUPPORTED}, "no 'evidence' field"),
        ({"evidence": EVIDENCE, "claim": " \u200b"}, "the claim is empty"),
        ({"evidence": " ", "claim": SUPPORTED}, "the evidence is empty"),
        ({"evidence": [EVIDENCE, 7], "claim": SUPPORTED}, "'evidence[1]' must be a string"),
        ({"evidence": EVIDENCE, "claim": SUPPORTED, "model": "large"}, "unknown field 'model'"),
        ([EVIDENCE, SUPPORTED], "must be a JSON object"),
    ],
)
def test_bad_requests_get_the_services_422(body, message):
    client = TestClient(create_app(ServiceSettings()))  # no lifespan: the scorer never loads
    response = client.post("/alignscore_large", json=body)
    assert response.status_code == 422 and message in response.json()["error"]


def test_nemo_reads_a_groundsense_failure_as_no_score():
    """A 503 (or any error) is never a score: NeMo's request returns None, and its rail then
    falls back to the LLM self-check that the documented config turns on."""
    app = create_app(ServiceSettings())
    client = HttpxHTTPClient(httpx.AsyncClient(transport=httpx.ASGITransport(app=app)))
    url = "http://groundsense/alignscore_large"
    assert run(alignscore_request(url, [EVIDENCE], SUPPORTED, http_client=client)) is None
    config = docs_config("http://groundsense")
    assert config.rails.config.fact_checking.fallback_to_self_check is True
    assert config.rails.config.fact_checking.parameters["endpoint"] == url
    assert "alignscore check facts" in config.rails.output.flows


@pytest.mark.slow
def test_nemo_request_function_reads_groundsense_scores(live_server):
    url = live_server.url + "/alignscore_large"
    assert run(alignscore_request(url, EVIDENCE, SUPPORTED)) == 1.0
    assert run(alignscore_request(url, EXAMPLE["passages"], SUPPORTED)) == 1.0  # evidence as passages
    assert run(alignscore_request(url, EVIDENCE, HALF)) == 0.25  # half supported: below NeMo's 0.5
    base = live_server.url + "/alignscore_base"
    assert run(alignscore_request(base, EVIDENCE, MOSTLY_INVENTED)) == pytest.approx(1 / 6)


# docs/integrations.md, "No question": what the route makes of the example and of one-sentence claims.
ONE_SENTENCE_CLAIMS = ["The toll of the Golden Gate Bridge is paid in seashells.",
                       "Gustave Eiffel designed the Golden Gate Bridge.", "The bridge was designed by Gustave Eiffel.",
                       "The Golden Gate Bridge is made of chocolate."]


@pytest.mark.slow
def test_without_the_question_the_example_is_blocked_and_one_sentence_claims_pass(live_server):
    url = live_server.url + "/alignscore_large"
    assert run(alignscore_request(url, EVIDENCE, EXAMPLE["answer"])) == pytest.approx(1 / 3)  # its last sentence
    assert [run(alignscore_request(url, EVIDENCE, claim)) for claim in ONE_SENTENCE_CLAIMS] == [1.0] * 4


@pytest.mark.slow
def test_the_documented_rail_blocks_any_answer_with_an_unsupported_sentence(live_server):
    task_manager = LLMTaskManager(docs_config(live_server.url))

    def check(answer):
        return run(alignscore_check_facts(task_manager, relevant_chunks=EVIDENCE, bot_message=answer))

    supported, half, blocked = check(SUPPORTED), check(HALF), check(MOSTLY_INVENTED)
    assert not supported.is_blocked and supported.metadata == {"accuracy": 1.0}
    assert half.is_blocked and half.metadata == {"accuracy": 0.25}  # NeMo blocks below 0.5
    assert blocked.is_blocked and blocked.metadata == {"accuracy": pytest.approx(1 / 6)}
