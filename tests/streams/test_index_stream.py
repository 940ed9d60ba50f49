"""The random-access stream (rng="index"): bijection, statistics, keys, arguments.

Statistical tests use fixed seeds and a Bonferroni-corrected level: each
family of tests fails only if some p-value is below 0.001 / (tests in it).
"""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from pystratum.streams._index import (MAX_INDEX, ROUNDS, SMALL_DOMAIN, IndexStream,
                                     check_index_seed, index_permutation, permute_ranks,
                                     round_keys)

ALPHA = 0.001


def _permutations(n, seed, epochs=None, streams=None, ranks=None):
    """Positions of ``ranks`` (default: all) in one permutation per epoch or per stream number."""
    if epochs is not None:
        epochs = np.asarray(epochs, dtype=np.uint64)
        keys = round_keys(seed, epochs, np.zeros(epochs.shape[0]))
    else:
        keys = round_keys(seed, 0, streams)
    count = keys.shape[1]
    ranks = np.arange(n) if ranks is None else np.asarray(ranks)
    flat = np.tile(ranks, count)
    per_value = np.repeat(keys, ranks.shape[0], axis=1)
    positions = permute_ranks(flat, np.full(flat.shape[0], n), per_value)
    return positions.reshape(count, ranks.shape[0])


@settings(max_examples=60)
@given(n=st.one_of(st.integers(1, 300), st.integers(300, 20_000)),
       seed=st.integers(0, MAX_INDEX - 1), epoch=st.integers(0, 10**6),
       stream=st.integers(0, 10**6))
def test_every_domain_size_gives_a_bijection(n, seed, epoch, stream):
    perm = index_permutation(n, seed, epoch, stream)
    assert perm.dtype == np.int64
    assert np.array_equal(np.sort(perm), np.arange(n))


@settings(max_examples=30)
@given(sizes=st.lists(st.integers(1, 400), min_size=1, max_size=6), seed=st.integers(0, 2**40),
       data=st.data())
def test_mixed_domains_equal_one_domain_at_a_time(sizes, seed, data):
    """The per-value path (one domain per value, as the lazy plan uses) equals the scalar path."""
    streams = list(range(len(sizes)))
    keys = round_keys(seed, 3, streams)
    ranks = [data.draw(st.lists(st.integers(0, n - 1), max_size=20)) for n in sizes]
    flat = np.array([r for rs in ranks for r in rs], dtype=np.int64)
    domain = np.repeat(sizes, [len(rs) for rs in ranks])
    per_value = np.repeat(keys, [len(rs) for rs in ranks], axis=1)
    got = permute_ranks(flat, domain, per_value)
    expected = np.concatenate([permute_ranks(np.array(rs, dtype=np.int64), n, keys[:, s])
                               for s, (n, rs) in enumerate(zip(sizes, ranks))] + [[]])
    assert np.array_equal(got, expected.astype(np.int64))


def test_any_subset_of_positions_matches_the_whole_permutation():
    n = 100_003
    whole = index_permutation(n, 9, 2, 5)
    ranks = np.array([n - 1, 0, 77, 77, 50_000])
    assert np.array_equal(index_permutation(n, 9, 2, 5, ranks=ranks), whole[ranks])


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
@pytest.mark.parametrize("seed, across", [(2024, "epochs"), (77, "streams")])
def test_all_orders_equally_likely_across_epochs_and_strata(n, seed, across):
    """Chi-square against all n! orders: 100 permutations per order, epochs (or
    stream numbers, one per stratum) 0.."""
    orders = {order: i for i, order in enumerate(itertools.permutations(range(n)))}
    count = 100 * len(orders)
    perms = _permutations(n, seed=seed, **{across: range(count)})
    tally = np.zeros(len(orders))
    for row in perms.tolist():
        tally[orders[tuple(row)]] += 1
    assert stats.chisquare(tally).pvalue > ALPHA / 10  # 5 sizes x 2 families


def _chi2_pvalue(table, df):
    expected = table.sum() / table.size
    statistic = ((table - expected) ** 2 / expected).sum()
    return stats.chi2.sf(statistic, df)


# Both sides of the small-domain threshold and the Feistel domains above it.
UNIFORMITY_SIZES = [7, SMALL_DOMAIN, SMALL_DOMAIN + 1, 100, 257, 1000]


