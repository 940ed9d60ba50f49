# The random-access stream (rng = "index") and its lazy batches.
#
# The twin of the Python package's index stream (pystratum/streams/_index.py)
# and its lazy plan (pystratum.engine._lazy): a keyed Feistel network over the bits
# of [0, n) with cycle-walking (Luby and Rackoff 1988; Black and Rogaway
# 2002), as TensorFlow's index_shuffle and Grain use. Halves have at most 26
# bits and every product is 26 x 26 bits, so every intermediate is a whole
# number below 2^52 that a double holds exactly; xor works on 26-bit halves
# (bitwXor on integers). Domains of at most 64 values are ordered by the
# keyed network over 52 bits instead.
# The Python module's docstring describes the construction in full.

INDEX_ROUNDS = 6L
INDEX_HALF = 67108864 # 2^26
INDEX_MAX = 4503599627370496 # 2^52
INDEX_C1 = 41475559
INDEX_C2 = 49390517
INDEX_FIXED_KEYS = c(4156040, 27461843, 52005422, 57701188, 604194, 27210192)
INDEX_SMALL_DOMAIN = 64

xor26 = function(a, b) {
  as.double(bitwXor(as.integer(a), as.integer(b)))
}

xor52 = function(a, b) {
  xor26(a %/% INDEX_HALF, b %/% INDEX_HALF) * INDEX_HALF + xor26(a %% INDEX_HALF, b %% INDEX_HALF)
}

# One pass of the network over p + q bits; keys: a list of ROUNDS round keys,
# each a number or a vector as long as x.
index_encrypt = function(x, p, q, keys) {
  left = x %/% 2^q
  right = x %% 2^q
  for (i in seq_len(INDEX_ROUNDS)) {
    f = xor26(right, keys[[i]])
    f = (f * INDEX_C1) %% INDEX_HALF
    f = xor26(f, f %/% 8192)
    f = (f * INDEX_C2) %% INDEX_HALF
    f = f %/% 2^(26 - p)
    f = xor26(f, left)
    left = right
    right = f
    swap = p
    p = q
    q = swap
  }
  left * 2^q + right
}

index_schedule_pass = function(state) {
  index_encrypt(state, 26, 26, as.list(INDEX_FIXED_KEYS))
}

# Round keys: a ROUNDS x length(streams) matrix (each < 2^26).
index_round_keys = function(seed, epoch, streams) {
  state = index_schedule_pass(rep(as.double(seed), length(streams)))
  state = index_schedule_pass(xor52(state, as.double(epoch)))
  state = index_schedule_pass(xor52(state, as.double(streams)))
  keys = matrix(0, INDEX_ROUNDS, length(streams))
  for (i in seq_len(INDEX_ROUNDS)) {
    keys[i, ] = index_schedule_pass(xor52(state, i - 1)) %/% INDEX_HALF
  }
  keys
}

# perm(ranks) (0-based) of the bijection on [0, n) with round keys `keys`.
index_permute_ranks = function(ranks, n, keys) {
  keys = as.list(as.double(keys))
  if (n <= INDEX_SMALL_DOMAIN) {
    values = index_encrypt(seq_len(n) - 1, 26, 26, keys)
    return((order(values) - 1)[ranks + 1])
  }
  w = 0
  while (2^w < n) w = w + 1
  p = w %/% 2
  q = w - p
  y = index_encrypt(as.double(ranks), p, q, keys)
  outside = which(y >= n)
  while (length(outside) > 0L) {
    y[outside] = index_encrypt(y[outside], p, q, keys)
    outside = outside[y[outside] >= n]
  }
  y
}

# index_permute_ranks() of ranks[i] with the keys keys[, run[i]], all on one
# domain [0, n): the passes of a recycled pool in a few vectorised calls, not
# a key derivation and a permutation call per pass.
index_permute_runs = function(ranks, run, n, keys) {
  if (n <= INDEX_SMALL_DOMAIN) {
    column = rep(seq_len(ncol(keys)), each = n)
    values = index_encrypt(rep(seq_len(n) - 1, ncol(keys)), 26, 26,
      lapply(seq_len(INDEX_ROUNDS), function(i) keys[i, column]))
    # Each run's values ordered within the run: its whole permutation (no ties).
    perm = order(column, values) - (column - 1) * n - 1
    return(perm[(run - 1) * n + ranks + 1])
  }
  w = 0
  while (2^w < n) w = w + 1
  p = w %/% 2
  q = w - p
  keys_at = function(at) lapply(seq_len(INDEX_ROUNDS), function(i) keys[i, run[at]])
  y = index_encrypt(as.double(ranks), p, q, keys_at(seq_along(ranks)))
  outside = which(y >= n)
  while (length(outside) > 0L) {
    y[outside] = index_encrypt(y[outside], p, q, keys_at(outside))
    outside = outside[y[outside] >= n]
  }
  y
}

