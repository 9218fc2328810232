"""Command groups from other distributions (``groundsense.commands`` entry points): `eval`, the
research harness's, is loaded by name where ``groundsense-eval`` is installed, and names that
package where it is not."""

from importlib.metadata import EntryPoint

from helpers.cli import run

from groundsense.cli import plugins


def test_eval_comes_from_the_harness_entry_point():
    (point,) = [p for p in plugins.plugins().values() if p.name == "eval"]
    assert point.value == "groundsense_eval.cli:eval_group"
    listed = run("--help")
    assert listed.exit_code == 0 and "eval" in listed.output.split("Commands:")[1]
    assert "extract" in run("eval", "--help").output


def test_without_the_harness_eval_names_the_package_to_install(monkeypatch):
    monkeypatch.setattr(plugins, "plugins", dict)
    for args in (["eval"], ["eval", "case", "ragtruth:16"], ["eval", "--help"]):
        result = run(*args)
        assert result.exit_code == 2, result.output
        assert "pip install groundsense-eval" in result.output and "pip install -e harness" in result.output
    assert "Needs groundsense-eval" not in run("--help").output  # listed by its summary only
    assert "eval" in run("--help").output.split("Commands:")[1]


def test_a_broken_entry_point_is_refused_by_name_and_leaves_the_rest_of_the_cli_working(monkeypatch):
    points = {"notacommand": EntryPoint("notacommand", "groundsense.cli.plugins:KNOWN", plugins.GROUP),
              "missing": EntryPoint("missing", "groundsense_no_such_plugin.cli:group", plugins.GROUP)}
    monkeypatch.setattr(plugins, "plugins", lambda: points)
    result = run("notacommand")
    assert result.exit_code == 2
    assert "'notacommand' (groundsense.cli.plugins:KNOWN) is not a click command" in result.output
    result = run("missing", "anything")
    assert result.exit_code == 2 and "fails to import (ModuleNotFoundError" in result.output
    assert "reinstall the package that provides it" in result.output
    listed = run("--help")
    assert listed.exit_code == 0 and "(broken: fails to import)" in listed.output and "detect" in listed.output


def test_an_unknown_command_is_still_unknown():
    result = run("evaluate")
    assert result.exit_code == 2 and "No such command 'evaluate'" in result.output
