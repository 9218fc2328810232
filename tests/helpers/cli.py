"""Running a `groundsense` command line in the test process."""

from click.testing import CliRunner, Result

from groundsense.cli import cli


def run(*args: str, input: str | None = None) -> Result:
    """``groundsense ARGS`` (its arguments, without the program) in this process, ``input`` on stdin."""
    return CliRunner().invoke(cli, list(args), input=input)
