"""Every public import path of the flat layout still works after the move to layer folders."""

import importlib

import pytest

# module path -> names users import from it (README, vignettes, the previous layout)
PUBLIC = {
    "pystratum": ["stratified_batches", "plan_batches", "lazy_plan", "BatchPlan", "RStream",
                  "StratumTooSmallWarning", "parquet_strata"],
    "pystratum.policies": ["MinPerStratum", "FixedSize", "Targets", "Downsample",
                           "ClassesPerBatch", "Policy", "as_policy", "policy_from_params"],
    "pystratum.torch": ["StratifiedBatchSampler", "StratifiedSampler", "WeightedDataset",
                        "DistributedSamplerWrapper"],
    "pystratum.tree": ["TreeSampler"],
    "pystratum.tree.torch": ["TreeBatchSampler"],
    "pystratum.negatives": ["NegativePairSampler", "NegativeBatch", "batch_seed"],
    "pystratum.negatives_torch": ["NegativePairBatchSampler", "PairFeatureDataset",
                                  "collate_pairs", "pair_loader"],
    "pystratum.plot": ["batch_counts", "plot_counts", "composition_figure"],
    "pystratum.cli": ["main"],
    "pystratum.serving": ["EpochPass", "EpochProgress", "EpochServed"],
    "pystratum.shards": ["ShardReader", "ParquetShards", "ShardCache", "CacheStats",
                         "BatchServer", "ShardedBatches"],
    "pystratum.shards.torch": ["ShardBatchDataset", "UnpackedBatches", "table_tensors"],
}


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_public_names_import_from_their_documented_path(module):
    loaded = importlib.import_module(module)
    missing = [name for name in PUBLIC[module] if not hasattr(loaded, name)]
    assert not missing, f"{module} lost {missing}"


def test_the_kept_negatives_torch_path_is_the_same_objects():
    kept = importlib.import_module("pystratum.negatives_torch")
    moved = importlib.import_module("pystratum.negatives.torch")
    for name in PUBLIC["pystratum.negatives_torch"]:
        assert getattr(kept, name) is getattr(moved, name)
