"""One check of a detect request, shared by every entry point.

The CLI (`detect`, `batch`), the Python API and the HTTP service all pass a request row
through :func:`check_row`, so they accept and refuse the same inputs with the same
messages. Everything here runs before any model work.

Decisions (docs/reliability.md):

- a lone UTF-16 surrogate (e.g. JSON ``"\\ud800"``) is refused, not replaced: it is not
  Unicode, and replacing it would change the caller's text and so their offsets;
- text made only of invisible characters (whitespace, NUL, U+200B, U+FEFF) is empty;
- ``k`` is at most :data:`MAX_K`;
- unknown fields are refused (a typo such as ``passage`` must not drop the evidence).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict, TypeGuard

from ..errors import InputError
from .text import Span, is_blank

MAX_K = 50  # chunks a context string may be split into; each costs one more scorer pass
MODES = ("full", "two_pass")
PRECISIONS = ("auto", "fp32", "bf16", "int8")  # the scorer's numbers (groundsense.scorer.loading)
# ``labels`` (unsupported spans) and ``source`` (the document or question an answer comes from,
# which `groundsense fit` keeps within one cross-validation fold) are read by calibrate and fit
FIELDS = ("id", "question", "context", "passages", "answer", "sentences", "options", "labels", "source")
STREAM_FIELDS = ("id", "question", "context", "passages", "options")
OPTIONS = ("k", "mode")

EMPTY_ANSWER = "the answer is empty: give the answer text to check"
EMPTY_EVIDENCE = (
    "the evidence is empty: with no context the full- and no-context conditions are the same "
    "prompt, so every sentence would score 0 and nothing could be judged. Pass the retrieved "
    "evidence as a context string or a list of passages."
)


class RequestOptions(TypedDict, total=False):
    """The detector options a request asks for: only those it gives."""

    k: int
    mode: str


class StreamArguments(TypedDict):
    """A streamed request's evidence and question: ``Detection.stream``'s keyword arguments.
    Exactly one of ``context`` and ``passages`` is set."""

    question: str
    context: str | None
    passages: list[str] | None


class RowArguments(StreamArguments):
    """A request row's ``answer`` with its evidence and question, and its ``sentences`` as given
    (checked: :attr:`CheckedRow.spans` holds them as spans)."""

    answer: str
    sentences: Sequence[Sequence[int]] | None


@dataclass(frozen=True)
class CheckedRow:
    """A valid request: its ``id``, the keyword arguments of ``Detector.detect``, the
    detector ``options`` it asks for (``k``, ``mode``; only those given) and its checked
    sentence ``spans`` (None: the answer is to be segmented). ``Detection.detect_checked``
    takes one as it is, so that a request is checked once."""

    id: str | int | None
    arguments: RowArguments
    options: RequestOptions = field(default_factory=RequestOptions)
    spans: tuple[Span, ...] | None = None


@dataclass(frozen=True)
class CheckedHead:
    """A valid first line of a streamed request: its ``id``, its evidence and question, and the
    detector ``options`` it asks for."""

    id: str | int | None
    arguments: StreamArguments
    options: RequestOptions


def check_text(value: object, name: str) -> str:
    """``value`` as a string that is valid Unicode, or an :class:`InputError` naming ``name``."""
    if not isinstance(value, str):
        raise InputError(f"'{name}' must be a string, not {_kind(value)}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"'{name}' holds a lone UTF-16 surrogate (U+{ord(value[exc.start]):04X}) at character {exc.start}, "
            "which is not Unicode text: fix the text's encoding where it was produced"
        ) from None
    return value


def check_inputs(answer: object, context: object, passages: object) -> None:
    """Refuse an answer or evidence that cannot be scored (wrong type, invalid Unicode, empty)."""
    answer = check_text(answer, "answer")
    if is_blank(answer):
        raise InputError(EMPTY_ANSWER)
    check_evidence(context, passages)


def check_evidence(context: object, passages: object) -> None:
    """Refuse evidence that cannot be scored: both forms given, wrong type, invalid Unicode, empty."""
    if context is not None and passages is not None:
        raise InputError("give the evidence either as one context string or as a list of passages, not both")
    if passages is not None:
        if not isinstance(passages, list):
            raise InputError(f"'passages' must be a list of strings, not {_kind(passages)}")
        texts = [check_text(p, f"passages[{i}]") for i, p in enumerate(passages)]
    else:
        texts = [] if context is None else [check_text(context, "context")]
    if all(is_blank(t) for t in texts):
        raise InputError(EMPTY_EVIDENCE)


def check_labels(labels: object, answer: str) -> None:
    """A row's ``labels`` (the unsupported text a calibration learns from): a list, maybe empty,
    of ``{"start", "end"}`` integer character offsets inside the answer."""
    if not isinstance(labels, list):
        raise InputError(f"'labels' must be a list of {{\"start\", \"end\"}} character spans of the answer's "
                         f"unsupported text ([] for none), not {_kind(labels)}")
    for i, label in enumerate(labels):
        if not isinstance(label, dict) or not all(_is_int(label.get(key)) for key in ("start", "end")):
            raise InputError(f"labels[{i}] must be {{\"start\": integer, \"end\": integer}}, not {_short(label)}")
        if not 0 <= label["start"] < label["end"] <= len(answer):
            raise InputError(f"labels[{i}] = {{\"start\": {label['start']}, \"end\": {label['end']}}} must lie inside "
                             f"the answer, with 0 <= start < end <= {len(answer)} (its length in characters)")


def check_spans(spans: object, answer: str) -> list[Span]:
    """Caller-given sentence spans: a list of ``[start, end]`` integer pairs inside the
    answer, in order and not overlapping, each with visible text."""
    if not isinstance(spans, list) or not spans:
        raise InputError("'sentences' must be a non-empty list of [start, end] character offsets into the answer")
    checked: list[Span] = []
    for i, pair in enumerate(spans):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not all(_is_int(v) for v in pair):
            raise InputError(f"sentences[{i}] must be a pair of integers [start, end], not {_short(pair)}")
        span = Span(int(pair[0]), int(pair[1]))
        if not 0 <= span.start < span.end <= len(answer):
            raise InputError(
                f"sentences[{i}] = [{_short(span.start)}, {_short(span.end)}] must lie inside the answer, with "
                f"0 <= start < end <= {len(answer)} (its length in characters)"
            )
        if is_blank(answer[span.start : span.end]):
            raise InputError(f"sentences[{i}] = [{span.start}, {span.end}] holds no visible text: give the spans "
                             "of the sentences themselves")
        if checked and span.start < checked[-1].end:
            raise InputError(
                f"sentences[{i}] = [{span.start}, {span.end}] overlaps or comes before sentences[{i - 1}] = "
                f"[{checked[-1].start}, {checked[-1].end}]: give the spans in order, without overlap"
            )
        checked.append(span)
    return checked


def check_options(options: object) -> RequestOptions:
    """Per-request detector options: ``k`` (1..MAX_K) and ``mode``; only those given."""
    checked = RequestOptions()
    if options is None:
        return checked
    if not isinstance(options, Mapping):
        raise InputError(f"'options' must be an object with k and/or mode, not {_kind(options)}")
    unknown = [key for key in options if key not in OPTIONS]
    if unknown:
        raise InputError(f"unknown option {_short(unknown[0])}: the options are {', '.join(OPTIONS)}")
    k, mode = options.get("k"), options.get("mode")
    if k is not None:
        checked["k"] = check_k(k, "options.k")
    if mode is not None:
        if mode not in MODES:
            raise InputError(f"'options.mode' must be one of {', '.join(MODES)}, not {_short(mode)}")
        checked["mode"] = mode
    return checked


def check_k(k: object, name: str = "k") -> int:
    if not _is_int(k) or not 1 <= k <= MAX_K:
        raise InputError(f"'{name}' (the number of context chunks) must be an integer from 1 to {MAX_K}, "
                         f"not {_short(k)}")
    return int(k)


def check_object(row: object) -> Mapping[Any, Any]:
    if not isinstance(row, Mapping):
        raise InputError(f"each input must be a JSON object, not {_kind(row)}")
    return row


def _check_head(row: object, fields: tuple[str, ...]) -> tuple[str | int | None, str]:
    """A row's known fields, its ``id`` and its ``question`` ("" when absent)."""
    row = check_object(row)
    unknown = [key for key in row if key not in fields]
    if unknown:
        raise InputError(f"unknown field {_short(unknown[0])}: the fields are {', '.join(fields)}")
    row_id = row.get("id")
    if row_id is not None and not (_is_int(row_id) or isinstance(row_id, str)):
        raise InputError(f"'id' must be a string or an integer, not {_kind(row_id)}")
    if isinstance(row_id, str):
        check_text(row_id, "id")
    question = row.get("question")
    return row_id, "" if question is None else check_text(question, "question")


