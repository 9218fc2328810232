"""The calibration home's one file format: each kind begins with the same header, the reader
refuses another kind or a later version with what to do, and a file from before the header
still reads."""

import json

import pytest

from groundsense.calibration import Calibration, LexicalFusions, RankFusion, shipped_calibration, shipped_fusion
from groundsense.calibration.files import CALIBRATION, FUSION, LEXICAL_FUSIONS, VERSION, file_kind, json_text
from groundsense.errors import InputError

SCORER = "smollm2-135m-instruct"


def shipped(kind):
    """A shipped object of each kind, with its class."""
    if kind == CALIBRATION:
        return shipped_calibration(SCORER, 5), Calibration
    if kind == FUSION:
        return shipped_fusion("judge:qwen2.5-coder-1.5b-instruct"), RankFusion
    return LexicalFusions.shipped(SCORER, "fp32"), LexicalFusions


def saved(kind, path):
    """A shipped object of ``kind`` saved at ``path``: the object, its class and the file's JSON."""
    made, cls = shipped(kind)
    made.save(path)
    return made, cls, json.loads(path.read_text())


@pytest.mark.parametrize("kind", [CALIBRATION, FUSION, LEXICAL_FUSIONS])
def test_each_kind_begins_with_its_header_and_reads_back_as_does_a_file_from_before_it(kind, tmp_path):
    path = tmp_path / "file.json"
    made, cls, data = saved(kind, path)
    assert list(data)[:2] == ["kind", "version"] and (data["kind"], data["version"]) == (kind, VERSION)
    assert file_kind(path) == kind and cls.load(path) == made
    del data["kind"], data["version"]  # as written before the header: told apart by its fields
    path.write_text(json.dumps(data))
    assert file_kind(path) == kind and cls.load(path) == made


@pytest.mark.parametrize("kind", [CALIBRATION, FUSION, LEXICAL_FUSIONS])
def test_a_later_or_unreadable_version_is_refused_with_what_to_do(kind, tmp_path):
    path = tmp_path / "file.json"
    _, cls, data = saved(kind, path)
    path.write_text(json.dumps({**data, "version": VERSION + 1}))
    with pytest.raises(InputError, match=f"version {VERSION + 1} of the file format.*upgrade groundsense"):
        cls.load(path)
    for version in (0, "1", True, None):
        path.write_text(json.dumps({**data, "version": version}))
        with pytest.raises(InputError, match="its 'version' must be a whole number from 1"):
            cls.load(path)


def test_an_unknown_kind_is_refused_naming_the_kinds_known(tmp_path):
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"kind": "thresholds", "version": 1}))
    for cls in (Calibration, RankFusion, LexicalFusions):
        with pytest.raises(InputError, match="is 'thresholds', not .*knows the kinds 'calibration', 'fusion', "
                                             "'lexical fusions'"):
            cls.load(path)
    path.write_text(json.dumps({"kind": ["calibration"], "version": 1}))
    with pytest.raises(InputError, match=r"its 'kind' must be one of 'calibration', 'fusion', 'lexical fusions', "
                                         r"not \['calibration'\]"):
        Calibration.load(path)


def test_fields_of_no_kind_are_left_to_the_kinds_own_checks(tmp_path):
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"scorer": SCORER}))
    assert file_kind(path) is None
    with pytest.raises(InputError, match="cannot read calibration file .*'stats'"):
        Calibration.load(path)
    with pytest.raises(InputError, match="cannot read fusion file .*needs a 'full' and a 'two_pass' fusion"):
        LexicalFusions.load(path)


def test_json_text_puts_each_value_of_a_named_mapping_on_one_line_at_any_depth():
    data = {"kind": "x", "full": {"references": {"a": [1, 2], "b": [3]}, "n": 1}, "curves": {"s": [[0.5, 1]]}}
    text = json_text(data, "references", "curves")
    assert '"a": [1,2]' in text and '"b": [3]' in text and '"s": [[0.5,1]]' in text
    assert json.loads(text) == data
