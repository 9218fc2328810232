"""What the `groundsense eval` commands share: cache locations, case selection, report headers."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from groundsense.cli import CommandFunction, Failure, check_output_file, stacked

from ..caches.layout import cache_folder
from ..data.benchmarks import BENCHMARKS

if TYPE_CHECKING:
    from ..caches.extract import FeatureSet
    from ..data.cases import Case

DEFAULT_CACHE = cache_folder("features")  # under runs/ in the working directory (gitignored)
DEFAULT_VERIFIER_CACHE = cache_folder("verifiers")


def _sample_option(value: str) -> str:
    if value not in ("paper", "full") and not (value.isdigit() and int(value) >= 1):
        raise click.BadParameter("use paper, full or a number of answers N >= 1")
    return value


def data_option(func: CommandFunction) -> CommandFunction:
    """``--data``: the benchmark data folder (:func:`groundsense_eval.data.locations.data_root`)."""
    return click.option("--data", type=click.Path(file_okay=False, path_type=Path), default=None,
                        help="The benchmark data folder, holding ragtruth/, tofueval/ and ragbench/ "
                             "[default: $GROUNDSENSE_DATA, else ../shared/data beside a source checkout].")(func)


def case_options(func: CommandFunction) -> CommandFunction:
    """The options that select a benchmark's cases, shared by ``extract`` and ``verify``."""
    options = [
        click.argument("benchmark", type=click.Choice(BENCHMARKS)),
        data_option,
        click.option("--sample", default="paper", show_default=True, callback=lambda _c, _p, v: _sample_option(v),
                     help="paper (RAGTruth: a paper-style 300 hallucinated + 300 clean; others: all), full, "
                          "or N answers (balanced)."),
        click.option("--split", "splits", multiple=True,
                     help="Benchmark split(s) [default: ragtruth test; tofueval dev and test; ragbench test]."),
        click.option("--subsets", default=None, help="RAGBench subsets, comma-separated [default: all found]."),
        click.option("--limit", type=click.IntRange(min=1), default=None,
                     help="Only the first N cases (by source id)."),
    ]
    return stacked(options)(func)


def cases_for(benchmark: str, data: Path | None, sample: str, splits: tuple[str, ...],
              subsets: str | None) -> list[Case]:
    """The cases the :func:`case_options` select, saying on stderr what was loaded, dropped and kept."""
    from ..data.benchmarks import selected_cases
    from ..data.cases import cases_summary

    cases, loaded = selected_cases(benchmark, sample, splits, subsets.split(",") if subsets else None, data)
    click.echo(loaded, err=True)
    click.echo(cases_summary(cases), err=True)
    return cases


def partial_option(func: CommandFunction) -> CommandFunction:
    """``--partial``: also read feature sets whose extraction has not finished."""
    return click.option("--partial", is_flag=True,
                        help="Also read feature sets whose extraction has not finished (left out by default, with a "
                             "warning: their dev/test partitions are drawn over the answers present, so their "
                             "figures are not the complete set's).")(func)


def load_sets(cache: Path, scorer: str | None = None, partial: bool = False) -> list[FeatureSet]:
    """The feature sets cached under ``cache`` (:func:`groundsense_eval.caches.extract.load_cache`).
    One whose extraction has not finished (a run still going, or stopped) is left out unless
    ``partial``; either way stderr says so."""
    from ..caches.extract import load_cache

    kept = []
    for s in load_cache(cache, scorer):
        missing = s.missing
        if missing:
            assert s.planned is not None, "missing answers are counted against the recorded plan"
            fate = "read anyway (--partial)" if partial else "left out (pass --partial to read it)"
            click.echo(f"warning: {cache}/{s.benchmark}/{s.key} lacks {missing} of the {len(s.planned)} answers "
                       f"its extractions were asked for: {fate}. Its partitions are drawn over the answers present, so "
                       "its figures are not the complete set's; rerun the same `groundsense eval extract` to "
                       "finish it.", err=True)
        if partial or not missing:
            kept.append(s)
    return kept


def cached_cases(features: FeatureSet, data: Path | None) -> list[Case]:
    """The benchmark cases a feature set holds, loaded again from the data (the cache keeps
    sentences, not the evidence)."""
    from ..data.benchmarks import DEFAULT_SPLITS, load_benchmark

    wanted = set(features.table["case_id"])
    splits = features.splits or DEFAULT_SPLITS[features.benchmark]
    return [c for c in load_benchmark(features.benchmark, splits, data=data)[0] if c.id in wanted]


def report_command(*args: object) -> str:
    """The shell command that renders a report, shown in its header (the published-report
    check reruns it): ``args``, and the running command's --resamples and --seed where not their
    defaults (the draws depend on them), before a closing ``-o FILE``."""
    ctx = click.get_current_context(silent=True)
    draws = [] if ctx is None else [
        value for p in ctx.command.params if p.name in ("resamples", "seed") and ctx.params[p.name] != p.default
        for value in (max(p.opts, key=len), ctx.params[p.name])]
    end = len(args) - 2 if args[-2:-1] == ("-o",) else len(args)
    return shlex.join(["groundsense", "eval", *map(str, [*args[:end], *draws, *args[end:]])])


def output_option(help: str) -> Callable[[CommandFunction], CommandFunction]:
    """``-o``: an optional file to write, refused as the command line is read where it cannot be
    written (the product's :func:`groundsense.cli.check_output_file`)."""

    def checked(_ctx: click.Context, _param: click.Parameter, output: Path | None) -> Path | None:
        if output is not None:
            check_output_file(output)
        return output

    return click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
                        callback=checked, help=help)


def emit_report(text: str, output: Path | None) -> None:
    """A Markdown report to ``output`` (saying so), or to standard output."""
    if output:
        output.write_text(text)
    click.echo(text if not output else f"wrote {output}")


def markdown_report_options(func: CommandFunction) -> CommandFunction:
    """``-o`` (a Markdown file, else standard output), ``--resamples`` and ``--seed``: the options
    of the reports that carry their command on line 3 (`selection`, `answers`, `operating`)."""
    options = [
        output_option("Write the Markdown report here [default: standard output]."),
        click.option("--resamples", type=click.IntRange(min=100), default=2000, show_default=True),
        click.option("--seed", type=int, default=0, show_default=True),
    ]
    return stacked(options)(func)


def whole_split(features: FeatureSet, cache: Path, option: str) -> None:
    """Refuse a RAGTruth set, read from ``cache`` (given as ``option``), that does not hold every
    answer of RAGTruth's test split.

    Its figures are published as the whole split's, and a part of it (a `--limit` run, or a run
    stopped early, with or without a recorded plan) would not give them with fewer digits but
    other figures: the dev/test partitions are drawn over the answers present. So it is refused,
    naming how many answers it holds, rather than reported under the whole split's name;
    `--partial` does not change that."""
    from ..data.ragtruth import TEST_SPLIT_ANSWERS

    rows = features.rows
    held = rows.loc[rows["split"] == "test", "case_id"].nunique() if "split" in rows else features.answers
    if held != TEST_SPLIT_ANSWERS:
        scorer = features.config["scorer"]
        raise Failure(f"{option} {cache} holds {held:,} of the {TEST_SPLIT_ANSWERS:,} answers of RAGTruth's "
                      f"test split ({features.key}), and its figures are reported as the whole split's: score the "
                      f"rest first (`groundsense eval extract ragtruth --sample full --scorer {scorer} --cache "
                      f"{cache}` resumes)")
