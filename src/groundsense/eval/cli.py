"""``groundsense eval``: extract benchmark features (or verifier scores) into a cache, report from it, show a case."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from typing import TYPE_CHECKING

import click

from ..interrupts import resumable

if TYPE_CHECKING:  # the package's modules load pandas/torch: imported where used, to keep `groundsense -h` fast
    from .cases import Case, DropLog

DEFAULT_CACHE = Path("runs/features")  # relative to the working directory; /runs/ is gitignored
DEFAULT_VERIFIER_CACHE = Path("runs/verifiers")
BENCHMARKS = ("ragtruth", "tofueval", "ragbench")
DEFAULT_SPLITS = {"ragtruth": ("test",), "tofueval": ("dev", "test"), "ragbench": ("test",)}
CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def load_benchmark(
    benchmark: str, splits: Sequence[str], subsets: Sequence[str] | None = None
) -> tuple[list[Case], DropLog]:
    """Cases of ``benchmark`` in ``splits`` (RAGBench: of ``subsets``, default all found)."""
    if benchmark == "ragtruth":
        from .ragtruth import load_ragtruth

        return load_ragtruth(splits=set(splits))
    if benchmark == "tofueval":
        from .tofueval import load_tofueval

        return load_tofueval(splits=tuple(splits))
    from .ragbench import load_ragbench

    return load_ragbench(subsets=set(subsets) if subsets else None, splits=set(splits))


def select(cases: list[Case], benchmark: str, sample: str, splits: Sequence[str]) -> list[Case]:
    """``paper``: a paper-style RAGTruth sample, 300 hallucinated + 300 clean answers of one
    split, every case elsewhere; ``full``: every case; ``N``: N answers, half with an
    unsupported sentence, spread over tasks."""
    from .sampling import balanced_sample, sample_ragtruth

    if sample == "full" or (sample == "paper" and benchmark != "ragtruth"):
        return cases
    if sample == "paper":
        if len(splits) != 1:
            raise click.BadParameter("the paper-style sample is drawn from one split", param_hint="--split")
        return sample_ragtruth(cases, split=splits[0])
    n = int(sample)
    return balanced_sample(cases, n // 2, n - n // 2)


def find_case(case_id: str) -> Case:
    """One case by its id (``ragtruth:ID``, ``tofueval:…``, ``ragbench:SUBSET:…``)."""
    benchmark = case_id.split(":")[0]
    if benchmark == "ragtruth":  # filter by id before segmenting (loading all takes ~70 s)
        from .ragtruth import load_ragtruth

        cases, _ = load_ragtruth(ids={case_id}, limit=1)
        if cases:
            return cases[0]
    elif benchmark in BENCHMARKS:
        subsets = case_id.split(":")[1:2] if benchmark == "ragbench" else None
        splits = ("test", "validation", "train") if benchmark == "ragbench" else DEFAULT_SPLITS[benchmark]
        for case in load_benchmark(benchmark, splits, subsets)[0]:
            if case.id == case_id:
                return case
    raise click.BadParameter(f"no case {case_id!r} (ids look like ragtruth:ID, tofueval:…, ragbench:SUBSET:…)")


def _sample_option(value: str) -> str:
    if value not in ("paper", "full") and not value.isdigit():
        raise click.BadParameter("use paper, full or a number of answers")
    return value


@click.group("eval", context_settings=CONTEXT_SETTINGS)
def eval_group() -> None:
    """Evaluate on RAGTruth, TofuEval and RAGBench: extract features, then report."""


def _case_options(func):
    """The options that select a benchmark's cases, shared by ``extract`` and ``verify``."""
    options = [
        click.argument("benchmark", type=click.Choice(BENCHMARKS)),
        click.option("--sample", default="paper", show_default=True, callback=lambda _c, _p, v: _sample_option(v),
                     help="paper (RAGTruth: a paper-style 300 hallucinated + 300 clean; others: all), full, or N answers (balanced)."),
        click.option("--split", "splits", multiple=True,
                     help="Benchmark split(s) [default: ragtruth test; tofueval dev and test; ragbench test]."),
        click.option("--subsets", default=None, help="RAGBench subsets, comma-separated [default: all found]."),
        click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N cases (by source id)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def selected_cases(benchmark: str, sample: str, splits: Sequence[str], subsets: str | None) -> list[Case]:
    """Load and select a benchmark's cases as the options say, reporting what was dropped."""
    from .cases import cases_summary

    splits = splits or DEFAULT_SPLITS[benchmark]
    cases, dropped = load_benchmark(benchmark, splits, subsets.split(",") if subsets else None)
    click.echo(f"{benchmark}: {len(cases)} cases loaded; {dropped.summary()}", err=True)
    try:
        cases = select(cases, benchmark, sample, splits)
    except ValueError as exc:  # more answers asked for than there are
        raise click.BadParameter(str(exc), param_hint="--sample") from exc
    if not cases:
        raise click.ClickException("no cases selected: check --split and --subsets")
    click.echo(cases_summary(cases), err=True)
    return cases


@eval_group.command(context_settings=CONTEXT_SETTINGS)
@_case_options
@click.option("--scorer", "-m", default=None, metavar="NAME", help="Scorer [default: smollm2-135m-instruct].")
@click.option("-k", "--chunks", "k", type=click.IntRange(min=1), default=5, show_default=True)
@click.option("--mode", type=click.Choice(["full", "two_pass"]), default="full", show_default=True)
@click.option("--loo", "leave_one_out", type=click.Choice(["exact", "masked"]), default="exact", show_default=True,
              help="Leave-one-out rows: exact, or masked (approximate; cached under its own key).")
@click.option("--max-context-tokens", type=click.IntRange(min=1), default=1800, show_default=True)
@click.option("--max-answer-tokens", type=click.IntRange(min=1), default=256, show_default=True)
@click.option("--device", default=None, help="torch device [default: cuda if available, else cpu].")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_CACHE, show_default=True)
@click.option("--token-rows", is_flag=True,
              help="Also keep each sentence's per-token scores (cached under its own key), to re-aggregate offline.")
