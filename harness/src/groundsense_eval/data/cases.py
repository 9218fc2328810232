"""The common case type every benchmark loader produces, and the helpers they share."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

import pandas as pd

from groundsense.inputs import Span
from groundsense.verification import SentenceInput

SentenceType = Literal["baseless", "conflict"]

@dataclass(frozen=True)
class LabelledSentence:
    """One answer sentence: ``answer[start:end]`` is its text."""

    start: int
    end: int
    unsupported: bool
    type: SentenceType | None = None


@dataclass
class Case:
    """One answer to check, with its evidence and per-sentence labels.

    Exactly one of ``context`` (a single document) and ``passages`` (retrieved passages) is set.
    ``split`` is the benchmark's own split (``train``/``test``, ``dev``/``test``, ``validation``);
    ``meta`` holds benchmark extras such as RAGTruth's ``quality`` or the generator model.
    """

    id: str
    source_id: str
    task: str
    question: str
    context: str | None
    passages: list[str] | None
    answer: str
    sentences: list[LabelledSentence]
    benchmark: str
    split: str | None = None
    meta: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if (self.context is None) == (self.passages is None):
            raise ValueError(f"case {self.id}: exactly one of context and passages must be set")
        for s in self.sentences:
            if not 0 <= s.start < s.end <= len(self.answer):
                raise ValueError(f"case {self.id}: sentence span {s.start}:{s.end} outside the answer")

    @property
    def unsupported(self) -> bool:
        """Whether any sentence of the answer is unsupported."""
        return any(s.unsupported for s in self.sentences)

    def sentence_text(self, sentence: LabelledSentence) -> str:
        return self.answer[sentence.start : sentence.end]

    def sentence_input(self) -> SentenceInput:
        """The case as a verifier reads it: its labelled sentences, without their labels."""
        spans = [Span(s.start, s.end) for s in self.sentences]
        return SentenceInput(self.question, self.answer, spans, self.context, self.passages)


@dataclass
class DropLog:
    """What a loader left out, and why: ``(case id, reason)`` entries."""

    entries: list[tuple[str, str]] = field(default_factory=list)

    def add(self, case_id: str, reason: str) -> None:
        self.entries.append((case_id, reason))

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self.entries)

    def reasons(self) -> Counter[str]:
        """Counts per reason, with case-specific detail after a colon stripped."""
        return Counter(reason.split(":")[0] for _, reason in self.entries)

    def summary(self) -> str:
        if not self.entries:
            return "dropped: none"
        lines = [f"dropped: {len(self.entries)}"]
        lines += [f"  {n:6d}  {reason}" for reason, n in self.reasons().most_common()]
        return "\n".join(lines)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.entries, columns=["case_id", "reason"])


def cases_summary(cases: Sequence[Case]) -> str:
    """Answers, sentences and unsupported counts per benchmark and task."""
    rows = [
        {
            "benchmark": c.benchmark,
            "task": c.task,
            "answers": 1,
            "unsupported_answers": int(c.unsupported),
            "sentences": len(c.sentences),
            "unsupported_sentences": sum(s.unsupported for s in c.sentences),
        }
        for c in cases
    ]
    if not rows:
        return "no cases"
    table = pd.DataFrame(rows).groupby(["benchmark", "task"]).sum()
    return table.to_string()


def locate_sentences(text: str, sentences: Iterable[str]) -> list[tuple[int, int] | None]:
    """Character spans of ``sentences`` in ``text``, searched in order from a moving cursor.

    Each run of whitespace in a sentence matches any non-empty run of whitespace in ``text``
    (annotators often re-flowed newlines into spaces), so ``text[start:end]`` equals the
    sentence up to whitespace. ``None`` marks a sentence not found; the cursor then stays put.
    """
    spans: list[tuple[int, int] | None] = []
    cursor = 0
    for sentence in sentences:
        words = sentence.split()
        match = re.compile(r"\s+".join(map(re.escape, words))).search(text, cursor) if words else None
        spans.append(match.span() if match else None)
        if match:
            cursor = match.end()
    return spans


def overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether two half-open character spans share at least one character."""
    return a[0] < b[1] and b[0] < a[1]
