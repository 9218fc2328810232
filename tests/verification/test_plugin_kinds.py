"""Verifier kinds from other distributions (the ``groundsense.verifiers`` entry point): the one
docs/verifiers.md shows, installed as written, runs wherever a built-in kind does
(``make_verifier``, ``--verifier KIND:MODEL``, the cascade), and one that is broken is refused by
name, before any model loads."""

import json

import pytest
from helpers.plugin_verifier import install

from groundsense import DetectorConfig
from groundsense.errors import InputError
from groundsense.verification import make_detection, make_verifier, prepare_detection, verifier_class
from groundsense.verification.kinds import parse_options


def test_an_installed_kind_is_made_by_its_spec_with_its_options(tmp_path, monkeypatch):
    install(tmp_path, monkeypatch)
    verifier = make_verifier("words:plain", {"min_length": "4"})
    assert type(verifier).__module__ == "my_package.verifier" and verifier.params == {"min_length": 4}
    assert verifier.name == "words:plain"  # what a cascade reports
    assert verifier.score_sentences("", ["The span is long."], ["The span is long.", "Painted gold."]) == [0.0, 1.0]


@pytest.mark.parametrize("cli_scorer", ["tiny"], indirect=True)  # what the verifier decides, not the scores
def test_detect_runs_a_cascade_to_an_installed_kind(tmp_path, monkeypatch, invoke_cli):
    install(tmp_path, monkeypatch)
    out = invoke_cli(["detect", "--example", "passages-qa", "--verifier", "words:plain", "--escalate", "1", "--json"])
    assert out.exit_code == 0, out.output
    record = json.loads(out.output)
    assert record["cascade"]["verifier"] == "words:plain"
    assert all(sentence["flagged"] is (sentence["verifier_score"] >= 0.5) for sentence in record["sentences"])


def test_an_unknown_kind_names_the_installed_ones(tmp_path, monkeypatch):
    install(tmp_path, monkeypatch)
    listed = r"unknown verifier 'oracle:x': use judge:.*, words:<model> \(from my_package.verifier:WordsVerifier\)"
    with pytest.raises(InputError, match=listed):
        make_verifier("oracle:x")


@pytest.mark.parametrize(("value", "message"), [
    ("my_package.no_such_module:WordsVerifier", r"'words' \(my_package.no_such_module:WordsVerifier\) fails to "
                                                r"import \(ModuleNotFoundError"),
    ("my_package.verifier:SentenceInput", "is not a groundsense.verification.ModelVerifier subclass"),
])
def test_a_broken_entry_point_is_refused_by_name_before_any_model_loads(tmp_path, monkeypatch, value, message):
    install(tmp_path, monkeypatch, {"words": value})
    with pytest.raises(InputError, match=message):
        prepare_detection(DetectorConfig(verifier="words:plain"))


def test_a_kind_must_be_its_entry_points_name_and_cannot_take_a_built_in_ones(tmp_path, monkeypatch):
    install(tmp_path, monkeypatch, {"lexical": "my_package.verifier:WordsVerifier",
                                    "judge": "my_package.verifier:WordsVerifier"})
    with pytest.raises(InputError, match="is a verifier of kind 'words': its class's kind must be the entry point's"):
        make_detection(DetectorConfig(verifier="lexical:plain"))
    assert verifier_class("judge").__name__ == "JudgeVerifier"  # a built-in kind keeps its name


def test_a_bool_option_reads_false_as_false(tmp_path, monkeypatch):
    """A verifier of one's own may declare a bool option; bool("false") is True, so -o NAME=false must be read."""
    install(tmp_path, monkeypatch)
    cls = verifier_class("words")
    monkeypatch.setattr(cls, "options", {**cls.options, "stem": bool})
    for value, read in (("false", False), ("True", True), ("0", False), ("yes", True)):
        assert parse_options(cls, {"stem": value}) == {"stem": read}
    with pytest.raises(InputError, match=r"option stem='maybe': expected true or false"):
        parse_options(cls, {"stem": "maybe"})
