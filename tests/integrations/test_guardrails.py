"""The Guardrails AI validator with the real guardrails-ai package and the real default scorer.

The framework is imported by the tests that use it (``integration``), not at collection."""

import pytest
from helpers.integration_example import INVENTED, SUPPORTED

pytestmark = pytest.mark.slow


def run(guard, example, answer=None):
    metadata = {"sources": example["passages"], "question": example["question"]}
    return guard.validate(answer or example["answer"], metadata=metadata)


def test_registered_under_its_name(integration):
    from guardrails.validator_base import validators_registry

    assert validators_registry["groundsense/grounded"] is integration.Grounded


def test_the_invented_sentence_is_an_error_span_and_the_fix_drops_it(integration, detector, example, offline):
    outcome = run(integration.grounded_guard(detector, on_fail="fix"), example)

    assert outcome.validated_output == SUPPORTED
    [summary] = outcome.validation_summaries
    assert summary.validator_status == "fail"
    [span] = summary.error_spans
    assert example["answer"][span.start : span.end] == INVENTED
    assert "not supported by the evidence" in span.reason
    assert offline == []


def test_exception_is_raised_naming_the_sentence(integration, detector, example, offline):
    from guardrails.errors import ValidationError

    with pytest.raises(ValidationError, match="Gustave Eiffel"):
        run(integration.grounded_guard(detector, on_fail="exception"), example)
    assert offline == []


@pytest.mark.parametrize("on_fail, output", [("noop", "answer"), ("filter", None), ("refrain", None)])
def test_other_on_fail_actions(integration, detector, example, on_fail, output):
    outcome = run(integration.grounded_guard(detector, on_fail=on_fail), example)

    assert outcome.validation_passed is False
    assert outcome.validated_output == (example["answer"] if output == "answer" else None)


def test_a_supported_answer_passes(integration, detector, example, offline):
    outcome = run(integration.grounded_guard(detector), example, answer=SUPPORTED)

    assert outcome.validation_passed is True and outcome.validated_output == SUPPORTED
    assert offline == []


def test_validator_on_its_own(integration, detector, example):
    """As a Guardrails validator's own API: validate() with metadata, and the FailResult."""
    from guardrails.validator_base import FailResult, PassResult

    validator = integration.Grounded(detection=detector, on_fail="fix")
    metadata = {"sources": example["passages"], "question": example["question"]}
    result = validator.validate(example["answer"], metadata)

    assert isinstance(result, FailResult) and result.fix_value == SUPPORTED
    assert INVENTED in result.error_message
    assert isinstance(validator.validate(SUPPORTED, metadata), PassResult)
    with pytest.raises(ValueError, match="sources"):
        validator.validate(SUPPORTED, {})


def test_hub_metrics_stay_off_without_a_guardrailsrc(integration, detector, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    guard = integration.grounded_guard(detector)
    assert guard._allow_metrics_collection is False and guard._hub_telemetry._enabled is False
