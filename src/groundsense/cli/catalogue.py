"""What ships with groundsense: `groundsense examples`."""

from __future__ import annotations

import click

from .common import CONTEXT_SETTINGS


@click.command(context_settings=CONTEXT_SETTINGS)
def examples():
    """List the shipped examples for `groundsense detect --example NAME`."""
    from ..inputs import example_names

    for name in example_names():
        click.echo(name)
