"""The bad-input corpus: hostile, malformed and unusual requests, each with its expected
outcome. ``tests/corpus/test_corpus.py`` runs every case through every entry point.

A case is a request body (the bytes piped to `groundsense detect`, posted to the HTTP API
and written as one line of a batch file) and one of three outcomes:

- ``Error(message)``: refused with a message containing ``message`` (exit 2, HTTP 422,
  an ``error`` record in a batch, :class:`InputError` from Python; `groundsense detect` may say
  another, ``on_the_command_line``: given nothing on stdin, it says what to give);
- ``Accepted(...)``: a result whose offsets round-trip (``answer[start:end] == text``),
  optionally with every sentence scored, some unscored, or a warning;
- both say what to fix or what was not judged; none is a traceback, exit 1 or a 500.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

P0 = "The Golden Gate Bridge opened to traffic on May 27, 1937."
P1 = "The bridge's main span is 4,200 feet long."
ANSWER = "Its main span is 4,200 feet long. It was painted gold in 1990."
BASE = {"question": "How long is the main span?", "passages": [P0, P1], "answer": ANSWER}
WORD = ("pneumonoultramicroscopicsilicovolcanoconiosis" * 1200)[:50_000]  # a 50k-character word


@dataclass(frozen=True)
class Error:
    message: str
    on_the_command_line: str | None = None  # where `groundsense detect` says otherwise (nothing piped)

    def of_the_cli(self) -> str:
        return self.on_the_command_line or self.message


@dataclass(frozen=True)
class Accepted:
    unscored: bool = False  # some sentence is past the answer cap: status "unscored", flagged None
    warned: bool = False  # the result carries a warning (text the scorer was not trained for)
    n_sentences: int | None = None
    texts: tuple[str, ...] | None = None  # the sentences, exactly


@dataclass(frozen=True)
class Case:
    name: str
    body: bytes
    outcome: Error | Accepted
    in_batch: bool = True  # a blank body is no batch line at all
    row: dict | None = field(default=None, compare=False)  # the parsed request, when it is JSON

    @property
    def needs_model(self) -> bool:
        return isinstance(self.outcome, Accepted)


def _case(name: str, row: object, outcome: Error | Accepted) -> Case:
    body = json.dumps(row, ensure_ascii=True).encode("ascii")  # \ud800 stays a JSON escape
    return Case(name, body, outcome, row=row if isinstance(row, dict) else None)


def _raw(name: str, body: bytes, outcome: Error, in_batch: bool = True) -> Case:
    return Case(name, body, outcome, in_batch)


def _with(**changes) -> dict:
    row = {**BASE, **changes}
    return {k: v for k, v in row.items() if v is not _DROP}


_DROP = object()
DEEP = b"[" * 100_000 + b"]" * 100_000
TWO_PASS = {"mode": "two_pass"}  # the costly accepted cases run the cheaper mode

CASES: list[Case] = [
    # -- not a JSON object --------------------------------------------------------------
    _raw("empty body", b"", Error("not valid JSON", on_the_command_line="no answer given"), in_batch=False),
    _raw("invalid JSON", b"{not json", Error("not valid JSON")),
    _raw("truncated JSON", json.dumps(BASE).encode()[:-5], Error("not valid JSON")),
    _raw("JSON list", b"[1, 2]", Error("must be a JSON object, not a list")),
    _raw("JSON null", b"null", Error("must be a JSON object, not null")),
    _raw("JSON string", b'"an answer"', Error("must be a JSON object, not a string")),
    _raw("deeply nested list", DEEP, Error("nested too deeply")),
    _raw("deeply nested answer", b'{"answer": ' + DEEP + b', "context": "x"}', Error("nested too deeply")),
    _raw("non-UTF-8 (Latin-1) body", json.dumps(_with(answer="Café au lait.")).encode().replace(b"\\u00e9", b"\xe9"),
         Error("not UTF-8")),
    _raw("UTF-16 body", json.dumps(BASE).encode("utf-16"), Error("is UTF-16 text")),
    _raw("integer too long to convert", b'{"answer": "A.", "context": "B.", "id": ' + b"9" * 5000 + b"}",
         Error("not JSON that can be read")),
    # -- missing, empty and wrongly typed fields ----------------------------------------------
    _case("empty object", {}, Error("no 'answer' field")),
    _case("answer missing", _with(answer=_DROP), Error("no 'answer' field")),
    _case("answer empty", _with(answer=""), Error("answer is empty")),
    _case("answer whitespace only", _with(answer="  \n\t \r\n"), Error("answer is empty")),
    _case("answer zero-width only", _with(answer="\u200b\ufeff\u200b\u2060"), Error("answer is empty")),
    _case("answer NUL only", _with(answer="\x00\x00 \x00"), Error("answer is empty")),
    _case("answer null", _with(answer=None), Error("'answer' must be a string, not null")),
    _case("answer a number", _with(answer=42), Error("'answer' must be a string, not an integer")),
    _case("answer a list", _with(answer=["A sentence."]), Error("'answer' must be a string, not a list")),
    _case("no evidence", {"answer": ANSWER}, Error("evidence is empty")),
    _case("context empty", _with(passages=_DROP, context=""), Error("evidence is empty")),
    _case("context zero-width only", _with(passages=_DROP, context="\u200b\ufeff"), Error("evidence is empty")),
    _case("passages empty list", _with(passages=[]), Error("evidence is empty")),
    _case("passages all blank", _with(passages=["", "  \n", "\u200b", "\x00"]), Error("evidence is empty")),
    _case("passages a string", _with(passages=P0), Error("'passages' must be a list of strings")),
    _case("passages of numbers", _with(passages=[1, 2]), Error("'passages[0]' must be a string")),
    _case("context and passages", _with(context=P0), Error("not both")),
    _case("context a number", _with(passages=_DROP, context=3.5), Error("'context' must be a string")),
    _case("question a number", _with(question=5), Error("'question' must be a string")),
    _case("id an object", _with(id={"a": 1}), Error("'id' must be a string or an integer")),
    _case("id a boolean", _with(id=True), Error("'id' must be a string or an integer")),
    _case("source a list", _with(source=["doc"]), Error("'source' must be a string or an integer")),
    # -- lone surrogates ----------------------------------------------------------------
    _case("lone surrogate in the answer", _with(answer="Its main span\ud800 is long."), Error("lone UTF-16 surrogate")),
    _case("lone low surrogate in the answer", _with(answer="\udc00"), Error("lone UTF-16 surrogate")),
    _case("lone surrogate in a passage", _with(passages=[P0, "span \udfff"]), Error("'passages[1]' holds a lone")),
    _case("lone surrogate in the context", _with(passages=_DROP, context="x\ud83d"), Error("'context' holds a lone")),
    _case("lone surrogate in the question", _with(question="\ud800?"), Error("'question' holds a lone")),
    _case("lone surrogate in the id", _with(id="row-\ud800"), Error("'id' holds a lone")),
    # -- unknown fields and options -------------------------------------------------------
    _case("unknown field (typo)", _with(answr="typo"), Error("unknown field 'answr'")),
    _case("'passage' for 'passages'", {"answer": ANSWER, "passage": [P0, P1]}, Error("unknown field 'passage'")),
    _case("options.scorer", _with(options={"scorer": "Qwen/Qwen2.5-7B"}), Error("unknown option 'scorer'")),
    _case("options.trust_remote_code", _with(options={"trust_remote_code": True}), Error("unknown option")),
    _case("options a list", _with(options=[5]), Error("'options' must be an object")),
    _case("options.k zero", _with(options={"k": 0}), Error("'options.k'")),
    _case("options.k a billion", _with(options={"k": 1_000_000_000}), Error("from 1 to 50")),
    _case("options.k a float", _with(options={"k": 2.5}), Error("'options.k'")),
    _case("options.k a string", _with(options={"k": "5"}), Error("'options.k'")),
    _case("options.k infinite", _with(options={"k": 1e400}), Error("'options.k'")),
    _case("options.mode unknown", _with(options={"mode": "fast"}), Error("'options.mode' must be one of")),
    # -- sentence spans -------------------------------------------------------------------
    _case("spans an integer", _with(sentences=5), Error("'sentences' must be a non-empty list")),
    _case("spans a string", _with(sentences="0-33"), Error("'sentences' must be a non-empty list")),
    _case("spans empty", _with(sentences=[]), Error("'sentences' must be a non-empty list")),
    _case("span a triple", _with(sentences=[[0, 33, 1]]), Error("sentences[0] must be a pair of integers")),
    _case("span an integer", _with(sentences=[3]), Error("sentences[0] must be a pair of integers")),
    _case("span of floats", _with(sentences=[[0.0, 33.0]]), Error("sentences[0] must be a pair of integers")),
    _case("span of booleans", _with(sentences=[[False, True]]), Error("sentences[0] must be a pair of integers")),
    _case("span reversed", _with(sentences=[[33, 0]]), Error("0 <= start < end")),
    _case("span empty", _with(sentences=[[5, 5]]), Error("0 <= start < end")),
    _case("span out of range", _with(sentences=[[0, 9999]]), Error("0 <= start < end <= 62")),
    _case("span negative", _with(sentences=[[-1, 33]]), Error("0 <= start < end")),
    _case("spans a blank one", _with(sentences=[[0, 33], [33, 34]]), Error("holds no visible text")),
    _case("spans overlapping", _with(sentences=[[0, 33], [20, 62]]), Error("overlaps or comes before")),
    _case("spans out of order", _with(sentences=[[34, 62], [0, 33]]), Error("overlaps or comes before")),
    _case("spans duplicated", _with(sentences=[[0, 33], [0, 33]]), Error("overlaps or comes before")),
    # -- labels (a calibration's unsupported spans) ------------------------------------------
    _case("labels an object", _with(labels={"start": 0, "end": 5}), Error("'labels' must be a list")),
    _case("label a pair", _with(labels=[[0, 20]]), Error('labels[0] must be {"start": integer')),
    _case("label without an end", _with(labels=[{"start": 10}]), Error('labels[0] must be {"start": integer')),
    _case("label reversed", _with(labels=[{"start": 50, "end": 10}]), Error("0 <= start < end <= 62")),
    _case("label past the answer", _with(labels=[{"start": 50, "end": 9000}]), Error("0 <= start < end <= 62")),
    # -- accepted: unusual but valid ------------------------------------------------------
    _case("a plain request", BASE, Accepted(n_sentences=2)),
    Case("UTF-8 byte-order mark", b"\xef\xbb\xbf" + json.dumps(BASE).encode(), Accepted(n_sentences=2), row=BASE),
    _case("id an integer, question null, context null", _with(id=7, question=None, context=None), Accepted()),
    _case("labels are carried", _with(labels=[{"start": 34, "end": 62}]), Accepted()),
    _case("valid spans", _with(sentences=[[0, 33], [34, 62]]), Accepted(texts=(ANSWER[:33], ANSWER[34:]))),
    _case("options k=1 on a context", _with(passages=_DROP, context=f"{P0} {P1}", options={"k": 1}), Accepted()),
    _case("options two_pass", _with(options=TWO_PASS), Accepted()),
    _case("CRLF line ends", _with(answer=ANSWER.replace(". ", ".\r\n"), passages=_DROP, context=f"{P0}\r\n{P1}\r\n"),
          Accepted(texts=(ANSWER[:33], ANSWER[34:]))),
    _case("NUL between sentences", _with(answer=ANSWER.replace(". ", ".\x00")),
          Accepted(texts=(ANSWER[:33], ANSWER[34:]))),
    _case("NUL without a space", _with(answer="Its main span is 4,200 feet long\x00It was painted gold in 1990."),
          Accepted(texts=("Its main span is 4,200 feet long", "It was painted gold in 1990."))),
    _case("U+2028 line separator", _with(answer=ANSWER.replace(". ", ".\u2028")), Accepted(n_sentences=2)),
    _case("zero-width characters around sentences",
          _with(answer="\u200b" + ANSWER.replace(". ", ". \u200b\ufeff") + "\u200b"),
          Accepted(texts=(ANSWER[:33], ANSWER[34:]))),
    _case("ANSI escapes",
          _with(answer="Its main span is \x1b[31m4,200\x1b[0m feet long. \x1b]0;pwned\x07It opened in 1937."),
          Accepted()),
    _case("control characters", _with(answer="Its main\x07 span\x08 is 4,200\x7f feet long.\tIt opened in 1937."),
          Accepted()),
    _case("bidi override", _with(answer="Its main span is \u202e4,200 feet\u202c long."), Accepted(n_sentences=1)),
    _case("NUL inside a passage", _with(passages=[P0 + "\x00", "\x00" + P1]), Accepted()),
    _case("a zero-width passage among real ones", _with(passages=[P0, "\u200b\u200b", P1]), Accepted()),
    _case("RTL (Arabic and Hebrew)", _with(answer="افتتح الجسر عام 1937. הגשר נפתח בשנת 1937."), Accepted()),
    _case("emoji in answer and passages", _with(answer="Its main span 🌉 is 4,200 feet long. It opened 🎉 in 1937.",
                                                passages=["🌉 " + P0, P1 + " 🎉"]), Accepted(n_sentences=2)),
    _case("combining characters", _with(answer="Its main span is 4,200 fe\u0301et long. Cafe\u0301s line it."),
          Accepted(n_sentences=2)),
    _case("CJK", _with(answer="金门大桥于1937年通车。主跨长1280米。",
                       passages=["金门大桥于1937年5月27日通车。", "主跨长1280米。"]),
          Accepted(warned=True)),
    _case("runes", _with(answer="ᚠᚢᚦᚨᚱᚲ ᚷᚹᚺᚾᛁᛃ ᛇᛈᛉᛊ."), Accepted(warned=True)),
    _case("a 50k-character word as the answer", _with(answer=WORD, options=TWO_PASS),
          Accepted(unscored=True, n_sentences=1)),
    _case("a 50k-character word in the evidence", _with(passages=[P0, WORD, P1], options=TWO_PASS), Accepted()),
    _case("a huge answer", _with(answer=" ".join(f"Sentence {i} says the span is {i} feet." for i in range(500)),
                                 options=TWO_PASS), Accepted(unscored=True, n_sentences=500)),
    _case("a huge context", _with(passages=_DROP, context=" ".join([P0, P1] * 1000), options=TWO_PASS), Accepted()),
    _case("many passages", _with(passages=[P0, P1] * 100, options=TWO_PASS), Accepted()),
]
