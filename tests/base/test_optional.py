"""Every torch face says how to install torch when it is missing (one guard, base/_optional.py)."""

import subprocess
import sys

import pytest

from tests._env import subprocess_environ


@pytest.mark.parametrize("module, needed_by", [
    ("pystratum.torch", "pystratum.torch"),
    ("pystratum.tree.torch", "pystratum.tree.torch"),
    ("pystratum.negatives.torch", "pystratum.negatives.torch"),
    ("pystratum.streams._torch", "rng='torch'"),
])
def test_a_torch_face_without_torch_names_the_install(module, needed_by):
    # sys.modules[name] = None makes "import torch" raise ImportError, as on a machine without it.
    code = (f"import sys; sys.modules['torch'] = None\n"
            f"try:\n    import {module}\nexcept ImportError as error:\n    print(error)\n"
            f"else:\n    print('imported')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=subprocess_environ(), check=True)
    assert done.stdout.strip() == (f"{needed_by} needs PyTorch: pip install "
                                   f"'stratabatch[torch]' (or torch itself).")


def test_the_numpy_core_imports_without_torch():
    code = ("import sys; sys.modules['torch'] = None\n"
            "import numpy as np, pystratum\n"
            "print(len(pystratum.stratified_batches(np.arange(100) % 2, 5, seed=1)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=subprocess_environ(), check=True)
    assert done.stdout.strip() == "10"  # 50 rows a stratum, 5 per batch