# The keyed shuffle of [0, n) for (seed, epoch, stream), 0-based (the
# values of the Python index stream's index_permutation).
index_permutation = function(n, seed, epoch = 0, stream = 0, ranks = NULL) {
  keys = index_round_keys(seed, epoch, stream)[, 1]
  if (is.null(ranks)) ranks = seq_len(n) - 1
  index_permute_ranks(ranks, n, keys)
}

assert_index_seed = function(seed) {
  if (is.null(seed)) {
    return(NULL)
  }
  if (seed < 0 || seed >= INDEX_MAX) {
    abort_value("seed", sprintf(paste0(
      "seed must be an integer in [0, 2**52) for rng='index' (R holds it exactly), ",
      "got seed=%s. Use a smaller non-negative seed."), show_value(seed)))
  }
  seed
}

# The batches of an rng = "index" epoch: batch b holds, stratum by stratum
# in order of first appearance, the members perm_s(lo..hi-1) of stratum s
# (perm_s keyed by seed, epoch and the stratum's turn). Pooled and recycled
# strata (Targets, Downsample): rank r is pool rank r %% pool of pass
# r %/% pool, pass p >= 1 a further bijection of the pool (stream turn + S p).
# Row weights as assemble_epoch() attaches them.
# With `shards` (resolve_shards(), no pools: refused by check_index_shards()),
# rank r of stratum s is row r of its index_shard_sequences().
index_batches = function(encoded, allocation, seed, epoch, split_safe = TRUE, shards = NULL) {
  cuts = allocation$cuts
  sizes = as.double(encoded$sizes)
  n_strata = length(sizes)
  turn_order = first_appearance_turn(encoded)
  turn = integer(n_strata)
  turn[turn_order] = seq_len(n_strata) - 1L
  keys = index_round_keys(seed, epoch, turn)
  members = split(seq_along(encoded$codes), factor(encoded$codes, levels = seq_len(n_strata)))
  pool = if (is.null(allocation$pool_sizes)) sizes else as.double(allocation$pool_sizes)
  if (!is.null(shards)) {
    sequences = index_shard_sequences(shards, seed, epoch, members, turn)
  }
  rows_of = function(s, ranks) {
    if (!is.null(shards)) return(sequences[[s]][ranks + 1])
    passes = ranks %/% pool[s]
    within = ranks - passes * pool[s]
    again = which(passes > 0)
    if (length(again) > 0L) {
      recycled = sort(unique(passes[again]))
      pass_keys = index_round_keys(seed, epoch, turn[s] + n_strata * recycled)
      within[again] = index_permute_runs(within[again], match(passes[again], recycled),
        pool[s], pass_keys)
    }
    members[[s]][index_permute_ranks(within, sizes[s], keys[, s]) + 1]
  }
  # Each stratum's served ranks at once, then cut into batches: the cost is the
  # rows served plus a few calls per stratum, not calls per batch or per pass.
  served = lapply(seq_len(n_strata), function(s) {
    used = cuts[s, ncol(cuts)]
    if (used > 0) rows_of(s, seq(0, used - 1)) else integer(0)
  })
  batches = lapply(seq_len(ncol(cuts) - 1L), function(b) {
    unlist(lapply(turn_order, function(s) {
      lo = cuts[s, b]
      hi = cuts[s, b + 1L]
      if (hi > lo) served[[s]][seq(lo + 1, hi)] else integer(0)
    }), use.names = FALSE)
  })
  if (split_safe) batches = split_safe_batches(batches, encoded)
  with_row_weights(batches, allocation, encoded$codes)
}

