"""Reading the caller's files and JSON with errors a person can act on."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import IO, Any

from ..errors import InputError

_UTF16_MARKS = (b"\xff\xfe", b"\xfe\xff")


def decode(data: bytes, where: str) -> str:
    """UTF-8 bytes as text. A leading UTF-8 byte-order mark is dropped (editors on Windows
    write one); anything else that is not UTF-8 is refused with a hint."""
    if data.startswith(_UTF16_MARKS):
        raise InputError(f"{where} is UTF-16 text, not UTF-8; convert it, e.g. `iconv -f utf-16 -t utf-8`")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{where} is not UTF-8 text (byte {exc.start}); convert it from its encoding, "
            "e.g. `iconv -f latin1 -t utf-8` for Latin-1"
        ) from exc


def read_text(path: str | Path) -> str:
    try:
        return decode(Path(path).read_bytes(), str(path))
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from exc


def parse_json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from exc
    except RecursionError:
        raise InputError(f"{where} is JSON nested too deeply to read: flatten it (a request is one object)") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise InputError(f"{where} is not JSON that can be read: {exc}") from exc


def read_json_stream(stream: IO[bytes], where: str = "standard input") -> Any:
    return parse_json(decode(stream.read(), where), where)


def example_names() -> list[str]:
    folder = resources.files("groundsense") / "examples"
    return sorted(p.name.removesuffix(".json") for p in folder.iterdir() if p.name.endswith(".json"))


def load_example(name: str) -> dict:
    if name not in example_names():  # a name, never a path
        raise InputError(f"no shipped example {name!r}; choose one of: {', '.join(example_names())}")
    return json.loads((resources.files("groundsense") / "examples" / f"{name}.json").read_text(encoding="utf-8"))
