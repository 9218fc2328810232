"""Batch records (see :mod:`groundsense.rows.batch`) as Arrow tables with one fixed schema.

Every block the Ray engine produces has this schema, so blocks concatenate and Parquet
files of one run read as one table. A record is a row: a detection leaves ``error`` null,
an error record leaves the detection's fields null. ``id`` is stored as text (an integer
id 7 becomes ``"7"``): one type for the column whatever the input held.
"""

from __future__ import annotations

import pyarrow as pa

from ..features import SENTENCE_VALUES

_int, _float, _str, _bool = pa.int64(), pa.float64(), pa.string(), pa.bool_()

_SUPPORT = pa.struct([
    ("chunk", _int), ("start", _int), ("end", _int), ("text", _str), ("drop", _float), ("passage", _int),
])
_SENTENCE = pa.struct([
    ("index", _int), ("start", _int), ("end", _int), ("text", _str), ("score", _float), ("flagged", _bool),
    ("features", pa.struct([(name, _float) for name in SENTENCE_VALUES])),
    ("drops", pa.list_(_float)), ("jsds", pa.list_(_float)), ("support", _SUPPORT),
    ("status", _str), ("reason", _str), ("verifier_score", _float), ("absent", pa.list_(_str)),
    ("in_cut_evidence", pa.list_(_str)), ("fused", _float), ("ranks", pa.map_(_str, _float)),
    ("explanation", _str),
])
_ANSWER = pa.struct([
    ("gap", _float), ("min_sentence_gap", _float), ("n_sentences", _int), ("n_flagged", _int),
    ("n_unscored", _int), ("flagged", _bool), ("score", _float), ("threshold", _float),
])
_TRUNCATED = pa.struct([
    ("context", _bool), ("answer", _bool), ("context_tokens_removed", _int), ("answer_tokens_unscored", _int),
])
_CHUNK = pa.struct([("index", _int), ("start", _int), ("end", _int), ("passage", _int)])
_CASCADE = pa.struct([("verifier", _str), ("escalate", _float), ("threshold", _float), ("n_escalated", _int)])

RECORD_SCHEMA = pa.schema([
    ("id", _str), ("line", _int), ("error", pa.struct([("type", _str), ("message", _str)])),
    ("scorer", _str), ("precision", _str), ("threads", _int), ("mode", _str), ("leave_one_out", _str),
    ("k", _int), ("max_context_tokens", _int), ("max_answer_tokens", _int),
    ("score_rule", _str), ("detector", _str),
    ("threshold", _float), ("sentences", pa.list_(_SENTENCE)), ("answer", _ANSWER), ("truncated", _TRUNCATED),
    ("chunks", pa.list_(_CHUNK)), ("cascade", _CASCADE), ("warnings", pa.list_(_str)),
])
_DETECTION_FIELDS = RECORD_SCHEMA.names[3:]


def records_table(records: list[dict]) -> pa.Table:
    """Batch records as a table of :data:`RECORD_SCHEMA`. A top-level field the schema lacks
    raises rather than being dropped (tests/scale/test_ray_batch.py round-trips the nested ones)."""
    rows = []
    for record in records:
        unknown = set(record) - set(RECORD_SCHEMA.names)
        if unknown:
            raise ValueError(f"record fields missing from RECORD_SCHEMA: {sorted(unknown)}")
        rows.append({**record, "id": None if record.get("id") is None else str(record["id"])})
    return pa.Table.from_pylist(rows, schema=RECORD_SCHEMA)


def table_records(table: pa.Table) -> list[dict]:
    """The records back, each with the keys a local batch record has."""
    records = []
    for row in table.to_pylist():
        if row["error"] is not None:
            records.append({"id": row["id"], "line": row["line"], "error": row["error"]})
        else:
            record = {key: row[key] for key in ("id", "line", *_DETECTION_FIELDS)}
            for sentence in record["sentences"] or []:  # Arrow gives a map back as (key, value) pairs
                sentence["ranks"] = None if sentence["ranks"] is None else dict(sentence["ranks"])
            records.append(record)
    return records
