"""The packages' layering rule (docs/architecture.md), checked on every import statement,
deferred ones included: the core imports none of the layers above it, and the outer layers
never import the CLI; no two layers import each other. Within the core, the pipeline's stages import only the stages
before them (:data:`CORE_ORDER`). The product never imports the research harness (``groundsense_eval``,
a distribution of its own); that the harness imports only the product's public surface is
tests/test_public_surface.py's check.
And the tests share code only through the package ``tests/helpers``."""

import ast
import graphlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "groundsense"
HARNESS = ROOT / "harness" / "src" / "groundsense_eval"
TESTS = Path(__file__).resolve().parent
HARNESS_TESTS = ROOT / "harness" / "tests"
# Layer of each top-level part of the package; a module not named here is in the core.
# ``testing`` (the Detection conformance kit) drives the service's app, so it sits with the CLI.
LAYERS = {"service": 1, "scale": 1, "integrations": 1, "cli": 2, "testing": 2}
# The core's stages in pipeline order (docs/architecture.md: inputs -> scorer -> features -> calibration
# -> pipeline -> verification -> rows), each with the top-level parts it holds: a core module
# imports, at runtime, only its own stage and the stages before it.
CORE_ORDER = (
    ("errors", "progress", "weights", "lazy"),  # what every stage may use (lazy: the public packages' re-exports)
    ("inputs", "config"),  # the request as given, and the settings
    ("scorer",),
    ("features", "lexical", "result"),  # what is computed per sentence, and the result's types
    ("calibration", "judging"),  # judging: the deprecated name of calibration
    ("pipeline", "detection"),  # the detector, and the interface every detection implements
    ("verification",),
    ("rows",),
)


def layer_part(module: str) -> str:
    """The part of ``groundsense.a.b`` that decides its layer: ``a`` if it is a layered part
    (``groundsense.__main__``, ``python -m groundsense``, runs the CLI: it is part of it)."""
    parts = module.split(".")
    part = "cli" if parts[1:2] == ["__main__"] else parts[1] if len(parts) > 1 else ""
    return part if part in LAYERS else "core"


