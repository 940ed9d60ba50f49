"""pystratum.torch._labels: labels out of tensors, datasets and callables, read exactly."""

import numpy as np
import pytest
import torch
from torch.utils.data import Dataset, Subset, TensorDataset

from pystratum.strata._encode import encode_strata
from pystratum.torch import StratifiedBatchSampler
from pystratum.torch._labels import labels_from, tensor_to_numpy

# torch's own notes on experimental dtypes/layouts the tests build on purpose.
pytestmark = [pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental"),
              pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta"),
              pytest.mark.filterwarnings("ignore:.*quantized tensor creation functions")]

LABELS = np.array([0, 1, 2, 1, 0, 2, 2, 0, 1, 0, 1, 2] * 5)


class Targets(Dataset):
    def __init__(self, targets):
        self.targets = targets

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, i):
        return i


def partition(labels):
    """The partition of rows into strata (what the allocation sees), numbered by first row."""
    first_seen = {}
    return [first_seen.setdefault(code, len(first_seen))
            for code in encode_strata(labels).codes.tolist()]


@pytest.mark.parametrize("make", [
    lambda t: t.to(torch.bfloat16),
    lambda t: t.to(torch.float16),
    lambda t: t.to(torch.complex64),
    lambda t: t.to(torch.complex32),
    lambda t: t.to(torch.float8_e4m3fn),
    lambda t: t.to(torch.uint8),
    lambda t: t.to(torch.int16),
    lambda t: t.to_sparse(),
    lambda t: t.to_sparse_csr() if t.dim() == 2 else t.reshape(1, -1).to_sparse_csr()[0],
    lambda t: torch.stack([t, t], dim=1)[:, 1],           # non-contiguous column
    lambda t: torch.stack([t, t], dim=1).reshape(-1)[::2],  # strided view
    lambda t: t.float().requires_grad_(),                  # needs detach
    lambda t: (t.to(torch.complex64) * 1j).conj(),         # conjugate bit
    lambda t: -(t.float()),                                # values negated
    lambda t: torch.nn.Parameter(t.float()),
], ids=["bfloat16", "float16", "complex64", "complex32", "float8", "uint8", "int16", "sparse_coo",
        "sparse_csr_row", "column_view", "strided", "requires_grad", "conj", "neg", "parameter"])
def test_odd_tensors_are_read_exactly(make):
    tensor = make(torch.as_tensor(LABELS))
    array = tensor_to_numpy(tensor)
    assert array.shape == LABELS.shape
    assert partition(array) == partition(LABELS)
    batches = list(StratifiedBatchSampler(tensor, 2, seed=1))
    assert batches == list(StratifiedBatchSampler(LABELS, 2, seed=1))


def test_bfloat16_keeps_distinct_values_distinct():
    values = torch.tensor([0.5, 1.0, 1.5, 2.0] * 3, dtype=torch.bfloat16)
    assert sorted(set(tensor_to_numpy(values).tolist())) == [0.5, 1.0, 1.5, 2.0]


@pytest.mark.parametrize("make, error, match", [
    (lambda: torch.empty(10, device="meta"), TypeError,
     "'meta' device, which has a shape but no values"),
    (lambda: torch.tensor(3), TypeError, r"0-d tensor \(one value, 3\)"),
    (lambda: torch.quantize_per_tensor(torch.tensor([0.0, 1.0]), 1.0, 0, torch.quint8),
     TypeError, r"quantized tensor.*int_repr\(\)"),
], ids=["meta", "0-d", "quantized"])
def test_tensors_without_readable_labels(make, error, match):
    tensor = make()
    with pytest.raises(error, match=match):
        StratifiedBatchSampler(tensor, 1)


def test_list_of_shape_one_tensors_is_refused_not_read_as_one_row():
    # Labels gathered row by row as shape-(1,) tensors: before, a single batch [[0]].
    gathered = [torch.tensor([y]) for y in LABELS]
    with pytest.raises(TypeError, match=r"60 items holding tensors of shape \(1,\), which could "
                                        r"be rows or columns.*torch\.cat\(strata\)"):
        StratifiedBatchSampler(gathered, 1, seed=0)
    with pytest.raises(TypeError, match="could be rows or columns"):
        StratifiedBatchSampler(tuple(gathered), 1, seed=0)
    # The form the message names reads them correctly.
    assert (list(StratifiedBatchSampler(torch.cat(gathered), 2, seed=0))
            == list(StratifiedBatchSampler(LABELS, 2, seed=0)))


def test_list_of_zero_d_tensors_is_one_label_per_row():
    scalars = [torch.tensor(y) for y in LABELS]
    assert (list(StratifiedBatchSampler(scalars, 2, seed=0))
            == list(StratifiedBatchSampler(LABELS, 2, seed=0)))
    with pytest.raises(TypeError, match="mixes 0-d tensors with other values"):
        StratifiedBatchSampler(scalars[:-1] + [0], 1)


def test_dict_of_tensors_becomes_dict_of_arrays():
    labels, dataset = labels_from({"y": torch.as_tensor(LABELS), "g": [1] * len(LABELS)})
    assert dataset is None
    assert isinstance(labels["y"], np.ndarray) and labels["y"].tolist() == LABELS.tolist()
    assert labels["g"] == [1] * len(LABELS)


def test_datasets_and_subsets():
    dataset = Targets(torch.as_tensor(LABELS))
    labels, known = labels_from(dataset)
    assert known is dataset and labels.tolist() == LABELS.tolist()
    # A Subset (e.g. from random_split) gives its parent's labels at its indices, in its order.
    indices = [5, 3, 11, 0, 7, 2, 9, 4, 6, 1] * 3
    subset = Subset(dataset, indices)
    labels, known = labels_from(subset)
    assert known is subset and labels.tolist() == LABELS[indices].tolist()
    sampler = StratifiedBatchSampler(subset, 2, seed=4)
    assert sampler.num_batches == np.bincount(LABELS[indices]).min() // 2
    # Nested subsets too.
    nested = Subset(subset, [0, 1, 2, 3, 4, 5])
    assert labels_from(nested)[0].tolist() == LABELS[indices][:6].tolist()


def test_tensor_dataset_is_refused_with_the_fix():
    dataset = TensorDataset(torch.randn(len(LABELS), 3), torch.as_tensor(LABELS))
    with pytest.raises(TypeError, match=r"TensorDataset.*StratifiedBatchSampler\(ds\.tensors\[-1\], "
                                        r"m, dataset=ds\)"):
        StratifiedBatchSampler(dataset, 2)
    # The fix works.
    StratifiedBatchSampler(dataset.tensors[-1], 2, dataset=dataset, seed=0)


def test_callables():
    assert labels_from(lambda: torch.as_tensor(LABELS))[0].tolist() == LABELS.tolist()
    with pytest.raises(TypeError, match="returning another callable"):
        labels_from(lambda: (lambda: LABELS))
    with pytest.raises(TypeError, match=r"strata\(\) is a 0-d tensor"):
        labels_from(lambda: torch.tensor(1))
