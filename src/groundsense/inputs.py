"""Reading the caller's files and JSON with errors a person can act on."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import IO, Any

from .errors import InputError


def decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{where} is not UTF-8 text (byte {exc.start}); convert it, e.g. `iconv -f latin1 -t utf-8`"
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


def read_json_stream(stream: IO[bytes], where: str = "standard input") -> Any:
    return parse_json(decode(stream.read(), where), where)


def example_names() -> list[str]:
    folder = resources.files("groundsense") / "examples"
    return sorted(p.name.removesuffix(".json") for p in folder.iterdir() if p.name.endswith(".json"))


def load_example(name: str) -> dict:
    resource = resources.files("groundsense") / "examples" / f"{name}.json"
    if not resource.is_file():
        raise InputError(f"no shipped example {name!r}; choose one of: {', '.join(example_names())}")
    return json.loads(resource.read_text(encoding="utf-8"))
