"""The public surface, as httpx keeps its own: the ``__all__`` of ``groundsense`` and of each module
:data:`PUBLIC_MODULES` names, whose names a type checker sees as what they are (imported, or
under ``TYPE_CHECKING`` where they are imported when first used). Every other module is private:
the docs and the research harness (``groundsense-eval``) import only from the public surface."""

import ast
import re
from importlib import import_module
from pathlib import Path

import pytest

import groundsense

INIT = Path(groundsense.__file__)
ROOT = INIT.parents[2]
HARNESS = ROOT / "harness"

# The public modules (docs/architecture.md, "The public surface"), each with its own ``__all__``:
# the package, what research and extensions build on, the CLI's plugin API (``groundsense.cli``,
# for a command group such as `groundsense eval`), the conformance kit, and the extras' modules
# (the Ray engine, one module per framework integration). Any other module is private.
PUBLIC_MODULES = (
    "groundsense", "groundsense.calibration", "groundsense.verification", "groundsense.scorer",
    "groundsense.inputs", "groundsense.features", "groundsense.lexical", "groundsense.result",
    "groundsense.detection", "groundsense.config", "groundsense.errors", "groundsense.progress",
    "groundsense.weights", "groundsense.cli", "groundsense.testing", "groundsense.scale",
    *(f"groundsense.integrations.{framework}" for framework in
      ("guardrails", "llamaindex", "langchain", "haystack", "ragas", "dspy", "pydantic_ai", "mcp")),
)


def source(module: str) -> Path:
    path = ROOT / "src" / Path(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def declared(module: str) -> list[str]:
    """``module``'s ``__all__``, read from its source: a literal list, as type checkers need it."""
    tree = ast.parse(source(module).read_text())
    found = [node.value for node in tree.body if isinstance(node, ast.Assign)
             and [ast.unparse(t) for t in node.targets] == ["__all__"]]
    assert len(found) == 1 and isinstance(found[0], ast.List), f"{module}: declare one literal list __all__"
    return ast.literal_eval(found[0])


def type_checking_names(module: str) -> set[str]:
    tree = ast.parse(source(module).read_text())
    blocks = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
    return {alias.asname or alias.name for block in blocks for node in block.body
            if isinstance(node, ast.ImportFrom) for alias in node.names}


def bound(module: str) -> set[str]:
    """The names ``module`` binds where a type checker sees them: its top-level imports, functions,
    classes and assignments, and its imports under ``TYPE_CHECKING`` (names imported when first used)."""
    names = type_checking_names(module)
    for node in ast.parse(source(module).read_text()).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {alias.asname or alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            names |= {t.id for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                      if isinstance(t, ast.Name)}
    return names


def test_every_public_name_is_seen_by_a_type_checker_and_imports():
    assert type_checking_names("groundsense") == set(groundsense.__all__)
    for name in groundsense.__all__:
        assert getattr(groundsense, name).__name__ == name


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_every_name_of_a_public_all_resolves(module):
    """Each public module declares what it offers, once each, and every name of it imports; a
    package whose names are imported when first used imports each under ``TYPE_CHECKING`` too."""
    names = declared(module)
    assert len(set(names)) == len(names), f"{module}: a name twice in __all__"
    try:
        loaded = import_module(module)
    except ModuleNotFoundError as exc:  # an extra's module without its extra
        if exc.name and exc.name.split(".")[0] in ("groundsense", "groundsense_eval"):
            raise
        pytest.skip(f"{module} needs {exc.name}, not installed")
    assert list(loaded.__all__) == names
    unseen = sorted(set(names) - bound(module))
    assert not unseen, f"{module}: a type checker does not see {unseen} (import them under TYPE_CHECKING)"
    missing = [name for name in names if getattr(loaded, name, None) is None]
    assert not missing, f"{module}.__all__ names what it does not have: {missing}"


def test_the_public_packages_and_the_cli_help_load_no_torch():
    """The packages import their names when first used: importing them, and `groundsense -h`
    (the plugins' command groups listed), loads no torch."""
    import subprocess
    import sys

    code = ("import contextlib, runpy, sys\n"
            "import groundsense.calibration, groundsense.inputs, groundsense.scorer, groundsense.verification\n"
            "sys.argv = ['groundsense', '-h']\n"
            "with contextlib.suppress(SystemExit): runpy.run_module('groundsense', run_name='__main__')\n"
            "assert 'torch' not in sys.modules, 'torch was imported'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and "Usage:" in done.stdout, done.stderr


def product_imports(tree: ast.AST) -> list[tuple[int, str, str | None]]:
    """(line, product module, name) of every import of the product, deferred ones included:
    ``from groundsense.x import name``, and ``import groundsense.x`` or
    ``import_module("groundsense.x")`` (name None)."""
    found: list[tuple[int, str, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, None) for alias in node.names
                      if alias.name.split(".")[0] == "groundsense"]
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "groundsense":
            found += [(node.lineno, node.module or "", alias.name) for alias in node.names]
        elif (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None))
              in ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant)
              and str(node.args[0].value).split(".")[0] == "groundsense"):
            found.append((node.lineno, str(node.args[0].value), None))
    return found


