"""README.md stays what a newcomer reads first: short, and its worked examples are exactly what
`groundsense detect --example NAME` prints (at the 110 columns they were copied at)."""

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

README = Path(__file__).resolve().parents[1] / "README.md"
TEXT_BLOCK = re.compile(r"^```text\n(.*?)^```", re.M | re.S)


def worked_examples() -> dict[str, str]:
    """Each ```text block of the README that shows a detect run, by the example the text
    before it names (the last `--example NAME` above the block)."""
    text = README.read_text()
    examples = {}
    for block in TEXT_BLOCK.finditer(text):
        if block.group(1).startswith("scorer "):
            names = re.findall(r"--example ([\w-]+)", text[: block.start()])
            examples[names[-1]] = block.group(1)
    return examples


def test_readme_is_short():
    assert len(README.read_text().splitlines()) <= 250, "README.md is for users: move details to docs/"


def test_contributing_quotes_the_newcomer_times_of_record():
    """CONTRIBUTING's times for the README's two commands are benchmarks/newcomer.json's, the run
    of `python3 benchmarks/newcomer.py` from a fresh clone."""
    record = json.loads((README.parent / "benchmarks" / "newcomer.json").read_text())
    text = " ".join((README.parent / "CONTRIBUTING.md").read_text().split())
    assert set(record["commands"]) == {"make demo", "make test"}
    for name, run in record["commands"].items():
        assert run["exit_code"] == 0, f"the run of record's {name} failed"
        assert f"`{name}` {run['seconds'] / 60:.1f} min" in text, f"CONTRIBUTING must quote {name}'s time of record"
    assert f"at commit {record['commit']}" in text and record["cpu"] in text


def test_the_worked_example_is_the_demo():
    """`make demo` runs the example whose output the README shows."""
    demo = re.search(r"^demo:.*\n\t.*detect --example ([\w-]+)", (README.parent / "Makefile").read_text(), re.M)
    assert demo, "the Makefile's demo target no longer runs `detect --example NAME`"
    assert demo.group(1) in worked_examples(), "the README must show what `make demo` prints"


@pytest.mark.parametrize("name", sorted(worked_examples()))
def test_worked_example_is_what_detect_prints(name, scorer, monkeypatch):
    from groundsense.cli import cli, common
    from groundsense.pipeline.detector import Detector
    from groundsense.scorer import Scorer

    monkeypatch.setattr(common, "make_detection", lambda config: Detector.from_config(
        config, Scorer.from_model(scorer.model, scorer.tokenizer, scorer.name)))
    result = CliRunner().invoke(cli, ["detect", "--example", name], env={"COLUMNS": "110"})
    assert result.exit_code == 0, result.output
    assert result.output == worked_examples()[name], (
        f"README.md's `--example {name}` output is stale: paste what `COLUMNS=110 groundsense detect "
        f"--example {name}` prints")