@click.option("--no-progress", is_flag=True)
def extract(benchmark, sample, splits, subsets, limit, scorer, k, mode, leave_one_out, max_context_tokens,
            max_answer_tokens, device, cache, token_rows, no_progress):
    """Score a benchmark's cases into the feature cache; rerun to resume."""
    from ..detector import Detector
    from ..errors import GroundsenseError
    from .extract import extract as run_extract

    cases = selected_cases(benchmark, sample, splits, subsets)
    try:
        detector = Detector(scorer, k=k, mode=mode, calibration=False, max_context_tokens=max_context_tokens,
                            max_answer_tokens=max_answer_tokens, device=device, leave_one_out=leave_one_out)
    except GroundsenseError as exc:
        raise click.ClickException(str(exc)) from exc
    with resumable(f"the finished cases are saved under {cache}"):
        summary = run_extract(detector, cases, cache, limit=limit, progress=not no_progress, token_rows=token_rows)
    click.echo(f"{summary.folder}: {summary.written} scored, {summary.skipped} already cached, "
               f"{summary.errors} errors", err=True)


def _command(*args) -> str:
    """The shell command that renders a report, shown in its header (the published-report
    check reruns it). Default resamples and seed only: those are what is published."""
    import shlex

    return shlex.join(["groundsense", "eval", *map(str, args)])


def _option_pairs(_ctx, _param, values: tuple[str, ...]) -> dict[str, str]:
    pairs = {}
    for value in values:
        name, sep, setting = value.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"{value!r}: use NAME=VALUE", param_hint="--option")
        pairs[name] = setting
    return pairs


@eval_group.command(context_settings=CONTEXT_SETTINGS)
@_case_options
@click.option("--verifier", "spec", required=True, metavar="KIND:MODEL",
              help="judge:<scorer>, contextcite:<scorer>, nli:<id or path>, minicheck:<id or path>, "
                   "alignscore:<id or path>.")
@click.option("-o", "--option", "options", multiple=True, callback=_option_pairs, metavar="NAME=VALUE",
              help="A verifier setting, e.g. -o k=5, -o premise=context, -o label=1 (see docs/verifiers.md).")
@click.option("--device", default=None, help="torch device [default: cuda if available, else cpu].")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_VERIFIER_CACHE,
              show_default=True)
