"""``python -m pystratum``: the command-line tool (see ``pystratum --help``)."""

from .cli import run

run()
