"""The DSPy metric with the real dspy package and the real default scorer, offline.

The programs evaluated are stand-ins: a module that returns fixed drafts, and DSPy's own
``DummyLM`` behind a real ``dspy.Predict`` (DSPy's tool for testing without a language model);
the metric scores with the real scorer. The framework is imported by the tests that use it."""

import pytest
from helpers.integration_example import INVENTED, SUPPORTED

from groundsense.errors import InputError

pytestmark = pytest.mark.slow


def drafts_program(example):
    """A program that retrieves the example's passages and returns the draft it is asked for."""
    import dspy

    class Drafts(dspy.Module):
        def forward(self, question, draft):
            return dspy.Prediction(context=example["passages"],
                                   answer={"full": example["answer"], "supported": SUPPORTED}[draft])

    return Drafts()


def devset(example):
    import dspy

    return [dspy.Example(question=example["question"], draft=d).with_inputs("question", "draft")
            for d in ("full", "supported")]


def test_evaluate_scores_each_answer_with_no_llm(integration, detector, example, offline):
    import dspy

    metric = integration.GroundsenseMetric(detection=detector)
    result = dspy.Evaluate(devset=devset(example), metric=metric, num_threads=1, display_progress=False)(
        drafts_program(example))
    assert [score for _, _, score in result.results] == [pytest.approx(2 / 3), 1.0]
    assert result.score == pytest.approx(100 * 5 / 6, abs=0.01)
    assert offline == []


def test_bootstrapping_takes_a_verdict_and_gepa_gets_feedback(integration, detector, example):
    full, supported = devset(example)
    program = drafts_program(example)
    metric = integration.GroundsenseMetric(detection=detector)
    assert metric(full, program(**full.inputs()), trace=[]) is False
    assert metric(supported, program(**supported.inputs()), trace=[]) is True
    feedback = metric(full, program(**full.inputs()), [], "respond", [])  # as GEPA calls it
    assert feedback.score == pytest.approx(2 / 3)
    assert f'Unsupported:\n- [2] "{INVENTED}"' in feedback.feedback


def test_best_of_n_retries_until_the_answer_is_grounded(integration, detector, example):
    import dspy
    from dspy.utils.dummies import DummyLM

    rewards = []

    class Recorded(integration.GroundsenseMetric):
        def __call__(self, *args, **kwargs):
            rewards.append(super().__call__(*args, **kwargs))
            return rewards[-1]

    lm = DummyLM([{"answer": example["answer"]}, {"answer": SUPPORTED}, {"answer": example["answer"]}])
    generate = dspy.Predict("context: list[str], question -> answer")  # the context is the module's input here
    best = dspy.BestOfN(generate, N=3, reward_fn=Recorded(detection=detector), threshold=1.0)
    with dspy.context(lm=lm):
        prediction = best(context=example["passages"], question=example["question"])
    assert prediction.answer == SUPPORTED
    assert rewards == [pytest.approx(2 / 3), 1.0]  # stopped at the first grounded answer


def test_best_of_n_holds_out_past_an_answer_flagged_as_a_whole(integration, answer_rule_detector, example):
    """An answer the answer rule flags, every sentence judged supported, is no reward of 1: BestOfN
    at threshold 1 tries every candidate rather than stop at one that does not pass."""
    import dspy
    from dspy.utils.dummies import DummyLM

    rewards = []

    class Recorded(integration.GroundsenseMetric):
        def __call__(self, *args, **kwargs):
            rewards.append(super().__call__(*args, **kwargs))
            return rewards[-1]

    lm = DummyLM([{"answer": SUPPORTED}] * 3)
    generate = dspy.Predict("context: list[str], question -> answer")
    best = dspy.BestOfN(generate, N=3, reward_fn=Recorded(detection=answer_rule_detector), threshold=1.0)
    with dspy.context(lm=lm):
        best(context=example["passages"], question=example["question"])
    assert rewards == [pytest.approx(2 / 3)] * 3  # two sentences judged supported, the answer flagged


def test_pass_fail_gives_every_caller_the_verdict(integration, detector, example):
    full, supported = devset(example)
    program = drafts_program(example)
    metric = integration.GroundsenseMetric(pass_fail=True, detection=detector)
    assert metric(full, program(**full.inputs())) is False
    assert metric(supported, program(**supported.inputs())) is True
    assert metric(full, program(**full.inputs()), [], "respond", []).score == 0.0


def test_missing_fields_and_bad_inputs_are_refused(integration, detector, example):
    import dspy

    full = devset(example)[0]
    prediction = drafts_program(example)(**full.inputs())
    gold = full.copy(answer=SUPPORTED)  # the example's gold answer is never what gets scored
    with pytest.raises(InputError,
                       match=r"no field 'response' in the prediction \(fields: answer, context\).*answer=\.\.\."):
        integration.GroundsenseMetric(answer="response", detection=detector)(gold, prediction)
    with pytest.raises(InputError, match=r"no field 'answer' in the prediction \(fields: response\)"):
        integration.GroundsenseMetric(detection=detector)(gold, dspy.Prediction(response=SUPPORTED))
    with pytest.raises(InputError, match=r"no field 'passages' in the prediction or the example "
                                         r"\(fields: .*draft.*\).*context=\.\.\."):
        integration.GroundsenseMetric(context="passages", detection=detector)(full, dspy.Prediction(answer=SUPPORTED))
    for bad, message in [
        (dspy.Prediction(answer=[SUPPORTED], context=["x"]), "answer field 'answer' must be text, not list"),
        (dspy.Prediction(answer=SUPPORTED, context=None), "context field 'context' holds no passages"),
        (dspy.Prediction(answer=SUPPORTED, context=[]), "context field 'context' holds no passages"),
        (dspy.Prediction(answer=SUPPORTED, context=dspy.Prediction(passages=["x"])),  # a retriever's result
         r"evidence is a mapping \('passages'…\), whose keys are no passages"),
        (dspy.Prediction(answer=SUPPORTED, context=["x"], question=3),
         "question field 'question' must be text, not int"),
        ("the answer is here", "must be a dspy.Example, dspy.Prediction or dict, not str"),
    ]:
        with pytest.raises(InputError, match=message):
            integration.GroundsenseMetric(detection=detector)(full, bad)
