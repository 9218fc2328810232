"""The committed reports under docs/results/, and the shipped calibration and fusion, equal what their
commands render today from the committed caches (results/), so a change to the analysis code or a
cache cannot leave them stale.

Each report is re-rendered in full by the command that made it (`groundsense eval report` as
docs/results.md lists it; `groundsense eval compare` as each compare report's header says),
with the same 2,000 resamples: a cheaper render would not be the committed report. Markdown must
match exactly, JSON to 1e-9 relative (the last bits of a float may differ across BLAS builds).
Figures are drawn but not laid out or saved (a fifth of the time; PNG bytes depend on the
matplotlib build, so they are not compared). Every render here together takes about 90 s on a
worker of `make test` (``-m 'not slow'`` skips every check here).
"""

import json
import math
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundsense.cli import cli
from groundsense_eval.reports import figures
from groundsense_eval.reports.figures import plt

ROOT = Path(__file__).resolve().parents[3]
REPORTS = {"docs/results": "results/features", "docs/results/split": "results/split-features"}
COMPARISONS = ["docs/results/compare-qwen.md", "docs/results/compare-masked.md", "docs/results/compare-qwen-1.5b.md",
               "docs/results/compare-qwen-0.5b-1.5b.md", "docs/results/compare-bf16.md",
               "docs/results/compare-bf16-cuda.md"]
HEADER_LINES = 4  # title, blank, the command in backticks, blank

pytestmark = pytest.mark.slow


def run(args: list[str], monkeypatch) -> str:
    monkeypatch.chdir(ROOT)  # the commands' paths are relative to the repository root
    monkeypatch.setattr(figures, "_save", lambda fig, path: (plt.close(fig), path)[1])
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output + result.stderr
    return result.stdout


def flat(value: object, path: str = "") -> dict[str, object]:
    """Every leaf of a JSON value by its path."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in flat(item, f"{path}/{key}").items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in flat(item, f"{path}/{i}").items()}
    return {path: value}


def assert_same_numbers(rendered: Path, committed: Path) -> None:
    new, old = flat(json.loads(rendered.read_text())), flat(json.loads(committed.read_text()))
    assert new.keys() == old.keys(), f"{committed}: keys differ, e.g. {sorted(new.keys() ^ old.keys())[:5]}"
    changed = [path for path, value in new.items() if not same(value, old[path])]
    assert not changed, f"{committed} is stale: {len(changed)} numbers differ, e.g. {changed[:5]}"


def same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


@pytest.mark.parametrize("folder", REPORTS)
def test_report_equals_its_render(folder, tmp_path, monkeypatch):
    run(["eval", "report", "--cache", REPORTS[folder], "-o", str(tmp_path)], monkeypatch)
    committed = ROOT / folder
    assert (tmp_path / "report.md").read_text() == (committed / "report.md").read_text(), (
        f"{folder}/report.md is stale: rerun `groundsense eval report --cache {REPORTS[folder]} -o {folder}`")
    assert_same_numbers(tmp_path / "report.json", committed / "report.json")


@pytest.mark.parametrize("report", COMPARISONS)
def test_comparison_equals_its_render(report, tmp_path, monkeypatch):
    lines = (ROOT / report).read_text().splitlines(keepends=True)
    command = shlex.split(lines[2].strip().strip("`"))
    assert command[:3] == ["groundsense", "eval", "compare"], f"{report}: line 3 should be its command"
    output = command.index("-o") + 1
    committed_json, command[output] = ROOT / command[output], str(tmp_path / "compare.json")
    assert run(command[1:], monkeypatch) == "".join(lines[HEADER_LINES:]), f"{report} is stale: rerun its command"
    assert_same_numbers(tmp_path / "compare.json", committed_json)


RENDERED = ["docs/results/adaptation.md", "docs/results/answer-level.md", "docs/results/selection-A.md",
            "docs/results/selection-B.md", "docs/results/operating.md", "docs/results/operating-bf16.md",
            "docs/results/operating-sensitivity.md", "docs/results/learning-curve.md",
            "docs/results/learning-curve-sensitivity.md",
            "docs/results/scorer-cost.md", "docs/results/selection-F.md", "docs/results/aggregation-F.md",
            "docs/results/selection-J.md", "docs/results/ceiling.md", "docs/results/text-classifier.md",
            "docs/results/default-score.md", "docs/results/selection-V.md",
            "docs/results/selection-V-grid.md"]


@pytest.mark.parametrize("report", RENDERED)
def test_rendered_report_equals_its_render(report, tmp_path, monkeypatch):
    """Reports that carry their own command on line 3 (`eval answers`, `selection`, `operating`, `learning-curve`,
    `scorer-cost`)."""
    text = (ROOT / report).read_text()
    command = shlex.split(text.splitlines()[2].strip().strip("`"))
    assert command[:2] == ["groundsense", "eval"] and command[-2] == "-o", f"{report}: line 3 should be its command"
    if "--reference" in command and not (ROOT / command[command.index("--reference") + 1]).exists():
        pytest.skip("the reference features (../shared/reference) are absent")
    command[-1] = str(tmp_path / "report.md")
    run(command[1:], monkeypatch)
    rendered = (tmp_path / "report.md").read_text().replace(str(tmp_path / "report.md"), report)
    assert rendered == text, f"{report} is stale: rerun `{shlex.join(command[:-1] + [report])}`"


@pytest.mark.parametrize(("report", "render", "command"), [
    ("docs/results/question-ablation.md", "report", "COMMAND"),
    ("docs/results/selection-Q.md", "verdict", "VERDICT_COMMAND"),
])
def test_the_question_ablation_reports_equal_their_render(report, render, command):
    """The reports of scripts/question_ablation.py (not a `groundsense` command)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("question_ablation", ROOT / "scripts" / "question_ablation.py")
    ablation = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ablation)
    committed = (ROOT / report).read_text()
    assert getattr(ablation, command) in committed.splitlines()[2]
    assert getattr(ablation, render)() == committed, f"{report} is stale: rerun `{getattr(ablation, command)}`"


