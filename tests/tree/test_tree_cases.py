"""The six cases of the tree sampler's issue, with their long-run frequencies checked.

Statistical checks use fixed seeds, so they are deterministic; their
thresholds (family-wise 0.001, Bonferroni over the cells) are those a
correct sampler passes for almost every seed, and a wrong probability
(a weight not normalised, a level skipped) fails by dozens of sd.
"""

import numpy as np
import pytest

from _tree_data import NO_ACTIVES, PROTEINS, assert_shares, assert_uniform, metadata
from pystratum.tree import TreeSampler

N_DRAWS = 200_000


@pytest.fixture(scope="module")
def frame():
    return metadata()


def shares_of(values, n):
    keys, counts = np.unique(np.asarray(values), return_counts=True)
    return dict(zip(keys.tolist(), counts.tolist()))


def test_case1_weighted_classes(frame):
    config = """
    root:
      mode: replacement
      children:
        - {name: actives, column: active, value: 1, weight: 0.3}
        - {name: inactives, column: active, value: 0, weight: 0.7}
    """
    sampler = TreeSampler(config, frame, seed=11)
    draws = sampler.draw(N_DRAWS).indices
    active = frame["active"].to_numpy()[draws]
    assert_shares(shares_of(active, N_DRAWS), {1: 0.3, 0: 0.7}, N_DRAWS)
    # Within the leaf, rows are drawn uniformly.
    actives = np.flatnonzero(frame["active"].to_numpy() == 1)
    counts = np.bincount(draws[active == 1], minlength=len(frame))[actives]
    assert_uniform(counts)
    assert [node.effective for node in sampler.tree.children] == pytest.approx([0.3, 0.7])


def test_case2_two_levels(frame):
    config = {"root": {"children": [
        {"name": "actives", "column": "active", "value": 1, "weight": 0.3},
        {"name": "inactives", "column": "active", "value": 0, "weight": 0.7, "children": [
            {"name": "measured", "column": "source", "value": "measured", "weight": 0.6},
            {"name": "synthetic", "column": "source", "value": "synthetic", "weight": 0.4},
        ]},
    ]}}
    sampler = TreeSampler(config, frame, seed=12)
    draws = sampler.draw(N_DRAWS).indices
    kind = np.where(frame["active"].to_numpy()[draws] == 1, "active",
                    frame["source"].to_numpy()[draws])
    expected = {"active": 0.3, "measured": 0.42, "synthetic": 0.28}
    assert_shares(shares_of(kind, N_DRAWS), expected, N_DRAWS)
    effective = {leaf.label: leaf.effective for leaf in sampler.tree.leaves()}
    assert effective == pytest.approx({"actives": 0.3, "measured": 0.42, "synthetic": 0.28})


