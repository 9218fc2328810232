"""RAGTruth loader: the processed one-file release and the original two-file layout.

Processed: one JSON object a line (``.jsonl`` or ``.jsonl.gz``) with ``id, split, source_id,
task_type, model, quality, query, context, output, hallucination_labels``.
Original (github.com/ParticleMedia/RAGTruth ``dataset/``): ``response.jsonl`` (``id, source_id,
model, labels, split, quality, response``) joined on ``source_id`` with ``source_info.jsonl``
(``task_type, source_info, prompt``).
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

from groundsense.inputs import segment_sentences

from .cases import Case, DropLog, LabelledSentence, SentenceType, overlaps
from .locations import BENCHMARK_PATHS, benchmark_path

# Responses in RAGTruth's test split, every one kept as a case (0 drops; tests/data/test_ragtruth.py):
# what a feature cache of the whole split holds (`groundsense eval ... --split-cache`).
TEST_SPLIT_ANSWERS = 2_700

_BLANK_LINE = re.compile(r"\n\s*\n")
_PASSAGE_PREFIX = re.compile(r"^passage \d+:\s*", re.IGNORECASE)


@dataclass
class _Record:
    """One response in layout-independent form."""

    id: str
    split: str
    source_id: str
    task: str
    question: str
    context: str
    answer: str
    labels: list[dict]
    quality: str
    model: str


def load_ragtruth(
    path: str | Path | None = None,
    *,
    splits: Collection[str] | None = None,
    tasks: Collection[str] | None = None,
    ids: Collection[str] | None = None,
    limit: int | None = None,
) -> tuple[list[Case], DropLog]:
    """Load RAGTruth responses as cases, one per response.

    ``path`` is the processed ``.jsonl[.gz]`` file or a folder holding either it or the
    original ``response.jsonl`` + ``source_info.jsonl``; default ``<data>/ragtruth/ragtruth.jsonl.gz``.
    ``splits``/``tasks``/``ids`` filter (``train``/``test``; ``QA``/``Summary``/``Data2txt``;
    case ids such as ``ragtruth:16``) before the costly sentence segmentation;
    ``limit`` stops reading once that many cases are kept.
    """
    cases: list[Case] = []
    dropped = DropLog()
    for record in _records(_resolve(path)):
        if (
            (splits is not None and record.split not in splits)
            or (tasks is not None and record.task not in tasks)
            or (ids is not None and f"ragtruth:{record.id}" not in ids)
        ):
            continue
        case = _to_case(record, dropped)
        if case is not None:
            cases.append(case)
            if limit is not None and len(cases) >= limit:
                break
    return cases, dropped


def _resolve(path: str | Path | None) -> Path:
    if path is None:
        return benchmark_path("ragtruth")
    path = Path(path)
    if path.is_dir() and not (path / "response.jsonl").exists():
        return path / BENCHMARK_PATHS["ragtruth"].name
    return path


def _read_jsonl(path: Path) -> Iterator[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                yield json.loads(line)


def _records(path: Path) -> Iterator[_Record]:
    if path.is_dir():
        yield from _original_records(path)
        return
    for row in _read_jsonl(path):
        labels = row["hallucination_labels"]
        yield _Record(
            id=str(row["id"]),
            split=row["split"],
            source_id=str(row["source_id"]),
            task=row["task_type"],
            question=row["query"],
            context=row["context"],
            answer=row["output"],
            labels=json.loads(labels) if isinstance(labels, str) else labels,
            quality=row.get("quality", ""),
            model=row.get("model", ""),
        )


def _original_records(folder: Path) -> Iterator[_Record]:
    sources = {str(s["source_id"]): s for s in _read_jsonl(folder / "source_info.jsonl")}
    for row in _read_jsonl(folder / "response.jsonl"):
        source = sources[str(row["source_id"])]
        task, info = source["task_type"], source["source_info"]
        if task == "QA":
            question, context = info["question"], info["passages"]
        else:
            context = info if isinstance(info, str) else f"{info}"
            question = _instruction(source.get("prompt", ""), context)
        yield _Record(
            id=str(row["id"]),
            split=row["split"],
            source_id=str(row["source_id"]),
            task=task,
            question=question,
            context=context,
            answer=row["response"],
            labels=row["labels"],
            quality=row.get("quality", ""),
            model=row.get("model", ""),
        )


def _instruction(prompt: str, context: str) -> str:
    """The prompt text before the source content (the original layout has no query field)."""
    at = prompt.find(context.strip()[:200])
    return prompt[:at].rstrip() if at > 0 else prompt


def split_passages(context: str) -> list[str]:
    """QA context -> passages: split on blank lines, drop a leading ``passage N:`` tag."""
    parts = (_PASSAGE_PREFIX.sub("", p.strip()) for p in _BLANK_LINE.split(context))
    return [p for p in parts if p]


def sentence_type(label_types: Collection[str]) -> SentenceType | None:
    """``conflict`` if any overlapping span is a Conflict, else ``baseless`` if any is Baseless Info."""
    if any("Conflict" in t for t in label_types):
        return "conflict"
    if any("Baseless" in t for t in label_types):
        return "baseless"
    return None


def _to_case(record: _Record, dropped: DropLog) -> Case | None:
    case_id = f"ragtruth:{record.id}"
    answer = record.answer
    if not answer.strip():
        dropped.add(case_id, "empty answer")
        return None
    for label in record.labels:
        if answer[label["start"] : label["end"]] != label["text"]:
            dropped.add(case_id, f"label span text mismatch: {label['start']}:{label['end']}")
            return None
    spans = [(s.start, s.end) for s in segment_sentences(answer)]
    if not spans:
        dropped.add(case_id, "no sentences")
        return None
    sentences = []
    covered = set()
    for span in spans:
        hits = [i for i, label in enumerate(record.labels) if overlaps(span, (label["start"], label["end"]))]
        covered.update(hits)
        kind = sentence_type([record.labels[i]["label_type"] for i in hits])
        sentences.append(LabelledSentence(span[0], span[1], bool(hits), kind))
    if len(covered) < len(record.labels):
        dropped.add(case_id, "labelled span outside every sentence")
        return None
    is_qa = record.task == "QA"
    return Case(
        id=case_id,
        source_id=f"ragtruth:{record.source_id}",
        task=record.task,
        question=record.question,
        context=None if is_qa else record.context,
        passages=split_passages(record.context) if is_qa else None,
        answer=answer,
        sentences=sentences,
        benchmark="ragtruth",
        split=record.split,
        meta={"quality": record.quality, "model": record.model},
    )
