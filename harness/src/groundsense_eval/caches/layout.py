"""Where the evaluation's caches live (docs/evaluation.md, "Where the caches live"): one root
folder with a folder per kind of cache (``features``, ``verifiers``, ``attribution``), and the
report beside them. The default root is ``runs/`` in the working directory (gitignored); the
committed caches use ``results/``. Given a feature cache, the other caches are its siblings."""

from __future__ import annotations

from pathlib import Path

RUNS = Path("runs")


def cache_folder(kind: str, features: str | Path | None = None) -> Path:
    """The ``kind`` folder beside the feature cache ``features``, or under :data:`RUNS`."""
    return (Path(features).parent if features is not None else RUNS) / kind
