"""The documents' commands and code are the product's: every `groundsense` command line of
README.md, CONTRIBUTING.md and docs/ (in a shell block, or inline as `groundsense CMD --opt` or
`CMD --opt`) names a command that exists and only options that command has; every Python block
parses; every JSON request row is one the input check accepts. (Imports: test_public_surface.py;
links: test_doc_links.py; the Python blocks that run: test_testing.py, test_docs_examples.py.)"""

import functools
import json
import re
from pathlib import Path

import click

from groundsense.cli import cli
from groundsense.cli.plugins import KNOWN
from groundsense.errors import InputError
from groundsense.inputs import check_row

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)
SHELL = {"", "bash", "sh", "shell", "console"}
# `groundsense [global options] NAME rest` (a command's own prefix), or a span that opens with a command's name
CALL = re.compile(r"(?:^|(?<=[\s($]))groundsense((?:\s+--?[\w-]+(?:\s+\d+)?)*)\s+([a-z][\w-]*)(.*)")
OPTION = re.compile(r"(?<![\w-])--?[a-zA-Z][\w-]*")
# where a command line ends: a pipe into another program, a comment, a redirect, the span's end
END = re.compile(r"\|\s+(?!-)|[#;`]|\s>")
CONTEXT = click.Context(cli)


@functools.cache
def commands() -> dict[str, click.Command]:
    """The CLI's commands, plugins' groups included, loaded once."""
    return {name: cli.get_command(CONTEXT, name) for name in cli.list_commands(CONTEXT)}


@functools.cache
def options(command: click.Command) -> frozenset[str]:
    return frozenset(name for param in command.params for name in (*param.opts, *param.secondary_opts))


def code(page: Path) -> tuple[list[str], list[str]]:
    """The lines of ``page``'s shell blocks and inline code spans, and its Python blocks."""
    text = page.read_text(encoding="utf-8")
    shell = [line for language, block in FENCE.findall(text) if language in SHELL
             for line in block.replace("\\\n", " ").splitlines()]
    spans = re.findall(r"`([^`\n]+)`", FENCE.sub("", text))
    return shell + spans, [block for language, block in FENCE.findall(text) if language == "python"]


def command_lines(line: str) -> list[tuple[str, str, str]]:
    """(global options, command name, the rest) of each groundsense command ``line`` holds."""
    calls = CALL.findall(line)
    opening = re.match(r"\s*([a-z][\w-]*)(\s+-.*)$", line)  # a span such as `fit --fuse`
    if opening and opening.group(1) in commands():
        calls.append(("", opening.group(1), opening.group(2)))
    return [(before, name, END.split(rest)[0]) for before, name, rest in calls]


def drift(line: str) -> list[str]:
    """What ``line`` names that the command line does not have."""
    found = []
    for before, name, rest in command_lines(line):
        found += [f"groundsense has no {option}" for option in OPTION.findall(before) if option not in options(cli)]
        command = commands().get(name)
        if command is None:
            found.append(f"no command {name!r}")
            continue
        if name in KNOWN and not isinstance(command, click.Group):
            continue  # a plugin group whose package is not installed: nothing to check it against
        if isinstance(command, click.Group):
            words = rest.split()
            if not words or not re.fullmatch(r"[a-z][\w-]*", words[0]):
                continue  # `groundsense eval … --data`: the subcommand is left open
            sub = command.get_command(CONTEXT, words[0])
            if sub is None:
                found.append(f"no command '{name} {words[0]}'")
                continue
            name, command = f"{name} {words[0]}", sub
        found += [f"`groundsense {name}` has no {option}" for option in OPTION.findall(rest)
                  if option not in options(command)]
    return found


def test_every_documented_command_line_has_its_command_and_options():
    checked, found = 0, []
    for page in DOCUMENTS:
        for line in code(page)[0]:
            checked += len(command_lines(line))
            found += [f"{page.relative_to(ROOT)}: {why}: {line.strip()[:100]}" for why in drift(line)]
    assert checked > 300, "the pattern no longer finds the documents' command lines"
    assert not found, "the docs name what the CLI does not have (fix the doc, or the CLI):\n" + "\n".join(found)


def test_the_command_check_sees_a_renamed_option_command_and_subcommand():
    assert drift("groundsense detect --example passages-qa --fail-on-flag | jq .  # fine") == []
    assert drift("groundsense --threads 1 eval verify ragtruth --limit 2") == []
    assert drift("groundsense fit x.jsonl -o d.json [--target-recall R | --target-precision P]") == []
    assert drift("groundsense detect --fail-on-flags") == ["`groundsense detect` has no --fail-on-flags"]
    assert drift("fit --fuse") == [] and drift("fit --fused") == ["`groundsense fit` has no --fused"]
    assert drift("groundsense --thread 1 detect") == ["groundsense has no --thread"]
    assert drift("groundsense check --json") == ["no command 'check'"]
    assert drift("groundsense eval verifiy ragtruth") == ["no command 'eval verifiy'"]


def test_every_python_block_parses():
    for page in DOCUMENTS:
        for i, block in enumerate(code(page)[1]):
            compile(block, f"{page.relative_to(ROOT)}, Python block {i}", "exec")


def test_every_json_request_row_passes_the_input_check():
    rows = [(page, json.loads(block)) for page in DOCUMENTS for language, block in FENCE.findall(page.read_text())
            if language == "json" and '"answer"' in block]
    assert rows, "no JSON request row in the docs"
    wrong = []
    for page, row in rows:
        try:
            check_row(row)
        except InputError as exc:
            wrong.append(f"{page.relative_to(ROOT)}: {exc}")
    assert not wrong, "\n".join(wrong)
