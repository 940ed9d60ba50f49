"""User errors of the ``pystratum`` command and its exit codes (listed in ``pystratum.cli``)."""

from __future__ import annotations

EXIT_OK, EXIT_NO, EXIT_USAGE, EXIT_MISSING = 0, 1, 2, 3


class UserError(Exception):
    """A problem with the user's input: reported in one line, exit code ``code``."""

    def __init__(self, message: str, code: int = EXIT_USAGE):
        super().__init__(message)
        self.code = code