@pytest.mark.parametrize(("cache", "precision", "name"), [
    ("results/calibration-tokens", "fp32", "smollm2-135m-instruct-k5.json"),  # scripts/default_calibration.sh
    ("results/precision/calibration", "bf16", "smollm2-135m-instruct-bf16-k5.json"),  # scripts/precision_caches.sh
])
def test_the_shipped_calibrations_equal_their_fit_from_the_committed_caches(cache, precision, name, tmp_path,
                                                                           monkeypatch):
    """Each shipped calibration (fp32, bf16), refitted from the committed cache its script scores."""
    run(["eval", "calibrate", "--cache", cache, "--precision", precision, "-o", str(tmp_path / "c.json")],
        monkeypatch)
    assert_same_numbers(tmp_path / "c.json", ROOT / "src" / "groundsense" / "calibrations" / name)


SHIPPED_FUSIONS = sorted((ROOT / "src" / "groundsense" / "calibrations").glob("fusion-*.json"))


@pytest.mark.parametrize("shipped", SHIPPED_FUSIONS, ids=[path.name for path in SHIPPED_FUSIONS])
def test_each_shipped_fusion_equals_its_fit_from_the_committed_caches(shipped, tmp_path, monkeypatch):
    """Each shipped fusion file (candidate J's, the lexical fusion's in each mode and precision),
    refitted by the command it records (from the training answers' caches)."""
    command = shlex.split(json.loads(shipped.read_text())["made_with"]["command"])
    written = command.index("--fit-fusion") + 1
    assert command[written] == str(shipped.relative_to(ROOT)), "the file records the command that wrote it"
    run([*command[1:written], str(tmp_path / "f.json"), *command[written + 1:]], monkeypatch)
    rendered = json.loads((tmp_path / "f.json").read_text())
    rendered["made_with"]["command"] = shlex.join(command)  # the one difference: where it was written
    (tmp_path / "f.json").write_text(json.dumps(rendered))
    assert_same_numbers(tmp_path / "f.json", shipped)


def test_the_precision_agreement_equals_its_render(tmp_path, monkeypatch):
    """benchmarks/precision_agreement.json, the run of record of the bf16 decision
    (docs/performance.md, "Numeric precision")."""
    import importlib.util
    import sys

    committed = ROOT / "benchmarks" / "precision_agreement.json"
    command = shlex.split(json.loads(committed.read_text())["command"])
    script = command.index("benchmarks/precision_agreement.py")
    args = command[script + 1:]
    args[args.index("--out") + 1] = str(tmp_path / "agreement.json")
    monkeypatch.chdir(ROOT)
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    monkeypatch.setattr(sys, "argv", [command[script], *args])
    spec = importlib.util.spec_from_file_location("precision_agreement", ROOT / command[script])
    agreement = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(agreement)
    agreement.main()
    rendered = json.loads((tmp_path / "agreement.json").read_text())
    (tmp_path / "agreement.json").write_text(json.dumps(rendered | {"command": " ".join(command)}))
    assert_same_numbers(tmp_path / "agreement.json", committed)
