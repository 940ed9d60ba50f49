"""Checks against the mistakes new users make with a batch sampler.

* (A plan with one batch holding every row is refused by the core's guard,
  :mod:`pystratum.engine._single_batch`, which every face shares.)
* ``DataLoader(dataset, sampler=sampler)`` instead of ``batch_sampler=``:
  DataLoader then wraps the sampler in a ``BatchSampler(sampler, 1)`` and
  indexes the dataset with whole lists, which gives oddly shaped batches
  (``(1, batch, ...)``) or an error deep inside the dataset.
* Labels that do not match the dataset's rows: an IndexError mid-epoch, or
  (fewer labels than rows) rows silently never served.

The last two can only be seen when an epoch starts: :func:`check_iterating_caller`
looks at the object that called ``iter()`` on the sampler (one frame, once
per epoch) and never fails for a caller it does not recognise.
"""

from __future__ import annotations

from torch.utils.data.dataloader import _BaseDataLoaderIter

__all__ = ["check_dataset_length", "check_iterating_caller"]


def check_dataset_length(dataset, n_rows: int, where: str = "the dataset",
                         members: bool = False, label_matrix: bool = False) -> None:
    """ValueError unless ``len(dataset) == n_rows`` (datasets without a length pass).

    ``members``: the strata are member lists (``StratumMembers``), not labels;
    ``label_matrix``: a label matrix (``MultiLabel``), one row per dataset row.
    """
    try:
        n_data = len(dataset)
    except TypeError:
        return
    if n_data != n_rows and members:
        raise ValueError(
            f"strata (member lists) cover {n_rows} rows but {where} has {n_data} rows: build "
            f"the member lists from the same rows as the dataset, in its order (parquet_strata "
            f"numbers rows in the order of the files listed, else sorted by path)."
        )
    if n_data != n_rows and label_matrix:
        raise ValueError(
            f"strata (a label matrix) has {n_rows} rows but {where} has {n_data} rows: pass "
            f"one row of labels per row of the dataset, in the dataset's order."
        )
    if n_data != n_rows:
        raise ValueError(
            f"strata has {n_rows} labels but {where} has {n_data} rows: pass one label per "
            f"row of the dataset, in the dataset's order (for a Subset, the labels of its "
            f"indices; for a TensorDataset, the label tensor itself)."
        )


def check_iterating_caller(sampler, frame, n_rows: int) -> None:
    """Refuse being iterated as a per-row sampler; check the DataLoader's dataset length.

    ``frame`` is the frame that called ``iter(sampler)``.
    """
    caller = frame.f_locals.get("self") if frame is not None else None
    if caller is None or caller is sampler:
        return
    if isinstance(caller, _BaseDataLoaderIter):
        if getattr(caller, "_index_sampler", None) is sampler:
            check_dataset_length(caller._dataset, n_rows, "the DataLoader's dataset",
                                 members=getattr(sampler, "_from_members", False))
        return
    try:
        holds_us = caller.__dict__.get("sampler") is sampler
    except AttributeError:  # no instance dict (slots): not a wrapper we know
        return
    if holds_us:
        raise TypeError(
            f"StratifiedBatchSampler is a batch sampler (it yields whole batches of row "
            f"indices) but a {type(caller).__name__} iterates it as a per-row sampler: this "
            f"happens with DataLoader(dataset, sampler=sampler). Pass it as "
            f"DataLoader(dataset, batch_sampler=sampler), without batch_size, shuffle, sampler "
            f"or drop_last."
        )
