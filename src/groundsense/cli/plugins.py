"""Command groups from other distributions: each registers a click command under the
``groundsense.commands`` entry point, and is imported only when it runs or its help is shown.

`groundsense eval` is one: it ships in ``groundsense-eval``, the research harness. Where that is
not installed, ``eval`` still answers, with how to install it.
"""

from __future__ import annotations

import os
import select
import sys
from importlib.metadata import EntryPoint, entry_points
from typing import Any

import click

from .common import CONTEXT_SETTINGS, Commands, Failure

GROUP = "groundsense.commands"
# Commands that a known distribution adds: what to install where it is missing.
KNOWN = {"eval": ("groundsense-eval", "Evaluate on RAGTruth, TofuEval and RAGBench (the research harness).")}


def plugins() -> dict[str, EntryPoint]:
    return {point.name: point for point in entry_points(group=GROUP)}


def load(point: EntryPoint) -> click.Command:
    """The command ``point`` names; one that fails to import, or is not a command, becomes a
    stand-in that says so when run (and lists as broken), so that the rest of the CLI, its help
    included, still works."""
    try:
        command = point.load()
    except Exception as exc:  # a plugin's own import error, whatever it is
        return broken(point, f"fails to import ({type(exc).__name__}: {exc}): reinstall the package that provides it")
    if not isinstance(command, click.Command):
        return broken(point, "is not a click command")
    return command


def broken(point: EntryPoint, why: str) -> click.Command:
    message = f"the {GROUP} entry point {point.name!r} ({point.value}) {why}"
    return stand_in(point.name, message, help=message, short_help=f"(broken: {why.split(' (')[0]})")


def missing(name: str) -> click.Command:
    """``name``'s stand-in where its distribution is not installed: it exits 2 saying what to install."""
    distribution, summary = KNOWN[name]
    message = (f"`groundsense {name}` is in the {distribution} package, which is not installed: "
               f"pip install {distribution} (in a groundsense checkout: pip install -e harness)")
    return stand_in(name, message, help=f"{summary} Needs {distribution}.", short_help=summary)


def stand_in(name: str, message: str, help: str, short_help: str) -> click.Command:
    """A command ``name`` that takes any arguments, its own --help among them, and exits 2 with ``message``."""

    @click.command(name, context_settings={**CONTEXT_SETTINGS, "ignore_unknown_options": True},
                   add_help_option=False, help=help, short_help=short_help)
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def command(args: tuple[str, ...]) -> None:
        raise Failure(message)

    return command


def stdout_closed() -> bool:
    """Whether standard output's reader has gone: a pipe or socket whose other end closed, which
    poll reports as an error or hang-up. A stdout that is no file (click's test runner) has none."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


class WithPlugins(Commands):
    """The root group: its own commands, then those of the installed plugins, loaded by name. A
    Ctrl-C exits 130 from any of them, and a reader that closed the pipe (``| head -1``) 141, as
    a process that SIGPIPE stops does, as the exit codes say (click's own exit for both is 1, which
    ``--fail-on-flag`` gives an answer not cleared); a command that keeps finished work says what
    it kept first (:func:`.interrupts.resumable`). A broken pipe that is not standard output's
    is an internal error (exit 1, with its traceback), not a reader gone."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            raise click.exceptions.Exit(130) from None
        except BrokenPipeError as exc:
            if not stdout_closed():
                # a pipe or socket of the work itself (a judge server's, a Ray worker's) broke: an error, which
                # click would end quietly with exit 1 (it takes any EPIPE for a closed stdout)
                raise RuntimeError(f"a connection closed by its other end (not standard output): {exc}") from exc
            # what is still buffered for stdout goes nowhere, not to a traceback at exit (Python's signal docs)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise click.exceptions.Exit(141) from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *plugins(), *KNOWN})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        if command is not None:
            return command
        point = plugins().get(name)
        if point is not None:
            return load(point)
        return missing(name) if name in KNOWN else None
