"""``python -m groundsense.cli``."""

from . import main

main()