def test_case3_undersampling_the_majority(frame):
    n_active = int(frame["active"].sum())
    config = {"epoch_length": 2 * n_active, "root": {"mode": "sequential", "children": [
        {"name": "actives", "column": "active", "value": 1, "mode": "shuffle"},
        {"name": "inactives", "column": "active", "value": 0, "mode": "shuffle"},
    ]}}
    sampler = TreeSampler(config, frame, seed=13)
    active_rows = np.flatnonzero(frame["active"].to_numpy() == 1)
    inactive_rows = np.flatnonzero(frame["active"].to_numpy() == 0)
    n_epochs = -(-len(inactive_rows) // n_active)
    epochs = [np.array(list(sampler)) for _ in range(n_epochs)]
    seen_inactive = []
    for epoch in epochs:
        assert len(epoch) == 2 * n_active
        # Balanced: actives and inactives alternate, every active exactly once per epoch.
        np.testing.assert_array_equal(np.sort(epoch[0::2]), active_rows)
        assert set(epoch[1::2].tolist()) <= set(inactive_rows.tolist())
        seen_inactive.extend(epoch[1::2].tolist())
    # Each epoch is a new shuffle of the actives.
    assert not np.array_equal(epochs[0][0::2], epochs[1][0::2])
    # The inactives go through one shuffled pass before any repeats: undersampling
    # that rotates through the whole majority over the epochs.
    first_pass = seen_inactive[:len(inactive_rows)]
    np.testing.assert_array_equal(np.sort(first_pass), inactive_rows)


def test_case4_uniform_over_groups(frame):
    config = {"root": {"mode": "replacement", "children": [
        {"for_each": "protein", "mode": "replacement"},
    ]}}
    sampler = TreeSampler(config, frame, seed=14)
    assert [child.label for child in sampler.tree.children] == [f"protein={p!r}"
                                                                 for p in PROTEINS]
    proteins = frame["protein"].to_numpy()[sampler.draw(N_DRAWS).indices]
    assert_shares(shares_of(proteins, N_DRAWS), {p: 1 / 12 for p in PROTEINS}, N_DRAWS)
    # Not the row frequency: proteins differ in size, the shares do not.
    sizes = frame["protein"].value_counts()
    assert sizes.max() - sizes.min() > 20


def test_case5_repeat_for_test_time_augmentation(frame):
    config = {
        "aux": {"angle": {"kind": "cycle", "values": [0, 90, 180, 270]}},
        "root": {"mode": "sequential", "children": [
            {"name": "actives", "column": "active", "value": 1, "repeat": 4},
            {"name": "inactives", "column": "active", "value": 0, "repeat": 4},
        ]},
    }
    sampler = TreeSampler(config, frame, seed=15)
    items = [item for item, _ in zip(sampler, range(8 * 500))]
    rows = np.array([index for index, _ in items])
    angles = [aux["angle"] for _, aux in items]
    active = frame["active"].to_numpy()
    blocks = rows.reshape(-1, 4)
    # 4 copies of one row, actives and inactives alternating block by block.
    assert (blocks == blocks[:, :1]).all()
    np.testing.assert_array_equal(active[blocks[:, 0]], np.tile([1, 0], len(blocks) // 2))
    assert angles[:8] == [0, 90, 180, 270] * 2  # each copy with its own augmentation
    # The chosen actives are uniform over the actives (replacement leaf).
    n_active = int(active.sum())
    counts = np.bincount(blocks[0::2, 0], minlength=len(frame))[active == 1]
    assert counts.sum() == 500 and len(counts) == n_active


def test_case6_paired_constraint(frame):
    config = """
    root:
      mode: replacement
      children:
        - for_each: protein
          repeat: 2             # two consecutive draws from the same protein
          prune: individual     # a protein lacking a class is dropped, not the root
          children:
            - mode: sequential  # first the active, then the inactive
              children:
                - {column: active, value: 1, prune: parent}
                - {column: active, value: 0, prune: parent}
    """
    sampler = TreeSampler(config, frame, seed=16)
    pairs = sampler.draw(N_DRAWS).indices.reshape(-1, 2)
    protein = frame["protein"].to_numpy()
    active = frame["active"].to_numpy()
    assert (protein[pairs[:, 0]] == protein[pairs[:, 1]]).all()
    assert (active[pairs[:, 0]] == 1).all() and (active[pairs[:, 1]] == 0).all()
    kept = [p for p in PROTEINS if p not in NO_ACTIVES]
    assert not set(NO_ACTIVES) & set(protein[pairs[:, 0]].tolist())
    assert_shares(shares_of(protein[pairs[:, 0]], len(pairs)), {p: 1 / len(kept) for p in kept},
                  len(pairs))
    pruned = [path for path, _ in sampler.pruned]
    for p in NO_ACTIVES:
        assert f"root.children[0][protein={p!r}]" in pruned
    text = sampler.describe(simulate=20_000)
    assert "pruned (6)" in text and "P10" in text


def test_aux_values_have_their_distributions(frame):
    config = {"root": {"children": [{"column": "active", "value": 1}]}, "aux": {
        "u": {"kind": "uniform", "low": -2, "high": 6},
        "z": {"kind": "normal", "mean": 1.5, "std": 0.5},
        "c": {"kind": "choice", "values": ["a", "b", "c"], "p": [0.2, 0.5, 0.3]},
        "k": {"kind": "cycle", "values": [3, 1, 2]},
    }}
    n = 150_000
    aux = TreeSampler(config, frame, seed=17).draw(n).aux
    u, z = aux["u"], aux["z"]
    assert u.min() >= -2 and u.max() < 6
    # Means within 4 standard errors; the uniform's spread through its deciles.
    assert abs(u.mean() - 2) < 4 * 8 / np.sqrt(12 * n)
    assert abs(z.mean() - 1.5) < 4 * 0.5 / np.sqrt(n)
    assert abs(z.std() - 0.5) < 0.01
    assert_uniform(np.bincount(((u + 2) / 8 * 10).astype(int), minlength=10))
    assert_shares(shares_of(aux["c"], n), {"a": 0.2, "b": 0.5, "c": 0.3}, n)
    assert aux["k"][:7].tolist() == [3, 1, 2, 3, 1, 2, 3]
    # Each generator has its own stream: declaring another one changes nothing.
    fewer = dict(config, aux={"z": config["aux"]["z"]})
    np.testing.assert_array_equal(TreeSampler(fewer, frame, seed=17).draw(n).aux["z"], z)


def test_import_needs_no_torch():
    import subprocess
    import sys

    code = "import sys, pystratum.tree; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
