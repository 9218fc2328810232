"""The public surface, as httpx keeps its own: one ``__all__`` whose names a type checker sees
as what they are (imported under ``TYPE_CHECKING``), each imported at run time when first used."""

import ast
from pathlib import Path

import groundsense

INIT = Path(groundsense.__file__)


def type_checking_names() -> set[str]:
    tree = ast.parse(INIT.read_text())
    blocks = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
    return {alias.asname or alias.name for block in blocks for node in block.body
            if isinstance(node, ast.ImportFrom) for alias in node.names}


def test_every_public_name_is_seen_by_a_type_checker_and_imports():
    assert type_checking_names() == set(groundsense.__all__)
    for name in groundsense.__all__:
        assert getattr(groundsense, name).__name__ == name


def test_the_package_is_marked_typed():
    assert (INIT.parent / "py.typed").is_file()
