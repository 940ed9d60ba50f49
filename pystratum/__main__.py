"""``python -m pystratum``: the command-line tool (see ``pystratum --help``)."""

import sys

from .cli import main

sys.exit(main())
