"""`eval verify`: the judge (real default scorer) over tiny cases into the verifier cache."""

import dataclasses
import json

import numpy as np
import pytest
from click.testing import CliRunner

from groundsense.cli import cli
from groundsense.verification import VerifierScores, verifier_class
from groundsense_eval.caches.store import read_parts
from groundsense_eval.caches.verifier_scores import load_verifier_cache
from groundsense_eval.caches.verify import verifier_rows, verify
from groundsense_eval.data.cases import Case, LabelledSentence

PASSAGES = ["The Colosseum is in Rome. It could hold about 50,000 spectators.", "Bananas are yellow when ripe."]
ANSWER = "The Colosseum is in Rome. It was built by Napoleon."
SENTENCES = [LabelledSentence(0, 25, False), LabelledSentence(26, len(ANSWER), True, "baseless")]


def case(case_id: str, passages=PASSAGES) -> Case:
    return Case(case_id, "ragtruth:src", "QA", "Where is the Colosseum?", None, passages, ANSWER, SENTENCES,
                "ragtruth", "test")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, scorer):
    """One case and a broken one, then a rerun with a second case added."""
    cache = tmp_path_factory.mktemp("verifiers")
    judge = verifier_class("judge")(scorer)  # the judge: judge:<the scorer>
    broken = case("ragtruth:blank", passages=["  "])
    first = verify(judge, [case("ragtruth:1"), broken], cache, progress=False)
    before = read_parts(first.folder)
    second = verify(judge, [broken, case("ragtruth:1"), case("ragtruth:2")], cache, progress=False)
    return cache, judge, first, before, second


def test_rows_follow_the_cache_interface(runs):
    _, judge, first, rows, _ = runs
    scored = rows[rows["case_id"] == "ragtruth:1"]
    assert scored["sentence_index"].tolist() == [0, 1] and scored["label"].tolist() == [0, 1]
    assert scored["type"].tolist()[1] == "baseless" and (scored["status"] == "scored").all()
    assert scored["score"].between(0, 1).all()
    np.testing.assert_allclose(scored["score"], 1 - scored["p_supported"])
    assert (scored["seconds"] > 0).all() and (scored["gflops"] > 0).all() and scored["support_chunk"].isna().all()
    assert str(rows["sentence_index"].dtype) == "Int32" and str(rows["support_chunk"].dtype) == "Int32"
    config = json.loads((first.folder / "config.json").read_text())
    assert config == {"verifier": "judge", "model": "smollm2-135m-instruct",
                      "params": {"k": 5, "max_context_tokens": 1800},
                      "version": 1, "n_parameters": judge.n_parameters}
    assert first.folder.parent.name == "ragtruth" and first.folder.name.startswith("judge-smollm2-135m-instruct__")


def test_failed_case_is_an_error_row(runs):
    _, _, first, rows, _ = runs
    assert (first.written, first.errors) == (2, 1)
    error = rows[rows["status"] == "error"]
    assert error["case_id"].tolist() == ["ragtruth:blank"] and "evidence is empty" in error["error"].iloc[0]


def test_rerun_resumes_and_loads(runs):
    cache, _, _, before, second = runs
    assert (second.skipped, second.written, second.errors) == (2, 1, 0)
    [(key, rows)] = load_verifier_cache(cache, "ragtruth").items()
    assert key == second.folder.name and rows.attrs["config"]["verifier"] == "judge"
    assert set(rows["case_id"]) == {"ragtruth:blank", "ragtruth:1", "ragtruth:2"}
    again = rows[rows["case_id"] == "ragtruth:2"]["score"].to_numpy()
    np.testing.assert_allclose(again, before[before["case_id"] == "ragtruth:1"]["score"].to_numpy(), atol=1e-4)
    assert load_verifier_cache(cache, "tofueval") == {}


def test_seconds_are_shared_by_gflops():
    scores = VerifierScores(score=np.array([0.2, np.nan]), gflops=np.array([1.0, 3.0]),
                            extra={"passes": np.array([2, 2])})
    rows = verifier_rows(dataclasses.replace(case("ragtruth:1")), scores, seconds=2.0)
    assert [r["seconds"] for r in rows] == [0.5, 1.5] and [r["status"] for r in rows] == ["scored", "unscored"]
    assert rows[0]["passes"] == 2


@pytest.mark.parametrize("args, message", [
    (["--verifier", "selfcheck:x"], "unknown verifier"),
    (["--verifier", "nli:./no/such/model"], "no model directory"),
    (["--verifier", "judge:smollm2-135m-instruct", "-o", "k"], "use NAME=VALUE"),
])
def test_cli_refuses_bad_verifiers(args, message):
    result = CliRunner().invoke(cli, ["eval", "verify", "ragtruth", *args])
    assert result.exit_code == 2 and message in result.output


def test_an_unknown_verifier_is_answered_with_what_eval_verify_takes():
    result = CliRunner().invoke(cli, ["eval", "verify", "ragtruth", "--verifier", "foo:bar"])
    assert result.exit_code == 2 and "trained:<file>" in result.output and "-o url=" in result.output
    assert "--verifier-url" not in result.output  # detect's and serve's option, which eval verify has not


def test_a_kind_an_installed_package_adds_is_taken_and_listed(tmp_path, monkeypatch):
    from helpers.plugin_verifier import install

    install(tmp_path, monkeypatch)  # docs/verifiers.md's "words" kind
    unknown = CliRunner().invoke(cli, ["eval", "verify", "ragtruth", "--verifier", "foo:bar"])
    assert unknown.exit_code == 2 and "words:<model> (from my_package.verifier:WordsVerifier)" in unknown.output
    wrong_option = CliRunner().invoke(cli, ["eval", "verify", "ragtruth", "--verifier", "words:plain", "-o", "x=1"])
    assert wrong_option.exit_code == 2 and "words has no option 'x'" in wrong_option.output  # past the kind check
