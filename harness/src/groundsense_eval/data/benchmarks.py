"""The benchmarks `groundsense eval` reads, and how their cases are loaded and selected."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from groundsense.errors import InputError

from .locations import SPLITS, benchmark_path

if TYPE_CHECKING:  # the loaders import pandas: imported where used, to keep `groundsense -h` fast
    from .cases import Case, DropLog

BENCHMARKS = ("ragtruth", "tofueval", "ragbench")
NAMES = {"ragtruth": "RAGTruth", "tofueval": "TofuEval", "ragbench": "RAGBench"}
DEFAULT_SPLITS = {"ragtruth": ("test",), "tofueval": ("dev", "test"), "ragbench": ("test",)}


def load_benchmark(
    benchmark: str, splits: Sequence[str], subsets: Sequence[str] | None = None, data: str | Path | None = None
) -> tuple[list[Case], DropLog]:
    """Cases of ``benchmark`` in ``splits`` (RAGBench: of ``subsets``, default all found), read
    from the data folder ``data`` (``--data``; default :func:`.locations.data_root`'s)."""
    unknown = [split for split in splits if split not in SPLITS[benchmark]]
    if unknown:
        raise InputError(f"{NAMES[benchmark]} has no {', '.join(unknown)} split (its splits: "
                         f"{', '.join(SPLITS[benchmark])}): check --split")
    path = benchmark_path(benchmark, data)
    if benchmark == "ragtruth":
        from .ragtruth import load_ragtruth

        return load_ragtruth(path, splits=set(splits))
    if benchmark == "tofueval":
        from .tofueval import load_tofueval

        return load_tofueval(path, splits=tuple(splits))
    from .ragbench import load_ragbench

    return load_ragbench(path, subsets=set(subsets) if subsets else None, splits=set(splits))


def select(cases: list[Case], benchmark: str, sample: str, splits: Sequence[str]) -> list[Case]:
    """``paper``: a paper-style RAGTruth sample, 300 hallucinated + 300 clean answers of one
    split, every case elsewhere; ``full``: every case; ``N``: N answers, half with an
    unsupported sentence, spread over tasks."""
    from .sampling import balanced_sample, sample_ragtruth

    if sample == "full" or (sample == "paper" and benchmark != "ragtruth"):
        return cases
    if sample == "paper" and len(splits) != 1:
        raise InputError("the paper-style sample is drawn from one split: give one --split")
    try:
        if sample == "paper":
            return sample_ragtruth(cases, split=splits[0])
        n = int(sample)
        return balanced_sample(cases, n // 2, n - n // 2)
    except ValueError as exc:  # more answers asked for than there are
        raise InputError(f"--sample {sample}: {exc}") from exc


def selected_cases(
    benchmark: str, sample: str, splits: Sequence[str] = (), subsets: Sequence[str] | None = None,
    data: str | Path | None = None,
) -> tuple[list[Case], str]:
    """A benchmark's cases loaded and selected (``splits`` empty: its default splits), and
    a line that says how many were loaded and what was dropped."""
    splits = tuple(splits) or DEFAULT_SPLITS[benchmark]
    cases, dropped = load_benchmark(benchmark, splits, subsets, data)
    loaded = f"{benchmark}: {len(cases)} cases loaded; {dropped.summary()}"
    cases = select(cases, benchmark, sample, splits)
    if not cases:
        raise InputError("no cases selected: check --split and --subsets")
    return cases, loaded


def find_case(case_id: str, data: str | Path | None = None) -> Case:
    """One case by its id (``ragtruth:ID``, ``tofueval:…``, ``ragbench:SUBSET:…``) from the data folder ``data``."""
    benchmark = case_id.split(":")[0]
    if benchmark == "ragtruth":  # filter by id before segmenting (loading all takes ~70 s)
        from .ragtruth import load_ragtruth

        cases, _ = load_ragtruth(benchmark_path(benchmark, data), ids={case_id}, limit=1)
        if cases:
            return cases[0]
    elif benchmark in BENCHMARKS:
        subsets = case_id.split(":")[1:2] if benchmark == "ragbench" else None
        splits = ("test", "validation", "train") if benchmark == "ragbench" else DEFAULT_SPLITS[benchmark]
        for case in load_benchmark(benchmark, splits, subsets, data)[0]:
            if case.id == case_id:
                return case
    raise InputError(f"no case {case_id!r} (ids look like ragtruth:ID, tofueval:…, ragbench:SUBSET:…)")
