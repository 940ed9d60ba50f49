"""Optional dependencies: one way to import them and to say how to install them."""

from __future__ import annotations

__all__ = ["require_torch"]


def require_torch(needed_by: str):
    """``torch``, or an ImportError saying that ``needed_by`` needs it and how to install it."""
    try:
        import torch
    except ImportError as error:  # pragma: no cover - exercised without torch installed
        raise ImportError(
            f"{needed_by} needs PyTorch: pip install 'stratabatch[torch]' (or torch itself)."
        ) from error
    return torch
