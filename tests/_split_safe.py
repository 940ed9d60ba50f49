"""A plain recursive reference of the split-safe order (pystratum.engine._batch_order)."""

import numpy as np


def chain_of(n):
    """Prime factors of n, the 2s first, then the others increasing."""
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return sorted(out, key=lambda q: (q != 2, q))


def guaranteed(n):
    """The chunk counts g the split-safe order guarantees for a batch of n rows."""
    out, g = [], 1
    for p in chain_of(n):
        g *= p
        out.append(g)
    return out


def reference_labels(counts):
    """Stratum at every place, by plain recursion over (stratum, count) lists."""
    counts = [int(c) for c in counts]

    def split(entries, chain):
        if not chain:
            return [s for s, c in entries for _ in range(c)]
        p, rest = chain[0], chain[1:]
        parts = [[] for _ in range(p)]
        unit = 0
        for s, c in entries:
            q, r = divmod(c, p)
            for i in range(p):
                extra = 1 if (i - unit) % p < r else 0
                if q + extra:
                    parts[i].append((s, q + extra))
            unit += r
        return [s for part in parts for s in split(part, rest)]

    entries = [(s, c) for s, c in enumerate(counts) if c]
    return np.array(split(entries, chain_of(sum(counts))), dtype=np.int64)


def reference_reorder(batch, codes, turn_of_code):
    """A batch whose rows come stratum by stratum (turn order) -> the split-safe order."""
    batch = np.asarray(batch)
    if batch.shape[0] == 0:
        return batch
    strata = np.asarray(turn_of_code)[np.asarray(codes)[batch]]
    counts = np.bincount(strata, minlength=int(np.max(turn_of_code)) + 1)
    labels = reference_labels(counts)
    out = np.empty_like(batch)
    for s in range(counts.shape[0]):
        out[labels == s] = batch[strata == s]
    return out
