"""docs/verifiers.md's "A verifier of your own" installed as written: its Python block as
``my_package/verifier.py`` and its ``pyproject.toml`` entry points as the metadata pip writes."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "verifiers.md"


def blocks(language: str) -> str:
    """The section's first ``language`` block."""
    section = DOC.read_text(encoding="utf-8").split("## A verifier of your own\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(rf"```{language}\n(.*?)```", section, flags=re.S)
    assert found, f"docs/verifiers.md's 'A verifier of your own' lost its {language} block"
    return found.group(1)


def install(directory: Path, monkeypatch: pytest.MonkeyPatch, points: dict[str, str] | None = None) -> None:
    """Install the docs' package into ``directory`` (on ``sys.path``), with its
    ``groundsense.verifiers`` entry points, or ``points`` instead."""
    package = directory / "my_package"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "verifier.py").write_text(blocks("python"))
    table = blocks("toml").split('[project.entry-points."groundsense.verifiers"]\n', 1)[1]
    documented = dict(re.findall(r'^([\w.-]+) = "([^"]+)"$', table, flags=re.M))
    info = directory / "my_package-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-package\nVersion: 1.0\n")
    lines = [f"{name} = {value}" for name, value in (documented if points is None else points).items()]
    (info / "entry_points.txt").write_text("\n".join(["[groundsense.verifiers]", *lines, ""]))
    monkeypatch.syspath_prepend(str(directory))
    for name in ("my_package", "my_package.verifier"):  # imported afresh from this directory
        monkeypatch.delitem(sys.modules, name, raising=False)
