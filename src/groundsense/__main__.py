"""``python -m groundsense``."""

from .cli import main

main()