def module_name(path: Path) -> str:
    package = next(folder for folder in (PACKAGE, HARNESS) if path.is_relative_to(folder))
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, tree: ast.AST | None = None) -> set[str]:
    """Every groundsense or groundsense_eval module ``path`` (parsed: ``tree``) imports, relative imports resolved."""
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found = set()
    for node in ast.walk(tree or ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            found.add(target)
            found |= {f"{target}.{a.name}" for a in node.names}  # `from . import eval`
    return {m for m in found if m.split(".")[0] in ("groundsense", "groundsense_eval")}


def edges() -> list[tuple[str, str, str]]:
    """(importing module, its part, the imported part) for every import across parts."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = module_name(path)
        for target in imported_modules(path):
            if layer_part(target) != layer_part(source):
                out.append((source, layer_part(source), layer_part(target)))
    return out


def test_no_two_modules_import_each_other_even_through_others():
    """Module by module, imports (deferred ones, and those for annotations only under
    ``TYPE_CHECKING``, included) form no cycle. A module's import of a package above it is left
    out: that only names the package's namespace."""
    modules = {module_name(p): p for p in [*PACKAGE.rglob("*.py"), *HARNESS.rglob("*.py")]}
    graph = {m: {t for t in imported_modules(p) if t in modules and t != m and not m.startswith(t + ".")}
             for m, p in modules.items()}
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        pytest.fail(f"an import cycle: {' -> '.join(exc.args[1])}")


def rank(part: str) -> int:
    return LAYERS.get(part, 0)


def test_no_module_imports_a_layer_above_its_own_or_beside_it():
    upward = [f"{m} ({part}) imports {target}" for m, part, target in edges()
              if rank(target) > rank(part) or (rank(target) == rank(part) and target != part)]
    assert not upward, "\n".join(upward)


def test_the_rule_sees_relative_and_deferred_imports():
    assert "groundsense.verification.verifier" in imported_modules(PACKAGE / "verification" / "cascade.py")  # relative
    assert "groundsense.result" in imported_modules(PACKAGE / "calibration" / "adaptation.py")  # under TYPE_CHECKING
    assert layer_part("groundsense.service.app") == "service" and layer_part("groundsense.pipeline.detector") == "core"
    assert "groundsense_eval.caches.extract" in imported_modules(HARNESS / "reports" / "fusion.py")  # the harness's own


def core_stage(module: str) -> int | None:
    """The index in :data:`CORE_ORDER` of a core module's stage (None: the package's own ``__init__``)."""
    part = (module.split(".") + [""])[1]
    if not part:
        return None
    stage = next((i for i, parts in enumerate(CORE_ORDER) if part in parts), None)
    assert stage is not None, f"{module}: place groundsense.{part} in a stage of CORE_ORDER"
    return stage


def test_the_core_imports_only_its_own_stage_and_those_before_it():
    """Annotations included: a name used in annotations alone (under ``TYPE_CHECKING``) may not
    point up a stage either (the config holds plain values, not a calibration)."""
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        if layer_part(module) != "core" or (source := core_stage(module)) is None:
            continue
        upward += [f"{module} imports {target}" for target in sorted(imported_modules(path))
                   if layer_part(target) == "core" and (core_stage(target) or 0) > source]
    assert not upward, "\n".join(upward)


HARNESS_ORDER = ("data", "caches", "statistics", "reports", "fits", "cli")


def harness_part(module: str) -> str | None:
    """The subpackage of the harness (:data:`HARNESS_ORDER`) that ``module`` is in, if any."""
    parts = module.split(".")
    return parts[1] if parts[0] == "groundsense_eval" and len(parts) > 1 and parts[1] in HARNESS_ORDER else None


def test_harness_subpackages_import_only_the_ones_before_them():
    """data -> caches -> statistics -> reports -> fits -> cli (docs/architecture.md): no import goes back up
    the chain; every module of the harness is in one of them (its ``__init__`` aside)."""
    backward = set()
    for path in HARNESS.rglob("*.py"):
        source = harness_part(module_name(path))
        assert source or path == HARNESS / "__init__.py", f"{path}: place it in a subpackage of HARNESS_ORDER"
        for target in map(harness_part, imported_modules(path)):
            if source and target and HARNESS_ORDER.index(target) > HARNESS_ORDER.index(source):
                backward.add(f"{module_name(path)} ({source}) imports {target}")
    assert not backward, "\n".join(sorted(backward))


def test_the_architecture_docs_harness_table_names_every_module():
    """docs/architecture.md's table of the harness's subpackages says where each module lives."""
    lines = (ROOT / "docs" / "architecture.md").read_text().splitlines()
    rows = {line.split("`")[1].rstrip("/"): line for line in lines
            if line.startswith("| `") and line.split("`")[1].rstrip("/") in HARNESS_ORDER}
    unnamed = [f"{part}/{path.name}" for part in HARNESS_ORDER for path in sorted((HARNESS / part).glob("*.py"))
               if path.name != "__init__.py" and f"`{path.name}`" not in rows.get(part, "")]
    assert not unnamed, f"name them in docs/architecture.md's harness table: {', '.join(unnamed)}"


def test_the_product_never_imports_the_harness():
    """``pip install groundsense`` holds no harness: no product module may import it, even deferred."""
    found = [f"{module_name(path)} imports {target}" for path in sorted(PACKAGE.rglob("*.py"))
             for target in sorted(imported_modules(path)) if target.split(".")[0] == "groundsense_eval"]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("part", sorted(LAYERS))
def test_each_layer_exists(part):
    assert (PACKAGE / part).is_dir() or (PACKAGE / f"{part}.py").exists()


def test_tests_share_code_only_through_helpers():
    """No file under tests/ or harness/tests/ imports a test module, a conftest or a folder of tests
    other than ``helpers`` (on pytest's ``pythonpath``): such an import works only when pytest happened
    to put that module's folder on ``sys.path`` before, and not when a file is collected alone."""
    found = []
    for root in (TESTS, HARNESS_TESTS):
        local = ({p.stem for p in root.rglob("*.py") if p.relative_to(root).parts[0] != "helpers"}
                 | {p.name for p in root.iterdir() if p.is_dir() and p.name != "helpers"}) - {"__init__"}
        for path in sorted(root.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    names = [node.module]
                else:
                    continue
                found += [f"{path.relative_to(ROOT)} imports {name}" for name in names
                          if name.split(".")[0] in local]
    assert not found, "move what they share into tests/helpers:\n" + "\n".join(found)
