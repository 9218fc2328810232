"""The core install leaves out the service's packages (the `service` extra): `groundsense serve`
then exits 2 saying what to install, while the other commands work without them. The wheel
test (tests/test_wheel.py) checks the same on a real install without the extra."""

import sys

import pytest
from click.testing import CliRunner

from groundsense.cli import cli


def hide(monkeypatch, package: str) -> None:
    """``package`` as an import sees a package that is not installed, and the service's modules
    (imported by earlier tests) imported afresh."""
    for name in [name for name in sys.modules if name.startswith("groundsense.service")]:
        monkeypatch.delitem(sys.modules, name)
    for name in [name for name in sys.modules if name == package or name.startswith(package + ".")] + [package]:
        monkeypatch.setitem(sys.modules, name, None)


@pytest.mark.parametrize("package", ["fastapi", "uvicorn", "prometheus_client"])
def test_serve_without_the_extra_exits_2_naming_it(monkeypatch, package):
    hide(monkeypatch, package)
    assert "serve " in CliRunner().invoke(cli, ["--help"]).output
    result = CliRunner().invoke(cli, ["serve"])
    assert result.exit_code == 2, result.output
    assert "pip install 'groundsense[service]'" in result.output and f"{package} is not installed" in result.output


def test_an_import_error_of_something_else_is_not_blamed_on_the_extra(monkeypatch):
    """Only the service's own packages count as the missing extra; any other missing module is
    a bug, reported as such (a traceback, exit 1)."""
    hide(monkeypatch, "groundsense.service.metrics")
    result = CliRunner().invoke(cli, ["serve"])
    assert result.exit_code == 1 and isinstance(result.exception, ModuleNotFoundError)
    assert "groundsense[service]" not in result.output