@pytest.mark.parametrize("n", UNIFORMITY_SIZES)
def test_positions_are_uniform(n):
    """Rank r lands on every position equally often (n x n table over epochs).

    Each permutation adds one to every row and column, so the statistic has
    (n - 1)^2 degrees of freedom.
    """
    count = 30 * n if n <= 257 else 4000
    perms = _permutations(n, seed=5, epochs=range(count))
    table = np.zeros((n, n))
    np.add.at(table, (np.tile(np.arange(n), count), perms.ravel()), 1)
    assert _chi2_pvalue(table, (n - 1) ** 2) > ALPHA / len(UNIFORMITY_SIZES)


PAIR_SIZES = [9, 20, SMALL_DOMAIN + 1, 80]


@pytest.mark.parametrize("n", PAIR_SIZES)
def test_positions_of_two_ranks_are_jointly_uniform(n):
    """(perm(0), perm(1)) covers the n (n - 1) ordered pairs evenly."""
    count = 20 * n * (n - 1)
    perms = _permutations(n, seed=11, epochs=range(count), ranks=[0, 1])
    table = np.zeros((n, n))
    np.add.at(table, (perms[:, 0], perms[:, 1]), 1)
    off_diagonal = table[~np.eye(n, dtype=bool)]
    assert table.trace() == 0
    assert stats.chisquare(off_diagonal).pvalue > ALPHA / len(PAIR_SIZES)


@pytest.mark.parametrize("n", [6, 40, 1000])
@pytest.mark.parametrize("across", ["epochs", "strata"])
def test_consecutive_epochs_and_strata_are_independent(n, across):
    """The position of a rank in epoch k (stratum s) says nothing about k+1 (s+1)."""
    count = 30 * n * n if n <= 40 else 20_000
    rank = [n // 3]
    if across == "epochs":
        first = _permutations(n, seed=3, epochs=range(0, 2 * count, 2), ranks=rank)[:, 0]
        second = _permutations(n, seed=3, epochs=range(1, 2 * count, 2), ranks=rank)[:, 0]
    else:
        first = _permutations(n, seed=3, streams=range(0, 2 * count, 2), ranks=rank)[:, 0]
        second = _permutations(n, seed=3, streams=range(1, 2 * count, 2), ranks=rank)[:, 0]
    bins = min(n, 20)
    table = np.zeros((bins, bins))
    np.add.at(table, (first * bins // n, second * bins // n), 1)
    # Independence given uniform margins: chi-square of the contingency table.
    assert stats.chi2_contingency(table).pvalue > ALPHA / 6


def test_keys_depend_on_seed_epoch_and_stream_and_fit_26_bits():
    keys = np.stack([round_keys(s, e, [t])[:, 0]
                     for s, e, t in itertools.product([0, 1], [0, 1], [0, 1])])
    assert keys.shape == (8, ROUNDS)
    assert len({tuple(row) for row in keys.tolist()}) == 8
    assert keys.max() < 2**26
    assert np.array_equal(round_keys(12, 4, [3, 9]), round_keys(12, 4, [3, 9]))


def test_seed_checks_name_the_argument():
    with pytest.raises(TypeError, match=r"seed must be an integer .* rng='index', got seed=1.5"):
        check_index_seed(1.5)
    with pytest.raises(TypeError, match="seed"):
        check_index_seed(True)
    with pytest.raises(ValueError, match=r"seed must be an integer in \[0, 2\*\*52\).*seed=-1"):
        check_index_seed(-1)
    with pytest.raises(ValueError, match="seed=4503599627370496"):
        check_index_seed(MAX_INDEX)
    assert 0 <= check_index_seed(None) < 2**31
    with pytest.raises(ValueError, match=r"n must be at most 2\*\*52"):
        index_permutation(MAX_INDEX + 1, 0, ranks=np.array([0]))


def test_largest_domains_stay_in_range():
    """Near 2**52 every intermediate is still exact (R reproduces it with doubles)."""
    n = MAX_INDEX - 12345
    ranks = np.array([0, 1, n - 1, n // 2], dtype=np.int64)
    got = index_permutation(n, MAX_INDEX - 1, MAX_INDEX - 1, 2**40, ranks=ranks)
    assert np.all((got >= 0) & (got < n)) and len(set(got.tolist())) == 4


def test_stream_protocol_has_no_position():
    stream = IndexStream(7)
    assert np.array_equal(stream.permutation(50, 2), index_permutation(50, 7, 2))
    stream.advance_to(50, 9)
    assert stream.state_dict() == {}
    stream.load_state_dict({})
    with pytest.raises(ValueError, match="no position"):
        stream.load_state_dict({"epoch": 1})
    with pytest.raises(ValueError, match="epoch"):
        stream.keys(MAX_INDEX, [0])
