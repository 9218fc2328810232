"""TofuEval MeetingBank loader: one case per (doc_id, topic, model_name) summary."""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import cast

import pandas as pd

from .cases import Case, DropLog, LabelledSentence, SentenceType, locate_sentences
from .locations import SPLITS as BENCHMARK_SPLITS
from .locations import benchmark_path, require_files

SPLITS = BENCHMARK_SPLITS["tofueval"]
_SUMMARY_KEY = ["doc_id", "topic", "model_name"]
_SPLIT_IDS = "document_ids_dev_test_split.json"


def _split_files(split: str) -> tuple[str, str]:
    """A split's labelled summary sentences and its meetings' transcripts."""
    return f"meetingbank_factual_eval_{split}.csv", f"meetingbank_{split}_doc.csv"


def load_tofueval(
    root: str | Path | None = None, *, splits: Collection[str] = SPLITS
) -> tuple[list[Case], DropLog]:
    """Load TofuEval MeetingBank summaries from ``<root>`` (default ``<data>/tofueval``).

    The answer is the summary's sentences (ordered by ``sent_idx``) joined by one space;
    ``sent_label == "no"`` marks an unsupported sentence. Meetings are checked against the
    official ``document_ids_dev_test_split.json`` ids.
    """
    folder = Path(root) if root is not None else benchmark_path("tofueval")
    require_files("tofueval", folder, [_SPLIT_IDS, *(name for split in splits for name in _split_files(split))])
    official = json.loads((folder / _SPLIT_IDS).read_text())
    cases: list[Case] = []
    dropped = DropLog()
    for split in splits:
        labels, transcript = _split_files(split)
        rows = pd.read_csv(folder / labels)
        docs = pd.read_csv(folder / transcript)
        transcripts = dict(zip(docs["meeting_id"], docs["source"]))
        allowed = set(official[split]["meetingbank"])
        for key, group in rows.groupby(_SUMMARY_KEY, sort=True):
            # grouped by the three string columns of _SUMMARY_KEY: the key is their three values
            case = _to_case(split, cast("tuple[str, str, str]", key), group, transcripts, allowed, dropped)
            if case is not None:
                cases.append(case)
    return cases, dropped


def sentence_type(error_types: str) -> SentenceType | None:
    """Map TofuEval's error taxonomy onto baseless/conflict where it does so unambiguously.

    ``Contradiction`` -> conflict (wins, as in RAGTruth); ``Extrinsic Information`` -> baseless;
    the other categories (mis-referencing, reasoning errors, meaning shifts...) -> None.
    """
    if "Contradiction" in error_types:
        return "conflict"
    if "Extrinsic Information" in error_types:
        return "baseless"
    return None


def _to_case(
    split: str,
    key: tuple[str, str, str],
    group: pd.DataFrame,
    transcripts: dict[str, str],
    allowed: set[str],
    dropped: DropLog,
) -> Case | None:
    doc_id, topic, model = key
    case_id = f"tofueval:{split}:{doc_id}|{topic}|{model}"
    if doc_id not in allowed:
        dropped.add(case_id, f"meeting not in the official {split} ids")
        return None
    if doc_id not in transcripts:
        dropped.add(case_id, "no transcript for the meeting")
        return None
    group = group.sort_values("sent_idx")
    duplicated = group.duplicated(subset=["sent_idx", "summ_sent", "sent_label"])
    for idx in group.loc[duplicated, "sent_idx"]:
        dropped.add(case_id, f"duplicate sentence row removed (case kept): sent_idx {idx}")
    group = group[~duplicated]
    indices = group["sent_idx"].tolist()
    if indices != list(range(1, len(indices) + 1)):
        dropped.add(case_id, f"sentence indices not 1..n, summary incomplete: {indices}")
        return None
    texts = [str(t).strip() for t in group["summ_sent"]]
    answer = " ".join(texts)
    sentences = []
    for span, (_, row) in zip(locate_sentences(answer, texts), group.iterrows()):
        unsupported = row["sent_label"] == "no"
        kind = sentence_type(str(row["type"])) if unsupported and pd.notna(row["type"]) else None
        # every text is a stripped piece of ``answer``, joined in order: each is found
        assert span is not None, f"{case_id}: sentence not found in the joined summary"
        sentences.append(LabelledSentence(span[0], span[1], unsupported, kind))
    return Case(
        id=case_id,
        source_id=f"tofueval:{doc_id}",
        task="MeetingSummary",
        question=topic,
        context=transcripts[doc_id],
        passages=None,
        answer=answer,
        sentences=sentences,
        benchmark="tofueval",
        split=split,
        meta={"model": model},
    )
