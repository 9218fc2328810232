"""`groundsense eval attribution-pairs` and `rate-attribution`: is the support chunk the one a judge would pick?"""

from __future__ import annotations

from pathlib import Path

import click

from groundsense.cli import CONTEXT_SETTINGS, Failure, resumable

from ..caches.layout import cache_folder
from ..data.benchmarks import BENCHMARKS
from .options import DEFAULT_CACHE, cached_cases, data_option, load_sets, partial_option


@click.command("attribution-pairs", context_settings=CONTEXT_SETTINGS)
@click.argument("benchmark", type=click.Choice(BENCHMARKS))
@data_option
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_CACHE, show_default=True)
@click.option("--scorer", "-m", default=None, metavar="NAME",
              help="The feature set's scorer [default: the only one cached].")
@click.option("--attribution", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Output root [default: attribution/ beside the feature cache].")
@click.option("--seed", type=int, default=0, show_default=True)
@partial_option
def attribution_pairs(benchmark: str, data: Path | None, cache: Path, scorer: str | None, attribution: Path | None,
                      seed: int, partial: bool) -> None:
    """Write the chunks a judge rates for attribution quality: per grounded sentence, the
    detector's support chunk, a random chunk and the most word-overlapping chunk."""
    from groundsense.scorer import Scorer

    from ..caches.attribution import attribution_pairs as pairs_of
    from ..caches.attribution import case_chunks

    # the detector's drops, not the masked approximation
    sets = [s for s in load_sets(cache, scorer, partial) if s.benchmark == benchmark and s.full_exact]
    if not sets:
        raise click.UsageError(f"no full-mode, exact leave-one-out {benchmark} feature set under {cache}: score one "
                               f"first (`groundsense eval extract {benchmark} --cache {cache}`)")
    if len(sets) > 1:
        raise click.UsageError(f"several full-mode, exact leave-one-out {benchmark} feature sets under {cache} "
                               f"({', '.join(s.key for s in sets)}): choose one with --scorer")
    features = sets[0]
    table = features.table
    wanted = set(table["case_id"])
    cases = cached_cases(features, data)
    chunks = case_chunks(cases, Scorer(features.config["scorer"], device="cpu"), features.config)
    pairs = pairs_of(table[table["case_id"].isin(chunks)], chunks, seed)
    folder = (attribution or cache_folder("attribution", cache)) / benchmark / features.key
    folder.mkdir(parents=True, exist_ok=True)
    pairs.to_parquet(folder / "pairs.parquet", index=False)
    click.echo(f"{folder / 'pairs.parquet'}: {len(pairs)} rows ({pairs['case_id'].nunique()} answers); "
               f"{len(wanted) - len(chunks)} cached answers not found in the benchmark", err=True)


@click.command("rate-attribution", context_settings=CONTEXT_SETTINGS)
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
def rate_attribution(benchmark: str, judge: str, cache: Path, attribution: Path | None, features: str | None,
                     limit: int | None, device: str | None, no_progress: bool) -> None:
    """Have a judge rate each row of `eval attribution-pairs`' pairs.parquet (full, partial,
    none or contradicts) into ratings-<judge>.parquet beside it; rerun to resume.

    \b
      groundsense --threads 1 eval rate-attribution ragtruth --judge qwen2.5-coder-0.5b-instruct \
--cache results/features
    """
    from ..caches.rater import SupportRater
    from ..caches.rating import rate_pairs, ratings_path, read_pairs

    root = (attribution or cache_folder("attribution", cache)) / benchmark
    found = sorted(p for p in root.glob("*/pairs.parquet") if features in (None, p.parent.name))
    if not found:
        where = f" --attribution {attribution}" if attribution else ""
        raise Failure(f"no pairs.parquet under {root / (features or '*')}: write it first with "
                      f"`groundsense eval attribution-pairs {benchmark} --cache {cache}{where}`")
    if len(found) > 1:
        raise Failure(f"pairs of several feature sets under {root} ({', '.join(p.parent.name for p in found)}): "
                      "choose one with --features")
    try:  # a bad pairs or ratings file: exit 2 (rows rated so far are saved)
        pairs = read_pairs(found[0])
        rater = SupportRater(judge, device=device)
        with resumable(f"the finished ratings are saved under {found[0].parent}"):
            summary = rate_pairs(rater, pairs, ratings_path(found[0].parent, rater.name), limit=limit,
                                 progress=not no_progress)
    except ValueError as exc:
        raise Failure(str(exc)) from exc
    click.echo(f"{summary.path}: {summary.rated} rated, {summary.skipped} already rated", err=True)