def harness_code() -> list[Path]:
    """The harness's code and tests, and what its tests load from outside ``harness/``: the
    ``tests/helpers`` modules they import, and the ``benchmarks/`` scripts they run (named by path)."""
    outside = set()
    for path in (HARNESS / "tests").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("helpers."):
                outside.add(ROOT / "tests" / "helpers" / f"{node.module.split('.')[1]}.py")
            elif isinstance(node, ast.Constant) and re.fullmatch(r"benchmarks/\w+\.py", str(node.value)):
                outside.add(ROOT / str(node.value))
    return sorted(HARNESS.rglob("*.py")) + sorted(outside)


def outside_the_surface(module: str, name: str | None) -> str | None:
    """Why importing ``name`` from ``module`` (or the module itself) leaves the public surface, if it does."""
    if module not in PUBLIC_MODULES:
        return f"{module} is private"
    if name is None or f"{module}.{name}" in PUBLIC_MODULES or name in declared(module):
        return None
    return f"{name} is not in {module}.__all__"


def test_the_harness_imports_only_the_public_surface():
    """``groundsense-eval`` (its code and its tests, and the helpers and scripts its tests load)
    depends on groundsense's public API only: a
    module of :data:`PUBLIC_MODULES`, and only what its ``__all__`` names. Import a name from the
    public module that offers it; where none does, add it to that module's ``__all__`` on purpose
    (docs/architecture.md, "The public surface"), or use a public function instead."""
    found = []
    for path in harness_code():
        for line, module, name in product_imports(ast.parse(path.read_text())):
            if why := outside_the_surface(module, name):
                found.append(f"{path.relative_to(ROOT)}:{line}: {why}")
    assert not found, "\n".join(found)


def test_the_surface_check_sees_private_modules_names_and_deferred_imports():
    tree = ast.parse("import groundsense.verification.judge\n"
                     "def f():\n    from groundsense.calibration.fusion import RankFusion\n"
                     "    from groundsense.calibration import adjudicator, RankFusion, Adjudicator\n"
                     "    from groundsense import cli\n"
                     "    importlib.import_module('groundsense.scorer.kv')\n")
    whys = [outside_the_surface(module, name) for _, module, name in product_imports(tree)]
    assert whys == ["groundsense.verification.judge is private", "groundsense.calibration.fusion is private",
                    "adjudicator is not in groundsense.calibration.__all__", None,
                    "Adjudicator is not in groundsense.calibration.__all__", None, "groundsense.scorer.kv is private"]


def test_the_surface_check_reads_what_the_harness_tests_load_from_outside_it():
    loaded = {str(path.relative_to(ROOT)) for path in harness_code() if HARNESS not in path.parents}
    assert {"benchmarks/precision_agreement.py", "tests/helpers/labelled_sentences.py"} <= loaded


def test_the_package_is_marked_typed():
    assert (INIT.parent / "py.typed").is_file()


def test_the_docs_import_only_from_the_public_surface():
    """The README's and docs' code imports only what :data:`PUBLIC_MODULES`' ``__all__`` names (and
    from the harness's own modules, ``groundsense_eval``)."""
    imports = {(path.name, module, name.strip()) for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
               for module, names in re.findall(r"^\s*from (groundsense[\w.]*) import ([\w, ]+)$", path.read_text(),
                                               re.MULTILINE)
               for name in names.split(",") if name.strip()}
    imports |= {(path.name, module, None) for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
                for module in re.findall(r"^\s*import (groundsense[\w.]*)", path.read_text(), re.MULTILINE)}
    private = sorted(f"{doc}: {why}" for doc, module, name in imports
                     if module.split(".")[0] == "groundsense" and (why := outside_the_surface(module, name)))
    assert not private, f"import these from the public surface (docs/architecture.md): {private}"
    assert any(module == "groundsense" for _, module, _ in imports)


def test_the_python_guide_lists_every_public_name():
    guide = (ROOT / "docs" / "python.md").read_text()
    assert [name for name in groundsense.__all__ if f"`{name}`" not in guide] == []


def test_ci_type_checks_a_users_script_against_the_public_surface():
    """CI's mypy run (.ci/run) checks tests/typing/user_script.py, whose assert_type calls fail
    where a public name is not its real type."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert "tests/typing" in config["files"] and "assert_type(" in (ROOT / "tests/typing/user_script.py").read_text()
