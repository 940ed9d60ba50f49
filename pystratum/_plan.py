"""The public core: strata in, batches of row positions out."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._allocation import min_samples_per_stratum_cuts
from ._assemble import BatchOrder, assemble_batches
from ._strata import EncodedStrata, encode_strata
from ._streams import RNG_CHOICES, stream_for
from ._validation import check_bool, check_choice, check_int

__all__ = ["BatchPlan", "plan_batches", "stratified_batches", "plan_from_stream"]


@dataclass(frozen=True, repr=False)
class BatchPlan:
    """One epoch's batches, with what is needed to report and reproduce them.

    order:   int64 row positions (0-based), batches concatenated.
    bounds:  batch ``b`` is ``order[bounds[b]:bounds[b + 1]]``.
    strata:  the stratum labels (tuples for multi-column strata).
    counts:  integer table (num_batches, n_strata): rows of each stratum per batch.
    seed:    pass it again (same ``rng``, ``epoch``) to get the same batches.
    """

    order: np.ndarray
    bounds: np.ndarray
    strata: tuple
    counts: np.ndarray
    seed: object
    rng: str
    epoch: int
    shuffle: bool
    min_samples_per_stratum: int

    @property
    def num_batches(self) -> int:
        return int(self.bounds.shape[0] - 1)

    def __len__(self) -> int:
        return self.num_batches

    @property
    def batches(self) -> list:
        """List of int64 arrays of row positions, one per batch (views of ``order``)."""
        return BatchOrder(self.order, self.bounds).batches()

    def __iter__(self):
        return iter(self.batches)

    def __getitem__(self, batch: int) -> np.ndarray:
        batch = range(self.num_batches)[batch]
        return self.order[self.bounds[batch]:self.bounds[batch + 1]]

    def batch_of_row(self) -> np.ndarray:
        """int64 array with the 0-based batch of each row position."""
        result = np.full(self.order.shape[0], -1, dtype=np.int64)
        sizes = np.diff(self.bounds)
        result[self.order] = np.repeat(np.arange(self.num_batches, dtype=np.int64), sizes)
        return result

    def counts_table(self, max_rows: int = 10) -> str:
        """The per-batch x per-stratum count table as text (like the blog's ``dcast``)."""
        header = ["batch"] + [_label_text(label) for label in self.strata] + ["total"]
        rows = []
        shown = list(range(self.num_batches))
        if len(shown) > max_rows:
            shown = shown[: max_rows // 2] + [None] + shown[-(max_rows - max_rows // 2):]
        for b in shown:
            if b is None:
                rows.append(["..."] * len(header))
                continue
            counts = self.counts[b]
            rows.append([str(b + 1)] + [str(int(c)) for c in counts] + [str(int(counts.sum()))])
        widths = [max(len(r[k]) for r in [header] + rows) for k in range(len(header))]
        lines = ["  ".join(cell.rjust(w) for cell, w in zip(row, widths)) for row in [header] + rows]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"BatchPlan(num_batches={self.num_batches}, n_rows={self.order.shape[0]}, "
            f"n_strata={len(self.strata)}, min_samples_per_stratum="
            f"{self.min_samples_per_stratum}, rng={self.rng!r}, seed={self.seed!r}, "
            f"epoch={self.epoch}, shuffle={self.shuffle})"
        )


def _label_text(label) -> str:
    if isinstance(label, tuple):
        return "/".join(str(v) for v in label)
    return str(label)


def plan_batches(strata, min_samples_per_stratum, *, seed=None, rng="numpy", epoch=0,
                 shuffle=True) -> BatchPlan:
    """Like :func:`stratified_batches`, returning a :class:`BatchPlan` report."""
    m = check_int(min_samples_per_stratum, "min_samples_per_stratum", minimum=1)
    rng = check_choice(rng, "rng", RNG_CHOICES)
    epoch = check_int(epoch, "epoch", minimum=0)
    shuffle = check_bool(shuffle, "shuffle")
    # Scalar arguments first (as the R package does), the O(N) strata last.
    stream = stream_for(rng, seed, shuffle)
    encoded = encode_strata(strata)
    return plan_from_stream(encoded, m, stream, epoch=epoch, rng=rng)


def plan_from_stream(encoded: EncodedStrata, min_samples_per_stratum: int, stream, *,
                     epoch: int, rng: str) -> BatchPlan:
    """The plan for already-validated inputs; ``stream=None`` means row order.

    Framework layers (the torch sampler) call this with a stream they keep
    across epochs, so sequential streams do not restart every epoch.
    """
    n = encoded.n_rows
    if stream is None:
        permutation = np.arange(n, dtype=np.int64)
    else:
        permutation = stream.permutation(n, epoch)
    cuts = min_samples_per_stratum_cuts(encoded.sizes, min_samples_per_stratum, encoded.labels)
    batches = assemble_batches(encoded.codes, permutation, cuts, sizes=encoded.sizes)
    return BatchPlan(
        order=batches.order,
        bounds=batches.bounds,
        strata=encoded.labels,
        counts=np.diff(cuts, axis=1).T,  # same dtype as the cuts (int32 for any real data)
        seed=None if stream is None else stream.seed,
        rng=rng,
        epoch=epoch,
        shuffle=stream is not None,
        min_samples_per_stratum=min_samples_per_stratum,
    )


def stratified_batches(strata, min_samples_per_stratum, *, seed=None, rng="numpy", epoch=0,
                       shuffle=True) -> list:
    """Split rows into mini-batches that each contain every stratum.

    Parameters
    ----------
    strata : array-like, pandas Series/DataFrame, 2-D array or list of columns
        One label per row; with several columns every distinct combination of
        values is one stratum.
    min_samples_per_stratum : int
        ``m``, the fewest rows of each stratum a batch may hold.
    seed : None, int, numpy SeedSequence or Generator
        With ``rng="R"`` an int means R's ``set.seed(seed)``. None draws fresh
        entropy (see :func:`plan_batches` to read back the seed used).
    rng : {"numpy", "R", "torch"}
        The random stream the epoch's permutation comes from.
    epoch : int
        Which epoch's shuffle (0 first). Each epoch is a new permutation.
    shuffle : bool
        False keeps row order (the identity permutation).

    Returns
    -------
    list of int64 numpy arrays of 0-based row positions, one per batch.

    Guarantees: every row appears in exactly one batch; with the smallest
    stratum of size ``N_min >= m`` there are ``N_min // m`` batches, each
    holding at least ``m`` rows of every stratum, and a stratum's per-batch
    counts differ by at most one. Inside a batch rows keep permuted order.
    The same (strata, m, seed, rng, epoch) always gives the same batches;
    with ``rng="R"`` they equal R's ``pystratum::stratified_batches`` minus one.
    If ``N_min < m`` a single batch holds every row and a
    ``StratumTooSmallWarning`` says so.
    """
    return plan_batches(strata, min_samples_per_stratum, seed=seed, rng=rng, epoch=epoch,
                        shuffle=shuffle).batches
