"""The serving layer stays torch-free, and every sampler family serves through its EpochPass."""

import subprocess
import sys

import numpy as np

from pystratum.serving import EpochPass


def test_importing_the_serving_layer_loads_no_torch_pandas_or_rpy2():
    code = ("import sys, pystratum.serving, pystratum.negatives\n"
            "print(sorted(m for m in ('torch', 'pandas', 'rpy2') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "[]"


def test_every_family_iterates_through_one_epoch_pass():
    from _tree_data import metadata
    from pystratum.negatives import NegativePairSampler
    from pystratum.negatives.torch import NegativePairBatchSampler
    from pystratum.torch import StratifiedBatchSampler
    from pystratum.tree import TreeSampler
    from pystratum.tree.torch import TreeBatchSampler

    labels = np.repeat([0, 1], [10, 6])
    users, items = np.arange(9) % 3, np.arange(9)
    samplers = [
        StratifiedBatchSampler(labels, 2, seed=1),
        StratifiedBatchSampler(labels, 2, seed=1, rng="index"),
        NegativePairSampler(users, items, num_items=9, negatives=1, batch_size=2, seed=1),
        NegativePairBatchSampler(users, items, num_items=9, negatives=1, batch_size=2, seed=1),
        TreeBatchSampler(TreeSampler({"epoch_length": 20, "root": {"mode": "shuffle"}},
                                     metadata(50), seed=1), 5),
    ]
    for sampler in samplers:
        assert type(iter(sampler)) is EpochPass, type(sampler).__name__
