"""``python -m evalband.cli``."""

from evalband.cli import entry

entry()