def check_stream_head(row: object) -> CheckedHead:
    """The first line of a streamed request (:data:`STREAM_FIELDS`): the evidence, the
    question and options; the answer follows as :func:`check_delta` lines."""
    row_id, question = _check_head(row, STREAM_FIELDS)
    row = check_object(row)
    check_evidence(row.get("context"), row.get("passages"))
    arguments = StreamArguments(question=question, context=row.get("context"), passages=row.get("passages"))
    return CheckedHead(row_id, arguments, check_options(row.get("options")))


def check_delta(line: object) -> str:
    """A streamed line of answer text: ``{"delta": "..."}``."""
    line = check_object(line)
    if set(line) != {"delta"}:
        raise InputError('each line after the first must be {"delta": "<answer text>"}, '
                         f"not an object with {', '.join(map(_short, line)) or 'no field'}")
    return check_text(line["delta"], "delta")


def check_row(row: object) -> CheckedRow:
    """Validate one request row (a JSON object with the keys of :data:`FIELDS`)."""
    row_id, question = _check_head(row, FIELDS)
    row = check_object(row)
    source = row.get("source")
    if source is not None and not (_is_int(source) or isinstance(source, str)):
        raise InputError(f"'source' must be a string or an integer, not {_kind(source)}")
    if "answer" not in row:
        raise InputError("the input has no 'answer' field: give the answer text to check")
    check_inputs(row["answer"], row.get("context"), row.get("passages"))
    sentences = row.get("sentences")
    spans = None if sentences is None else tuple(check_spans(sentences, row["answer"]))
    if "labels" in row:
        check_labels(row["labels"], row["answer"])
    arguments = RowArguments(answer=row["answer"], context=row.get("context"), passages=row.get("passages"),
                             question=question, sentences=sentences)
    return CheckedRow(row_id, arguments, check_options(row.get("options")), spans)


def check_rows(rows: Iterable[object]) -> list[CheckedRow]:
    """Validate every row before any is scored: a bad one raises, named by its index (and ``id``,
    when it has a valid one), so that a list's mistake costs no scoring."""
    checked = []
    for index, row in enumerate(rows):
        try:
            checked.append(check_row(row))
        except InputError as exc:
            row_id = echo_id(row)
            raise InputError(f"row {index}{'' if row_id is None else f' (id {row_id!r})'}: {exc}") from exc
    return checked


def echo_id(row: object) -> str | int | None:
    """The ``id`` to echo in a row's error record: the row's own when it is valid, else None."""
    row_id = row.get("id") if isinstance(row, Mapping) else None
    if _is_int(row_id):
        return row_id
    try:
        return check_text(row_id, "id")
    except InputError:
        return None


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _kind(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _short(value: object, limit: int = 40) -> str:
    """A value for a message: its repr (which escapes control characters), cut short."""
    try:
        text = repr(value)
    except (ValueError, RecursionError):  # an integer of more digits than Python prints, lists nested too deep
        text = f"{_kind(value)} too large to show"
    return text if len(text) <= limit else text[: limit - 1] + "…"
