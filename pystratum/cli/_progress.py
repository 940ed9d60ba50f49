"""Stage messages on stderr while a command runs (``--verbose``, or a large DATA)."""

from __future__ import annotations

import sys
import time

# Stage messages on stderr once a run gets this large (or with --verbose).
_PROGRESS_BYTES = 20_000_000


class _Progress:
    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.started = time.perf_counter()

    def __call__(self, message: str) -> None:
        if self.enabled:
            elapsed = time.perf_counter() - self.started
            print(f"pystratum: [{elapsed:6.1f} s] {message}", file=sys.stderr, flush=True)