# rng = "index" with shards (docs/SHARDS.md, "Lazy plans"): stream numbers
# reserved for the shard order and for the per-(stratum, block) bijections.
SHARD_ORDER_STREAM = 2^52 - 1
BLOCK_STREAM_BASE = 2^51

# Every stratum's rows in rank order for an rng = "index" epoch with shards
# (Python's LazyShardOrder): the shards in the keyed order of stream
# SHARD_ORDER_STREAM, blocks of W consecutive shards; stratum s lists its rows
# in shard order (its rows of the first shard, then of the second, ..., each
# shard's in row order), and its C rows of block j, which start at index D of
# that list, are ranks D .. D + C - 1 in the keyed order of the bijection of
# [0, C) with stream BLOCK_STREAM_BASE + turn * m + j (m blocks). Materialised
# here for every rank (R's index epochs are materialised); `members`: each
# stratum's rows, increasing; `turn`: each stratum's 0-based turn.
# All strata at once, as runs of (stratum, block) pairs that hold rows (at
# most N of them): O(N + H), not a table of H / W blocks per stratum.
index_shard_sequences = function(shards, seed, epoch, members, turn) {
  n_shards = shards$count
  window = min(shards$window, max(n_shards, 1))
  n_blocks = ceiling(n_shards / window)
  shard_at = index_permute_ranks(seq_len(n_shards) - 1, n_shards,
    index_round_keys(seed, epoch, SHARD_ORDER_STREAM)[, 1])
  position = numeric(n_shards)
  position[shard_at + 1] = seq_len(n_shards) - 1
  n_strata = length(members)
  stratum = rep.int(seq_len(n_strata), lengths(members))
  rows = unlist(members, use.names = FALSE)
  if (length(rows) == 0L) return(lapply(members, function(m) integer(0)))
  at = position[shards$of_row[rows]]
  # Stratum by stratum, each in shard order; radix order is stable, so a
  # shard's rows stay increasing.
  sorted = order(stratum, at, method = "radix")
  rows = rows[sorted]
  stratum = stratum[sorted]
  block = at[sorted] %/% window
  n = length(rows)
  run_start = which(c(TRUE, stratum[-1L] != stratum[-n] | block[-1L] != block[-n]))
  run_size = diff(c(run_start, n + 1L))
  run = rep.int(seq_along(run_start), run_size)
  rank = seq_len(n) - run_start[run]
  keys = index_round_keys(seed, epoch,
    BLOCK_STREAM_BASE + turn[stratum[run_start]] * n_blocks + block[run_start])
  permuted = index_permute_sized_runs(rank, run, run_size, keys)
  split(rows[run_start[run] + permuted], factor(stratum, levels = seq_len(n_strata)))
}

# index_permute_ranks() of ranks[i] on [0, sizes[run[i]]) with the keys
# keys[, run[i]], where the runs are contiguous and each run's ranks are
# 0 .. size - 1 in order (a whole domain per run): a few vectorised calls per
# bit width, not a call per run.
index_permute_sized_runs = function(ranks, run, sizes, keys) {
  out = numeric(length(ranks))
  keys_at = function(at) lapply(seq_len(INDEX_ROUNDS), function(i) keys[i, run[at]])
  size_of = sizes[run]
  small = which(size_of <= INDEX_SMALL_DOMAIN)
  if (length(small) > 0L) {
    # A small run's permutation: its ranks ordered by their 52-bit values.
    values = index_encrypt(as.double(ranks[small]), 26, 26, keys_at(small))
    out[small] = ranks[small][order(run[small], values, method = "radix")]
  }
  large = which(size_of > INDEX_SMALL_DOMAIN)
  width = ceiling(log2(size_of[large]))
  # log2 may round: the width is the least w with 2^w >= size.
  width = width + (2^width < size_of[large]) - (2^(width - 1) >= size_of[large])
  for (w in unique(width)) {
    at = large[width == w]
    p = w %/% 2
    q = w - p
    y = index_encrypt(as.double(ranks[at]), p, q, keys_at(at))
    outside = which(y >= size_of[at])
    while (length(outside) > 0L) {
      y[outside] = index_encrypt(y[outside], p, q, keys_at(at[outside]))
      outside = outside[y[outside] >= size_of[at[outside]]]
    }
    out[at] = y
  }
  out
}
