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


# Modules the docs may import from besides ``groundsense`` itself: the conformance kit, the Ray
# engine and the framework integrations (each its own extra), and the research harness (issue #54:
# to become its own package).
PUBLIC_MODULES = ("groundsense.testing", "groundsense.scale", "groundsense.integrations.", "groundsense_eval.")


def test_the_docs_import_only_from_the_public_surface():
    import re

    root = INIT.parents[2]
    imports = {(path.name, found) for path in [root / "README.md", *sorted((root / "docs").glob("*.md"))]
               for found in re.findall(r"^\s*from (groundsense[\w.]*) import", path.read_text(), re.MULTILINE)}
    private = sorted((name, module) for name, module in imports
                     if module != "groundsense" and not module.startswith(PUBLIC_MODULES))
    assert not private, f"import these from `groundsense` (add them to its __all__): {private}"
    assert any(module == "groundsense" for _, module in imports)


def test_the_python_guide_lists_every_public_name():
    guide = (INIT.parents[2] / "docs" / "python.md").read_text()
    assert [name for name in groundsense.__all__ if f"`{name}`" not in guide] == []


def test_ci_type_checks_a_users_script_against_the_public_surface():
    """CI's mypy run (.ci/run) checks tests/typing/user_script.py, whose assert_type calls fail
    where a public name is not its real type."""
    import tomllib

    root = INIT.parents[2]
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["mypy"]
    assert "tests/typing" in config["files"] and "assert_type(" in (root / "tests/typing/user_script.py").read_text()