@click.option("--no-progress", is_flag=True)
def verify(benchmark, sample, splits, subsets, limit, spec, options, device, cache, no_progress):
    """Score the same cases as `eval extract` with a verifier into the verifier cache; rerun to resume.

    \b
      groundsense eval verify ragtruth --verifier judge:qwen2.5-coder-1.5b-instruct
      groundsense eval verify ragtruth --verifier nli:PATH/TO/MODEL -o premise=context
    """
    from ..cli import Failure
    from ..errors import GroundsenseError
    from ..verifiers import make_verifier
    from .verify import verify as run_verify

    try:  # before the cases load (a minute for RAGTruth), so a bad spec fails fast
        verifier = make_verifier(spec, options, device=device)
    except GroundsenseError as exc:  # an unknown verifier or option, a model that cannot load: exit 2
        raise Failure(str(exc)) from exc
    cases = selected_cases(benchmark, sample, splits, subsets)
    with resumable(f"the finished cases are saved under {cache}"):
        summary = run_verify(verifier, cases, cache, limit=limit, progress=not no_progress)
    click.echo(f"{summary.folder}: {summary.written} scored, {summary.skipped} already cached, "
               f"{summary.errors} errors", err=True)


@eval_group.command(context_settings=CONTEXT_SETTINGS)
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_CACHE, show_default=True)
@click.option("--scorer", "-m", default=None, metavar="NAME", help="Only this scorer's features [default: all cached].")
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), default=Path("runs/report"),
              show_default=True)
@click.option("--resamples", type=click.IntRange(min=100), default=2000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--verifiers", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Verifier score cache [default: verifiers/ beside the feature cache].")
@click.option("--attribution", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Attribution pairs and ratings [default: attribution/ beside the feature cache].")
def report(cache, scorer, output, resamples, seed, verifiers, attribution):
    """Tables, JSON and figures from the feature cache (no scorer needed), with the verifier
    comparisons and attribution ratings where those caches exist."""
    from .extract import load_cache
    from .report import write_report

    sets = load_cache(cache, scorer)
    if not sets:
        raise click.ClickException(f"no cached features under {cache}: run `groundsense eval extract` first")
    for s in sets:
        click.echo(f"{s.benchmark} {s.key}: {s.rows['case_id'].nunique()} answers, {len(s.errors)} errors", err=True)
    verifiers = verifiers or cache.parent / "verifiers"
    attribution = attribution or cache.parent / "attribution"
    click.echo(write_report(sets, output, seed, resamples, verifiers, attribution))


@eval_group.command(context_settings=CONTEXT_SETTINGS)
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_CACHE, show_default=True,
              help="Feature cache with one full-mode set per benchmark (results/tokens for candidate B).")
