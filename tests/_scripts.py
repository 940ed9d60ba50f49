"""The project's scripts (benchmarks, the docs site builder) loaded as modules by their path."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_script(relative_path: str, name: str | None = None):
    """The module of the script at ``ROOT / relative_path`` (not a package: loaded by path)."""
    path = ROOT / relative_path
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
