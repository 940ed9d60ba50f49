"""A TensorDataset that says which labels are its labels (``.targets``/``.labels``) is read.

A plain TensorDataset stays refused (which tensor holds the labels?), but
once the user sets ``.targets`` (as vignettes/pytorch.md does) or
``.labels`` the question is answered, as for a torchvision dataset.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.data import Subset, TensorDataset

from pystratum.torch import StratifiedBatchSampler
from pystratum.torch._labels import labels_from

LABELS = np.repeat([0, 1, 2], [30, 12, 6])


@pytest.mark.parametrize("attribute", ["targets", "labels"])
def test_tensor_dataset_with_its_labels_set_is_read(attribute):
    dataset = TensorDataset(torch.randn(len(LABELS), 3), torch.as_tensor(LABELS).float())
    setattr(dataset, attribute, torch.as_tensor(LABELS))
    labels, found = labels_from(dataset)
    np.testing.assert_array_equal(labels, LABELS)
    assert found is dataset
    from_dataset = StratifiedBatchSampler(dataset, 2, seed=3)
    from_tensor = StratifiedBatchSampler(torch.as_tensor(LABELS), 2, seed=3)
    assert [b for b in from_dataset] == [b for b in from_tensor]


def test_subset_of_a_tensor_dataset_with_targets_reads_the_parent_labels():
    dataset = TensorDataset(torch.randn(len(LABELS), 3))
    dataset.targets = torch.as_tensor(LABELS)
    subset = Subset(dataset, list(range(0, len(LABELS), 2)))
    labels, _ = labels_from(subset)
    np.testing.assert_array_equal(labels, LABELS[::2])


def test_tensor_dataset_without_labels_set_is_still_refused():
    dataset = TensorDataset(torch.randn(len(LABELS), 3), torch.as_tensor(LABELS))
    with pytest.raises(TypeError, match=r"TensorDataset.*\.targets"):
        labels_from(dataset)


def test_tensor_dataset_whose_targets_length_differs_is_refused():
    dataset = TensorDataset(torch.randn(len(LABELS), 3))
    dataset.targets = torch.as_tensor(LABELS[:-1])
    with pytest.raises(ValueError, match="47 labels but the dataset has 48 rows"):
        StratifiedBatchSampler(dataset, 2, seed=3)
