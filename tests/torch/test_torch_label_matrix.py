"""Which 2-D labels are a label matrix: asked of the policy (``reads_label_matrix``), never its class.

A stand-in policy that sets the flag (as ``MultiLabel`` does) gets its
dataset's 2-D ``.targets`` as a label matrix; every other policy gets the
labels unchanged, so 2-D input stays stratum columns.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from torch.utils.data import TensorDataset

import pystratum
from pystratum.policies import Allocation, MinPerStratum, Policy
from pystratum.torch._labels import label_input, labels_from, reads_label_matrix


class _ReadsLabels(Policy):
    """A test stand-in: reads label matrices, allocates one batch."""

    name = "_test_reads_label_matrix"
    reads_label_matrix = True

    def params(self):
        return {}

    def allocate(self, strata, epoch):
        return Allocation(np.stack([np.zeros(strata.n_strata, np.int64), strata.sizes], axis=1))


TARGETS = torch.tensor([[1, 0, 0], [0, 1, 1], [0, 0, 1], [1, 1, 0]])


def test_the_flag_defaults_to_false_on_every_registered_policy():
    assert Policy.reads_label_matrix is False
    assert MinPerStratum(1).reads_label_matrix is False
    assert _ReadsLabels().reads_label_matrix is True


def test_a_datasets_2d_targets_are_a_label_matrix_only_for_such_policies():
    dataset = TensorDataset(torch.zeros(4, 2))
    dataset.targets = TARGETS
    labels, known = labels_from(dataset)
    assert known is dataset
    assert reads_label_matrix(_ReadsLabels(), labels)
    matrix = label_input(_ReadsLabels(), labels)
    assert isinstance(matrix, pystratum.LabelMatrix)
    np.testing.assert_array_equal(matrix.matrix, TARGETS.numpy().astype(bool))
    assert matrix.labels == ("0", "1", "2")
    assert not reads_label_matrix(MinPerStratum(1), labels)
    assert label_input(MinPerStratum(1), labels) is labels  # stays stratum columns


@pytest.mark.parametrize("labels,expected", [
    (np.array([0, 1, 1]), False),  # 1-D: a class per row, never a label matrix
    (pd.DataFrame({"a": [0, 1], "b": [1, 1]}), True),
    (TARGETS.numpy(), True),
    ([[0, 1], [1, 0]], False),  # a list has no shape: pass an array for a label matrix
])
def test_detection_by_shape(labels, expected):
    assert reads_label_matrix(_ReadsLabels(), labels) is expected
    assert reads_label_matrix(MinPerStratum(1), labels) is False


def test_bad_cells_in_targets_blame_the_argument():
    with pytest.raises(ValueError, match=r"^strata must hold only 0 and 1 \(or booleans\), got 2 "
                                         r"at row 0 \(0-based\) in label '1'"):
        label_input(_ReadsLabels(), np.array([[0, 2], [1, 0]]))
