"""User errors of the ``pystratum`` command and its exit codes (listed in ``pystratum.cli``)."""

from __future__ import annotations

EXIT_OK, EXIT_NO, EXIT_USAGE, EXIT_MISSING = 0, 1, 2, 3


class UserError(Exception):
    """A problem with the user's input: reported in one line, exit code ``code``."""

    def __init__(self, message: str, code: int = EXIT_USAGE):
        super().__init__(message)
        self.code = code


# The core's messages suggest Python arguments; on the command line the fix is a flag.
_CLI_SPELLING = (
    ("pass allow_single_batch=True", "pass --allow-single-batch"),
    ("allow_single_batch=True", "--allow-single-batch"),
    ("Pass strict=False", "Leave out --strict"),
    ("or strict=True to refuse", "or --strict to refuse"),
    ("(strict=False)", "(without --strict)"),
    ("small='repeat'", "--param small=repeat"),
    ("small='drop'", "--param small=drop"),
)


def cli_wording(message: str) -> str:
    """A core message with its Python spellings of a fix replaced by the command's flags."""
    for python, flag in _CLI_SPELLING:
        message = message.replace(python, flag)
    return message
