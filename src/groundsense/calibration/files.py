"""The calibration home's files, one format for its three kinds: a calibration, a fusion (one
mode's lexical fusion, or a fused cascade's), and the fused score's lexical fusions (both modes).

Each is one JSON object that begins with the same header, ``"kind"`` and ``"version"``, then
the object's fields, with ``made_with`` recording how it was made. One writer and one reader
serve the three. The reader refuses a file of another kind with what to do with it, and a file
of a later version with what to upgrade. A file written before the header existed is told apart
by its fields, and read as version 1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError

if TYPE_CHECKING:
    from importlib.abc import Traversable

CALIBRATION, FUSION, LEXICAL_FUSIONS = "calibration", "fusion", "lexical fusions"
KINDS = (CALIBRATION, FUSION, LEXICAL_FUSIONS)
VERSION = 1  # the format this groundsense writes and reads; a change a reader must know of raises it

_NAMES = {CALIBRATION: "a calibration", FUSION: "a fusion", LEXICAL_FUSIONS: "the fused score's lexical fusions"}


class WrongKind(InputError):
    """A file of another kind than the one read for: ``found`` names it ("a calibration"), so
    that a command can say where that file goes in its own terms."""

    def __init__(self, message: str, found: str) -> None:
        super().__init__(message)
        self.found = found


def file_text(kind: str, data: dict, *one_line: str) -> str:
    """A ``kind`` file's text: the header, then ``data`` as indented JSON, each value of its
    ``one_line`` mappings on one line (long arrays, read by programs: curves, references)."""
    return json_text({"kind": kind, "version": VERSION, **data}, *one_line)


def json_text(data: dict, *one_line: str) -> str:
    """``data`` as indented JSON, each value of a mapping named in ``one_line`` (at any depth) on
    one line."""
    lines: dict[str, str] = {}

    def marked(node: object, path: str) -> object:
        """``node`` with each one-line value replaced by a placeholder kept in ``lines``."""
        if not isinstance(node, dict):
            return node
        out: dict[str, object] = {}
        for key, value in node.items():
            if key in one_line and isinstance(value, dict):
                out[key] = {name: f"<{path}/{key}/{name}>" for name in value}
                lines.update({f"<{path}/{key}/{name}>": json.dumps(item, separators=(",", ":"))
                              for name, item in value.items()})
            else:
                out[key] = marked(value, f"{path}/{key}")
        return out

    text = json.dumps(marked(data, ""), indent=2)
    for placeholder, line in lines.items():
        text = text.replace(json.dumps(placeholder), line)
    return text + "\n"


def read_file(path: str | Path | Traversable, kind: str) -> dict:
    """The fields of the ``kind`` file at ``path``, without its header. A file of another kind
    or of a later version is refused with what to do instead."""
    data = _read_object(path, kind)
    # fields that show no kind are read as the kind asked for: its own checks say what is missing
    found = data.pop("kind", None) or _kind_by_fields(data) or kind
    if not isinstance(found, str):
        raise InputError(f"cannot read {kind} file {path}: its 'kind' must be one of {', '.join(map(repr, KINDS))}, "
                         f"not {found!r}")
    version = data.pop("version", 1)
    if not (isinstance(version, int) and not isinstance(version, bool) and version >= 1):
        raise InputError(f"cannot read {kind} file {path}: its 'version' must be a whole number from 1, "
                         f"not {version!r}")
    if version > VERSION:
        raise InputError(f"cannot read {kind} file {path}: it is of version {version} of the file format, from a "
                         f"later groundsense, and this one reads version {VERSION}: upgrade groundsense "
                         "(pip install -U groundsense)")
    if found != kind:
        raise WrongKind(f"{path} is {_NAMES.get(found, repr(found))}, not {_NAMES[kind]}: {_use(found, data, path)}",
                        _NAMES.get(found, repr(found)))
    return data


def file_kind(path: str | Path) -> str | None:
    """Which of :data:`KINDS` the file at ``path`` holds, by its header or its fields (None when
    neither says)."""
    data = _read_object(path, "calibration or fusion")
    return data.get("kind") or _kind_by_fields(data)


def _read_object(path: str | Path | Traversable, kind: str) -> dict:
    try:
        data = json.loads((Path(path) if isinstance(path, str) else path).read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {kind} file {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise InputError(f"cannot read {kind} file {path}: it holds no JSON object")
    return data


def _kind_by_fields(data: dict) -> str | None:
    """The kind of a file from before the header, by its fields: a fusion has references,
    lexical fusions a full and a two-pass fusion, a calibration statistics."""
    if "references" in data:
        return FUSION
    if "full" in data and "two_pass" in data:
        return LEXICAL_FUSIONS
    return CALIBRATION if "stats" in data else None


def _use(kind: str, data: dict, path: object) -> str:
    """Where a file of ``kind`` goes."""
    if kind == CALIBRATION:
        return "pass it with --calibration (Python: calibration=); it flags by the sensitivity score"
    if kind == LEXICAL_FUSIONS:
        return ("pass it with --fusion (Python: fusion=), without --verifier; `groundsense calibrate --adapt` "
                "wrote it for the fused score")
    if kind == FUSION and data.get("verifier"):
        return (f"it is a fused cascade's (verifier {data['verifier']}): detect with --verifier {data['verifier']} "
                f"--fuse --fusion {path}")
    if kind == FUSION:
        return ("it is one mode's lexical fusion, as the package ships them; `groundsense calibrate --adapt` "
                "writes a file of both modes for --fusion, and `--score sensitivity` a calibration")
    return f"this groundsense knows the kinds {', '.join(map(repr, KINDS))}; a later one may have written it"
