"""Command groups from other distributions: each registers a click command under the
``groundsense.commands`` entry point, and is imported only when it runs or its help is shown.

`groundsense eval` is one: it ships in ``groundsense-eval``, the research harness. Where that is
not installed, ``eval`` still answers, with how to install it.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points

import click

from .common import CONTEXT_SETTINGS, Commands, Failure

GROUP = "groundsense.commands"
# Commands that a known distribution adds: what to install where it is missing.
KNOWN = {"eval": ("groundsense-eval", "Evaluate on RAGTruth, TofuEval and RAGBench (the research harness).")}


def plugins() -> dict[str, EntryPoint]:
    return {point.name: point for point in entry_points(group=GROUP)}


def load(point: EntryPoint) -> click.Command:
    command = point.load()
    if not isinstance(command, click.Command):
        raise Failure(f"the {GROUP} entry point {point.name!r} ({point.value}) is not a click command")
    return command


def missing(name: str) -> click.Command:
    """``name``'s stand-in where its distribution is not installed: it exits 2 saying what to install."""
    distribution, summary = KNOWN[name]

    @click.command(name, context_settings={**CONTEXT_SETTINGS, "ignore_unknown_options": True},
                   add_help_option=False, help=f"{summary} Needs {distribution}.", short_help=summary)
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def stand_in(args: tuple[str, ...]) -> None:
        raise Failure(f"`groundsense {name}` is in the {distribution} package, which is not installed: "
                      f"pip install {distribution} (in a groundsense checkout: pip install -e harness)")

    return stand_in


class WithPlugins(Commands):
    """The root group: its own commands, then those of the installed plugins, loaded by name."""

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
