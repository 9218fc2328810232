"""RAGBench loader: ``<root>/<subset>/<split>-*.parquet`` in the public release's layout."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from groundsense.errors import InputError

from .cases import Case, DropLog, LabelledSentence, locate_sentences
from .locations import benchmark_path


def load_ragbench(
    root: str | Path | None = None,
    *,
    subsets: Collection[str] | None = None,
    splits: Collection[str] | None = None,
) -> tuple[list[Case], DropLog]:
    """Load RAGBench rows as cases (default root ``<data>/ragbench``, all subsets and splits found).

    ``source_id`` groups rows of a subset that share their question text or their exact
    document list, transitively and across the subset's split files (see :func:`source_groups`).
    """
    folder = Path(root) if root is not None else benchmark_path("ragbench")
    found = sorted(p for p in folder.iterdir() if p.is_dir())
    absent = sorted(set(subsets or ()) - {p.name for p in found})
    if absent:
        raise InputError(f"no RAGBench subset {', '.join(absent)} in {folder}: check --subsets; the subsets there: "
                         f"{', '.join(p.name for p in found) or 'none'}")
    cases: list[Case] = []
    dropped = DropLog()
    chosen = [p for p in found if subsets is None or p.name in subsets]
    there = {file.name.split("-")[0] for subset_dir in chosen for file in subset_dir.glob("*.parquet")}
    if splits is not None and not there & set(splits):
        raise InputError(f"no RAGBench {', '.join(sorted(splits))} split in {folder} (subsets "
                         f"{', '.join(p.name for p in chosen) or 'none'}): check --split; the splits there: "
                         f"{', '.join(sorted(there)) or 'none'}")
    for subset_dir in chosen:
        frames = []
        for file in sorted(subset_dir.glob("*.parquet")):
            split = file.name.split("-")[0]
            if splits is None or split in splits:
                frames.append(pd.read_parquet(file).assign(file_split=split))
        if not frames:
            continue
        rows = pd.concat(frames, ignore_index=True)
        groups = source_groups(rows["question"].tolist(), [tuple(d) for d in rows["documents"]])
        for row, group in zip(rows.itertuples(index=False), groups):
            case = _to_case(subset_dir.name, row, f"ragbench:{subset_dir.name}:{group}", dropped)
            if case is not None:
                cases.append(case)
    return cases, dropped


def source_groups(questions: Sequence[str], documents: Sequence[tuple[str, ...]]) -> list[int]:
    """Connected components of rows linked by an identical question or identical documents.

    Returns, per row, the index of the first row of its component.
    """
    parent = list(range(len(questions)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for keys in (questions, documents):
        first: dict[object, int] = {}
        for i, key in enumerate(keys):
            j = first.setdefault(key, i)
            a, b = find(i), find(j)
            parent[max(a, b)] = min(a, b)
    return [find(i) for i in range(len(parent))]


def _key(key: object) -> str:
    """Sentence key as in ``response_sentences``: the annotator sometimes wrote ``a.`` for ``a``."""
    return str(key).strip().rstrip(".")


def _to_case(subset: str, row: Any, source_id: str, dropped: DropLog) -> Case | None:
    # ``row``: an ``itertuples`` row, a namedtuple whose fields are the parquet file's columns (typed only at run time)
    case_id = f"ragbench:{subset}:{row.file_split}:{row.id}:{row.generation_model_name}"
    answer = row.response
    if not answer.strip():
        dropped.add(case_id, "empty answer")
        return None
    keys = [_key(k) for k, _ in row.response_sentences]
    texts = [str(t) for _, t in row.response_sentences]
    if not keys:
        dropped.add(case_id, "no sentences")
        return None
    unsupported = {_key(k) for k in row.unsupported_response_sentence_keys}
    if not unsupported <= set(keys):
        dropped.add(case_id, f"unsupported key not among the sentences: {sorted(unsupported - set(keys))}")
        return None
    spans = locate_sentences(answer, texts)
    missing = [k for k, span in zip(keys, spans) if span is None]
    if missing:
        dropped.add(case_id, f"sentence not found in the response: keys {missing}")
        return None
    sentences = [LabelledSentence(s[0], s[1], k in unsupported) for k, s in zip(keys, spans) if s is not None]
    return Case(
        id=case_id,
        source_id=source_id,
        task=subset,
        question=row.question,
        context=None,
        passages=[str(d) for d in row.documents],
        answer=answer,
        sentences=sentences,
        benchmark="ragbench",
        split=row.file_split,
        meta={"model": str(row.generation_model_name)},
    )
