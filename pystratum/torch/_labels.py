"""Labels out of what torch users hold: tensors, datasets, callables.

The result is something the numpy core reads (:func:`pystratum.strata._encode.encode_strata`):
tensors become numpy arrays, a torchvision-style dataset gives its ``.targets``
(or ``.labels``; a ``TensorDataset`` only when one of them is set), a ``Subset`` gives its parent's labels at its indices, a
callable is called once. What the core's rules for containers say (columns
vs rows) is the core's business; this module only refuses the torch forms
that cannot be read unambiguously and says which form to use instead.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from torch.utils.data import Dataset, Subset, TensorDataset

from ..strata._label_matrix import label_matrix

__all__ = ["label_input", "labels_from", "reads_label_matrix", "tensor_to_numpy"]

# dtypes numpy has no twin for, widened exactly (every value is representable).
_WIDEN = {torch.bfloat16: torch.float32, torch.complex32: torch.complex64}
for _name in ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
              "float8_e8m0fnu"):
    if hasattr(torch, _name):
        _WIDEN[getattr(torch, _name)] = torch.float32


def labels_from(strata, name: str = "strata"):
    """``(labels the core reads, the dataset if strata was one, else None)``.

    Guarantee: the labels are read value for value (no rounding, no reordering,
    no row dropped); a form that could be read two ways raises TypeError saying
    which forms to use.
    """
    if callable(strata) and not _is_data(strata):
        labels = strata()
        if callable(labels) and not _is_data(labels):
            raise TypeError(
                f"{name} was a callable returning another callable; it must return the labels "
                f"(one per row)."
            )
        return labels_from(labels, f"{name}()")[0], None
    if isinstance(strata, torch.Tensor):
        return tensor_to_numpy(strata, name), None
    if isinstance(strata, (list, tuple)):
        return _list_of_labels(strata, name), None
    if isinstance(strata, Mapping):
        # Columns by name: tensors become arrays, the core combines them.
        return {key: tensor_to_numpy(value, f"{name}[{key!r}]")
                if isinstance(value, torch.Tensor) else value
                for key, value in strata.items()}, None
    if not _is_data(strata) and (isinstance(strata, Dataset) or hasattr(strata, "targets")
                                 or hasattr(strata, "labels")):
        return _dataset_labels(strata, name), strata
    return strata, None


def tensor_to_numpy(tensor: torch.Tensor, name: str = "strata") -> np.ndarray:
    """The tensor's values as a numpy array on the CPU, exactly.

    Sparse tensors are densified (implicit entries are zeros, as torch reads
    them), conjugate/negative views resolved, bfloat16/float8/complex32
    widened to the nearest numpy dtype holding every value. Tensors without
    values (the ``meta`` device) and 0-d tensors raise.
    """
    if tensor.device.type == "meta":
        raise TypeError(
            f"{name} is a tensor on the 'meta' device, which has a shape but no values; pass "
            f"the real labels (a tensor on 'cpu' or a GPU, or a list/array)."
        )
    if tensor.is_quantized:
        raise TypeError(
            f"{name} is a quantized tensor (dtype {tensor.dtype}); labels are read as plain "
            f"values: pass {name}.int_repr() or {name}.dequantize(), whichever holds the labels."
        )
    if tensor.layout != torch.strided:
        tensor = tensor.to_dense()
    if tensor.dim() == 0:
        raise TypeError(
            f"{name} is a 0-d tensor (one value, {tensor.item()!r}); pass one label per row, "
            f"e.g. a 1-D tensor."
        )
    tensor = tensor.detach()
    if tensor.device.type != "cpu":
        tensor = tensor.cpu()
    tensor = tensor.resolve_conj().resolve_neg()
    if tensor.dtype in _WIDEN:
        tensor = tensor.to(_WIDEN[tensor.dtype])
    try:
        return tensor.numpy()
    except (TypeError, RuntimeError) as error:
        raise TypeError(
            f"{name} is a tensor of dtype {tensor.dtype}, which cannot be read as labels "
            f"({error}); convert it to an integer, float or bool tensor first."
        ) from None


def _list_of_labels(items, name):
    """A list of 0-d tensors is one label per row; tensors with a shape are ambiguous."""
    shaped = next((item for item in items if isinstance(item, torch.Tensor) and item.dim() > 0),
                  None)
    if shaped is not None:
        raise TypeError(
            f"{name} is a {type(items).__name__} of {len(items)} items holding tensors of shape "
            f"{tuple(shaped.shape)}, which could be rows or columns. For one label per row pass "
            f"a 1-D tensor (torch.cat({name}) for shape-(1,) items, or np.concatenate); for "
            f"several stratum columns pass torch.stack(columns, dim=1) (one column per "
            f"variable), a pandas DataFrame, or a dict of columns ({{'y': y, 'group': g}})."
        )
    if items and any(isinstance(item, torch.Tensor) for item in items):
        if not all(isinstance(item, torch.Tensor) for item in items):
            raise TypeError(
                f"{name} mixes 0-d tensors with other values; pass one kind of label per row "
                f"(e.g. torch.stack of the tensors, or plain Python values)."
            )
        return tensor_to_numpy(torch.stack(list(items)), name)
    return items


def _dataset_labels(dataset, name):
    # A TensorDataset's tensors do not say which one holds the labels, unless
    # the user said so by setting .targets or .labels (read below like a
    # torchvision dataset's).
    if isinstance(dataset, TensorDataset) and not any(
            getattr(dataset, attribute, None) is not None for attribute in ("targets", "labels")):
        raise TypeError(
            f"{name} is a TensorDataset, whose tensors do not say which one holds the labels: "
            f"pass that tensor as {name} and the dataset as dataset=, e.g. "
            f"StratifiedBatchSampler(ds.tensors[-1], m, dataset=ds), or set ds.targets to the "
            f"labels first."
        )
    if isinstance(dataset, Subset):
        parent = labels_from(dataset.dataset, f"{name}.dataset")[0]
        indices = np.asarray(dataset.indices, dtype=np.int64)
        if isinstance(parent, Mapping):
            return {key: _take(column, indices) for key, column in parent.items()}
        return _take(parent, indices)
    for attribute in ("targets", "labels"):
        labels = getattr(dataset, attribute, None)
        if labels is not None:
            return labels_from(labels, f"{name}.{attribute}")[0]
    raise TypeError(
        f"{name} is a dataset ({type(dataset).__name__}) without .targets or .labels; pass its "
        f"labels instead (one per row, e.g. a list or array) and the dataset as dataset=, or a "
        f"callable returning the labels."
    )


def _take(labels, indices):
    """Rows ``indices`` of labels of any form the core reads (frames by position)."""
    if hasattr(labels, "iloc"):
        return labels.iloc[indices]
    array = labels if isinstance(labels, np.ndarray) else np.asarray(labels)
    return array[indices]


def _is_data(obj) -> bool:
    """Array-likes (which may have a ``.labels`` column or attribute) are labels, not datasets."""
    if isinstance(obj, (np.ndarray, list, tuple, torch.Tensor)):
        return True
    module = type(obj).__module__
    return module.startswith("pandas") or module.startswith("numpy")


def reads_label_matrix(policy, labels) -> bool:
    """Is ``labels`` (what :func:`labels_from` returned) a label matrix for ``policy``?

    True exactly when the policy reads label matrices (its class sets
    ``reads_label_matrix = True``, as ``MultiLabel`` does) and the labels are
    2-D (an array, a DataFrame, a scipy.sparse matrix: a dataset's 2-D
    ``.targets`` arrives here as an array). For every other policy a 2-D
    input stays stratum columns, as the core reads it.
    """
    if not getattr(policy, "reads_label_matrix", False):
        return False
    return getattr(labels, "ndim", None) == 2 or (
        getattr(labels, "shape", None) is not None and len(labels.shape) == 2)


def label_input(policy, labels, name: str = "strata"):
    """``labels`` as the policy reads them: a :class:`pystratum.LabelMatrix` when
    :func:`reads_label_matrix` says so (validated: 0/1 cells only, errors
    naming ``name``), else unchanged (the core encodes it as strata)."""
    if reads_label_matrix(policy, labels):
        return label_matrix(labels, name=name)
    return labels
