"""Where the evaluation finds what the package does not ship: the benchmark data and the GASP
authors' published reference features. Each is a folder given explicitly (a command's option),
else the folder an environment variable names, else its place beside a source checkout
(``<checkout>/../shared/``). An installed package has no checkout: there it needs one of the first two.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...errors import InputError

DATA_VARIABLE, DATA_OPTION = "GROUNDSENSE_DATA", "--data"
REFERENCE_VARIABLE, REFERENCE_OPTION = "GROUNDSENSE_REFERENCE", "--reference"
# Where each benchmark lies in the data folder (its README.md lists the sources).
BENCHMARK_PATHS = {
    "ragtruth": Path("ragtruth") / "ragtruth.jsonl.gz",
    "tofueval": Path("tofueval"),
    "ragbench": Path("ragbench"),
}


def checkout_shared() -> Path | None:
    """``<checkout>/../shared`` when the package runs from a source checkout (``src/groundsense``
    beside ``pyproject.toml``), else None."""
    checkout = Path(__file__).resolve().parents[4]
    return checkout.parent / "shared" if (checkout / "pyproject.toml").is_file() else None


def _folder(given: str | Path | None, variable: str, option: str, shared: str, what: str) -> Path:
    if given is not None:
        return Path(given)
    if os.environ.get(variable):
        return Path(os.environ[variable])
    if (root := checkout_shared()) is None:
        raise InputError(f"where is the {what}? Set ${variable} to its folder or pass {option} DIR "
                         f"(a source checkout reads ../shared/{shared})")
    return root / shared


def data_root(root: str | Path | None = None) -> Path:
    """The benchmark data folder: ``root`` (``--data``), else ``$GROUNDSENSE_DATA``, else a
    checkout's ``../shared/data``. Whether it exists is :func:`benchmark_path`'s to check."""
    return _folder(root, DATA_VARIABLE, DATA_OPTION, "data", "benchmark data")


def benchmark_path(benchmark: str, root: str | Path | None = None) -> Path:
    """The file or folder of ``benchmark`` in the data folder (:func:`data_root`); an
    :class:`InputError` saying how to point at the data when it is not there."""
    path = data_root(root) / BENCHMARK_PATHS[benchmark]
    if not path.exists():
        raise InputError(f"no {benchmark} data at {path}: point ${DATA_VARIABLE} or {DATA_OPTION} DIR at the "
                         f"folder that holds {', '.join(f'{p}/' for p in BENCHMARK_PATHS)} (docs/eval-notes.md)")
    return path


def reference_dir(path: str | Path | None = None) -> Path:
    """The published reference features: ``path``, else ``$GROUNDSENSE_REFERENCE``, else a
    checkout's ``../shared/reference/gasp-v1``; an :class:`InputError` when it is not there."""
    folder = _folder(path, REFERENCE_VARIABLE, REFERENCE_OPTION, "reference/gasp-v1", "published reference features")
    if not folder.is_dir():
        raise InputError(f"no reference features at {folder}: point ${REFERENCE_VARIABLE} or {REFERENCE_OPTION} DIR "
                         "at the folder of the GASP authors' feature tables (docs/eval-notes.md)")
    return folder
