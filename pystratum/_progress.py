"""Moved to :mod:`pystratum.serving._progress` (the serving layer); kept as an import path."""

from .serving._progress import EpochProgress, EpochServed

__all__ = ["EpochProgress", "EpochServed"]