@click.option("--split-cache", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Feature cache of the whole RAGTruth test split, for the rule's third condition.")
@click.option("--candidate", type=click.Choice(["A", "B"]), default="A", show_default=True,
              help="A: sentence features; B: A plus token-level features (needs --token-rows caches).")
@click.option("--scorer", "-m", default="smollm2-135m-instruct", show_default=True, metavar="NAME")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the Markdown report here [default: standard output].")
@click.option("--resamples", type=click.IntRange(min=100), default=2000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
def selection(cache, split_cache, candidate, scorer, output, resamples, seed):
    """The detector-selection protocol (docs/detector-selection.md): leave-one-benchmark-out
    transfer of a trained detector against the sentence gap, and the adoption rule's verdict."""
    from .extract import load_cache
    from .selection import selection_report

    sets = {s.benchmark: s for s in load_cache(cache, scorer) if s.config["mode"] == "full"
            and s.config.get("leave_one_out", "exact") == "exact"}
    if set(sets) != set(BENCHMARKS):
        raise click.ClickException(f"{cache} holds full-mode {scorer} features of {sorted(sets) or 'no benchmark'}; "
                                   f"the protocol needs all of {', '.join(BENCHMARKS)}")
    split = next((s for s in load_cache(split_cache, scorer) if s.benchmark == "ragtruth"), None) if split_cache else None
    command = _command("selection", "--cache", cache, *(["--split-cache", split_cache] if split_cache else []),
                       *(["--candidate", candidate] if candidate != "A" else []), *(["-o", output] if output else []))
    try:
        text = selection_report({b: sets[b] for b in BENCHMARKS}, split, candidate, command, resamples, seed)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    if output:
        output.write_text(text)
    click.echo(text if not output else f"wrote {output}")


@eval_group.command(context_settings=CONTEXT_SETTINGS)
@click.option("--cache", "caches", type=click.Path(file_okay=False, path_type=Path), multiple=True,
              default=[DEFAULT_CACHE], show_default=True, help="Feature cache(s); every full-mode exact set is reported.")
@click.option("--reference", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder of the published reference features (../shared/reference/gasp-v1) to compare with.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the Markdown report here [default: standard output].")
@click.option("--resamples", type=click.IntRange(min=100), default=2000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
def answers(caches, reference, output, resamples, seed):
    """Answer-level AUC of training-free aggregations of sentence scores, by benchmark and
    partition, and the conditions that move it (scorer, task, answer cap, reference features)."""
    from .answers import answer_report
    from .extract import load_cache

    sets = {}
    for cache in caches:
        for s in load_cache(cache):
            if s.config["mode"] == "full" and s.config.get("leave_one_out", "exact") == "exact":
                sets[f"{s.benchmark} ({s.config['scorer']}, {cache.name})"] = s
    if not sets:
        raise click.ClickException(f"no full-mode feature sets under {', '.join(map(str, caches))}")
    command = _command("answers", *(a for c in caches for a in ("--cache", c)),
                       *(["--reference", reference] if reference else []), *(["-o", output] if output else []))
    text = answer_report(sets, reference, command, resamples, seed)
    if output:
        output.write_text(text)
    click.echo(text if not output else f"wrote {output}")


@eval_group.command("attribution-pairs", context_settings=CONTEXT_SETTINGS)
@click.argument("benchmark", type=click.Choice(BENCHMARKS))
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_CACHE, show_default=True)
@click.option("--scorer", "-m", default=None, metavar="NAME", help="The feature set's scorer [default: the only one cached].")
@click.option("--attribution", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Output root [default: attribution/ beside the feature cache].")
@click.option("--seed", type=int, default=0, show_default=True)
def attribution_pairs(benchmark, cache, scorer, attribution, seed):
    """Write the chunks a judge rates for attribution quality: per grounded sentence, the
    detector's support chunk, a random chunk and the most word-overlapping chunk."""
    from ..scorer import Scorer
    from .attribution import attribution_pairs as pairs_of, case_chunks
    from .extract import load_cache

    sets = [s for s in load_cache(cache, scorer) if s.benchmark == benchmark and s.config["mode"] == "full"
            and s.config.get("leave_one_out", "exact") == "exact"]  # the detector's drops, not the masked approximation
    if len(sets) != 1:
        found = ", ".join(s.key for s in sets) or "none"
        raise click.UsageError(f"need exactly one full-mode, exact leave-one-out {benchmark} feature set under {cache} "
                               f"(found: {found}); choose one with --scorer")
    features = sets[0]
    table = features.table
    wanted = set(table["case_id"])
    splits = sorted(set(table["split"].dropna())) or DEFAULT_SPLITS[benchmark]
    cases = [c for c in load_benchmark(benchmark, splits)[0] if c.id in wanted]
    chunks = case_chunks(cases, Scorer(features.config["scorer"], device="cpu"), features.config)
    pairs = pairs_of(table[table["case_id"].isin(chunks)], chunks, seed)
    folder = (attribution or cache.parent / "attribution") / benchmark / features.key
    folder.mkdir(parents=True, exist_ok=True)
    pairs.to_parquet(folder / "pairs.parquet", index=False)
    click.echo(f"{folder / 'pairs.parquet'}: {len(pairs)} rows ({pairs['case_id'].nunique()} answers); "
               f"{len(wanted) - len(chunks)} cached answers not found in the benchmark", err=True)


@eval_group.command("rate-attribution", context_settings=CONTEXT_SETTINGS)
@click.argument("benchmark", type=click.Choice(BENCHMARKS))
@click.option("--judge", required=True, metavar="SCORER",
              help="The judge: a built-in scorer, local directory or Hugging Face id.")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_CACHE, show_default=True,
              help="The feature cache the pairs were written from.")
@click.option("--attribution", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Pairs and ratings root [default: attribution/ beside the feature cache].")
@click.option("--features", default=None, metavar="KEY", help="The feature set's folder, where several have pairs.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N rows of the pairs file.")
@click.option("--device", default=None, help="torch device [default: cuda if available, else cpu].")
@click.option("--no-progress", is_flag=True)
def rate_attribution(benchmark, judge, cache, attribution, features, limit, device, no_progress):
    """Have a judge rate each row of `eval attribution-pairs`' pairs.parquet (full, partial,
    none or contradicts) into ratings-<judge>.parquet beside it; rerun to resume.

    \b
      groundsense --threads 1 eval rate-attribution ragtruth --judge qwen2.5-coder-0.5b-instruct --cache results/features
    """
    from ..cli import Failure
    from ..errors import GroundsenseError
    from ..verifiers.rater import SupportRater
    from .rating import rate_pairs, ratings_path, read_pairs

    root = (attribution or cache.parent / "attribution") / benchmark
    found = sorted(p for p in root.glob("*/pairs.parquet") if features in (None, p.parent.name))
    if not found:
        where = f" --attribution {attribution}" if attribution else ""
        raise Failure(f"no pairs.parquet under {root / (features or '*')}: write it first with "
                      f"`groundsense eval attribution-pairs {benchmark} --cache {cache}{where}`")
    if len(found) > 1:
        raise Failure(f"pairs of several feature sets under {root} ({', '.join(p.parent.name for p in found)}): "
                      "choose one with --features")
    try:  # a bad pairs or ratings file, a judge that cannot load or rate: exit 2 (rows rated so far are saved)
        pairs = read_pairs(found[0])
        rater = SupportRater(judge, device=device)
        with resumable(f"the finished ratings are saved under {found[0].parent}"):
            summary = rate_pairs(rater, pairs, ratings_path(found[0].parent, rater.name), limit=limit,
                                 progress=not no_progress)
    except (GroundsenseError, ValueError) as exc:
        raise Failure(str(exc)) from exc
    click.echo(f"{summary.path}: {summary.rated} rated, {summary.skipped} already rated", err=True)


@eval_group.command(context_settings=CONTEXT_SETTINGS)
@click.argument("key_a")
@click.argument("key_b")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_CACHE, show_default=True)
@click.option("--benchmark", type=click.Choice(BENCHMARKS), default=None,
              help="The benchmark, where a key is cached for more than one.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the numbers as JSON.")
@click.option("--resamples", type=click.IntRange(min=100), default=2000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
def compare(key_a, key_b, cache, benchmark, output, resamples, seed):
    """Compare two cached configurations of one benchmark (the same scorer or two) over the same answers.

    KEY_A and KEY_B are cache folder names (as `eval report` lists them), e.g. exact and
    masked leave-one-out:

    \b
      groundsense eval compare --cache results/features \\
        smollm2-135m-instruct__full-k5-cd42f428 smollm2-135m-instruct__full-masked-k5-a35ad123

    Prints span AUC of each method under each, the paired source-level bootstrap interval of
    A - B, and the agreement (Pearson, Spearman) of each feature.
    """
    from .configurations import compare as run_compare
    from .extract import load_cache

    sets = load_cache(cache)
    chosen = []
    for key, hint in ((key_a, "KEY_A"), (key_b, "KEY_B")):
        matches = [s for s in sets if s.key == key and benchmark in (None, s.benchmark)]
        if len(matches) != 1:
            known = ", ".join(sorted({f"{s.benchmark}/{s.key}" for s in sets})) or "none"
            problem = "is cached for several benchmarks: pass --benchmark" if matches else f"is not under {cache}"
            raise click.BadParameter(f"{key} {problem} (cached: {known})", param_hint=hint)
        chosen.append(matches[0])
    try:
        comparison = run_compare(*chosen, seed=seed, n_resamples=resamples)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    click.echo(comparison.report())
    if output:
        output.write_text(json.dumps(comparison.to_dict(), indent=2) + "\n")


@eval_group.command(context_settings=CONTEXT_SETTINGS)
@click.argument("case_id")
def case(case_id):
    """Print one case as a JSON row for `groundsense detect` or `batch`.

    \b
      groundsense eval case ragtruth:ID | groundsense detect
    """
    from .rows import case_row

    click.echo(json.dumps(case_row(find_case(case_id)), ensure_ascii=False))
