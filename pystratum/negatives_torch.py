"""Kept as an import path: the torch face of generated negatives is :mod:`pystratum.negatives.torch`."""

from .negatives.torch import NegativePairBatchSampler, PairFeatureDataset, collate_pairs, pair_loader

__all__ = ["NegativePairBatchSampler", "PairFeatureDataset", "collate_pairs", "pair_loader"]
