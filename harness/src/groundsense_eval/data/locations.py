"""Where the evaluation finds what the package does not ship: the benchmark data and the GASP
authors' published reference features. Each is a folder given explicitly (a command's option),
else the folder an environment variable names, else its place beside a source checkout
(``<checkout>/../shared/``). An installed package has no checkout: there it needs one of the first two.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from groundsense.errors import InputError

DATA_VARIABLE, DATA_OPTION = "GROUNDSENSE_DATA", "--data"
REFERENCE_VARIABLE, REFERENCE_OPTION = "GROUNDSENSE_REFERENCE", "--reference"
# Where each benchmark lies in the data folder (its README.md lists the sources).
BENCHMARK_PATHS = {
    "ragtruth": Path("ragtruth") / "ragtruth.jsonl.gz",
    "tofueval": Path("tofueval"),
    "ragbench": Path("ragbench"),
}
# Each benchmark's own splits (a RAGBench subset has some of them).
SPLITS = {"ragtruth": ("train", "test"), "tofueval": ("dev", "test"), "ragbench": ("train", "validation", "test")}
# Where each is published (the package ships none of them) and what to put in the data folder;
# the layouts in full: docs/evaluation.md#the-benchmark-data.
BENCHMARK_SOURCES = {
    "ragtruth": "RAGTruth's response.jsonl and source_info.jsonl (https://github.com/ParticleMedia/RAGTruth, "
                "dataset/) into ragtruth/",
    "tofueval": "TofuEval's meetingbank_factual_eval_*.csv and document_ids_dev_test_split.json, with the "
                "meetingbank_*_doc.csv transcripts its README extracts (https://github.com/amazon-science/tofueval), "
                "all flat in tofueval/",
    "ragbench": "RAGBench's parquet files from https://huggingface.co/datasets/rungalileo/ragbench into "
                "ragbench/<subset>/",
}
DATA_DOC = "docs/evaluation.md#the-benchmark-data"
# RAGTruth as its GitHub release lays it out, in ragtruth/ instead of the processed one-file form.
RAGTRUTH_ORIGINAL = ("response.jsonl", "source_info.jsonl")


def checkout_shared() -> Path | None:
    """``<checkout>/../shared`` when the package runs from a source checkout (``harness/src/groundsense_eval``
    below the repository's ``pyproject.toml``), else None."""
    checkout = Path(__file__).resolve().parents[4]
    return checkout.parent / "shared" if (checkout / "pyproject.toml").is_file() else None


def _folder(given: str | Path | None, variable: str, option: str, shared: str, what: str, get: str) -> Path:
    if given is not None:
        return Path(given)
    if os.environ.get(variable):
        return Path(os.environ[variable])
    if (root := checkout_shared()) is None:
        raise InputError(f"where is the {what}? The package does not ship it: {get}. Then set ${variable} to its "
                         f"folder or pass {option} DIR (a source checkout reads ../shared/{shared})")
    return root / shared


def _get_data(benchmarks: Iterable[str]) -> str:
    return "download " + "; ".join(BENCHMARK_SOURCES[b] for b in benchmarks) + f" ({DATA_DOC})"


def data_root(root: str | Path | None = None) -> Path:
    """The benchmark data folder: ``root`` (``--data``), else ``$GROUNDSENSE_DATA``, else a
    checkout's ``../shared/data``. Whether it exists is :func:`benchmark_path`'s to check."""
    return _folder(root, DATA_VARIABLE, DATA_OPTION, "data", "benchmark data", _get_data(BENCHMARK_PATHS))


def benchmark_path(benchmark: str, root: str | Path | None = None) -> Path:
    """The file or folder of ``benchmark`` in the data folder (:func:`data_root`): for RAGTruth the
    processed ``ragtruth.jsonl.gz``, else its folder when that holds the original release's files.
    An :class:`InputError` saying where to get the data and how to point at it when it is not there."""
    path = data_root(root) / BENCHMARK_PATHS[benchmark]
    if benchmark == "ragtruth" and not path.exists() and all((path.parent / f).is_file() for f in RAGTRUTH_ORIGINAL):
        return path.parent  # the original layout (the loader reads either)
    if not path.exists():
        raise InputError(f"no {benchmark} data at {path}. The package does not ship it: {_get_data([benchmark])}. "
                         f"Then point ${DATA_VARIABLE} or {DATA_OPTION} DIR at the folder that holds "
                         f"{', '.join(f'{p}/' for p in BENCHMARK_PATHS)}")
    return path


def require_files(benchmark: str, folder: Path, names: Iterable[str]) -> None:
    """An :class:`InputError` naming each of ``names`` that ``folder``, ``benchmark``'s data, lacks
    (and where below it one sits, if it does), and where to get it."""
    missing = [name for name in names if not (folder / name).is_file()]
    if not missing:
        return
    below = sorted(str(p.relative_to(folder)) for name in missing for p in folder.rglob(name))
    moved = f" ({', '.join(below)} found below it: move them up)" if below else ""
    raise InputError(f"no {', '.join(missing)} in {folder}, where every {benchmark} file sits flat{moved}. The package "
                     f"does not ship the data: {_get_data([benchmark])}")


def reference_dir(path: str | Path | None = None) -> Path:
    """The published reference features: ``path``, else ``$GROUNDSENSE_REFERENCE``, else a
    checkout's ``../shared/reference/gasp-v1``; an :class:`InputError` when it is not there."""
    folder = _folder(path, REFERENCE_VARIABLE, REFERENCE_OPTION, "reference/gasp-v1", "published reference features",
                     "get the GASP authors' feature tables")
    if not folder.is_dir():
        raise InputError(f"no reference features at {folder}: point ${REFERENCE_VARIABLE} or {REFERENCE_OPTION} DIR "
                         "at the folder of the GASP authors' feature tables "
                         "(docs/evaluation.md, 'Reference reproduction')")
    return folder
