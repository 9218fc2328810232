"""README.md stays what a newcomer reads first: short, and its worked examples are what
`groundsense detect --example NAME` prints (at the 110 columns they were copied at): the same text,
each decimal number within one unit of its last printed digit, since fp32 differs between CPUs in its last
bits and the fused score, a rank among reference scores, moves by a step where a feature lies
that close to a reference."""

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

README = Path(__file__).resolve().parents[1] / "README.md"
TEXT_BLOCK = re.compile(r"^```text\n(.*?)^```", re.M | re.S)
DECIMAL = re.compile(r"[+-]?\d+\.(\d+)")


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
    """CONTRIBUTING's times for the README's two commands are the records of `python3
    benchmarks/newcomer.py` from a fresh clone, one for each kind of CPU it ran on."""
    records = sorted((README.parent / "benchmarks").glob("newcomer*.json"))
    assert records, "no record of benchmarks/newcomer.py: run it"
    text = " ".join((README.parent / "CONTRIBUTING.md").read_text().split())
    for path in records:
        record = json.loads(path.read_text())
        assert {"make demo", "make test"} <= set(record["commands"]), path.name
        for name, run in record["commands"].items():
            assert run["exit_code"] == 0, f"{path.name}: the run of record's {name} failed"
            assert f"`{name}` {run['seconds'] / 60:.1f} min" in text, f"CONTRIBUTING must quote {path.name}'s {name}"
        assert f"at commit {record['commit']}" in text and record["cpu"] in text and path.name in text


def test_the_worked_example_is_the_demo():
    """`make demo` runs the example whose output the README shows."""
    demo = re.search(r"^demo:.*\n\t.*detect --example ([\w-]+)", (README.parent / "Makefile").read_text(), re.M)
    assert demo, "the Makefile's demo target no longer runs `detect --example NAME`"
    assert demo.group(1) in worked_examples(), "the README must show what `make demo` prints"


@pytest.mark.numeric  # printed numbers: the fallback SIMD pass checks them on another rounding too
@pytest.mark.parametrize("name", sorted(worked_examples()))
def test_worked_example_is_what_detect_prints(name, scorer, monkeypatch):
    from rich.console import Console

    from groundsense.cli import cli, common, render
    from groundsense.pipeline.detector import Detector
    from groundsense.scorer import Scorer

    monkeypatch.setattr(common, "make_detection", lambda config: Detector.from_config(
        config, Scorer.from_model(scorer.model, scorer.tokenizer, scorer.name)))
    # as a terminal of 110 columns shows it, wrapped (piped, the view prints each line whole)
    monkeypatch.setattr(render, "terminal", lambda: Console(width=110, color_system=None))
    result = CliRunner().invoke(cli, ["detect", "--example", name])
    assert result.exit_code == 0, result.output
    assert prints_alike(result.output, worked_examples()[name]), (
        f"README.md's `--example {name}` output is stale: paste what `groundsense detect --example {name}` "
        f"shows in a terminal 110 columns wide:\n{result.output}")


def prints_alike(printed: str, shown: str) -> bool:
    """The same text around the decimal numbers (integers are text), each of ``printed``'s within
    one unit of the last digit of ``shown``'s."""
    if DECIMAL.split(printed)[::2] != DECIMAL.split(shown)[::2]:
        return False
    pairs = list(zip(DECIMAL.finditer(printed), DECIMAL.finditer(shown), strict=True))
    return all(len(p.group(1)) == len(s.group(1))
               and abs(float(p.group()) - float(s.group())) <= 1.5 * 10 ** -len(s.group(1)) for p, s in pairs)


def test_a_worked_example_allows_a_last_digit_apart_and_nothing_else():
    shown = "verdict  gap +0.301  score  +0.123  The Golden Gate"
    assert prints_alike(shown.replace("+0.123", "+0.122"), shown)
    assert not prints_alike(shown.replace("+0.123", "+0.121"), shown)
    assert not prints_alike(shown.replace("+0.123", "+0.1230"), shown)
    assert not prints_alike(shown.replace("Golden", "Silver"), shown)
