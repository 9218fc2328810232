"""An AlignScore-compatible route, so NeMo Guardrails' fact-checking rail can call groundsense.

NeMo's ``alignscore request`` action POSTs ``{"evidence": ..., "claim": ...}`` to its
configured endpoint (by default ``/alignscore_large``; AlignScore's server also has
``/alignscore_base``) and reads ``{"alignscore": score}``, a score in [0, 1] where higher
means supported; the rail blocks the answer below 0.5 (a threshold NeMo fixes). groundsense
answers 1.0 when it clears the claim (the answer verdict every entry point gives), and otherwise
half of :func:`groundsense.result.support_score` (the share of sentences judged supported, an
unjudged sentence counting as unsupported), at most 0.49: always below 0.5, so that NeMo blocks
every claim groundsense does not clear, while the value still says how much of it was supported. ``evidence`` is
one string (what NeMo sends: its retrieved chunks joined by newlines; split into K chunks like a
``context``) or a list of passages. There is no question: NeMo sends none.
"""

from __future__ import annotations

from ..errors import InputError
from ..inputs.text import is_blank
from ..inputs.validate import CheckedRow, check_object, check_row, check_text
from ..result import support_score

PATHS = ("/alignscore_large", "/alignscore_base")
FIELDS = ("evidence", "claim")


def alignscore_row(body: object) -> CheckedRow:
    """The detect request of an AlignScore request body, or an :class:`InputError`."""
    body = check_object(body)
    unknown = [key for key in body if key not in FIELDS]
    if unknown:
        raise InputError(f"unknown field {unknown[0][:40]!r}: an AlignScore request has 'evidence' and 'claim'")
    missing = [name for name in FIELDS if name not in body]
    if missing:
        raise InputError(f"no '{missing[0]}' field: an AlignScore request has 'evidence' and 'claim'")
    claim = check_text(body["claim"], "claim")
    if is_blank(claim):
        raise InputError("the claim is empty: give the text to check")
    evidence = body["evidence"]
    row: dict[str, str | list[str]]
    if isinstance(evidence, list):
        row = {"passages": [check_text(passage, f"evidence[{i}]") for i, passage in enumerate(evidence)]}
    else:
        row = {"context": check_text(evidence, "evidence")}
    return check_row({**row, "answer": claim})


def alignscore_response(result: dict) -> dict:
    share = support_score((s["flagged"] for s in result["sentences"]), result["answer"]["flagged"])
    return {"alignscore": 1.0 if share == 1.0 else min(share / 2, 0.49)}
