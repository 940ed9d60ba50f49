# The stratified allocation (Hocking 2025), in exact integer arithmetic.
#
# num_batches = max(1, N_min %/% m); the row of rank i (1-based, order of
# appearance in the permutation) in stratum s of size N_s goes to batch
# ceiling(i * num_batches / N_s). Equivalently, batch b receives the ranks
# floor((b - 1) * N_s / B) < i <= floor(b * N_s / B). Those cut points depend
# on the stratum sizes only, not on the permutation, so they are computed
# once per stratum and batch (S * B <= N values, since S * N_min <= N), and
# the per-row work is a stable sort by stratum, a stable sort by batch and
# some indexing: no R-level loop over rows and no per-row multiplication
# that could overflow or round.

# Rank cuts of the stratified allocation: an S x (B + 1) matrix, see policy_base.R.
# Guarantee: when N_min >= m every batch gets >= m ranks of every stratum,
# and a stratum's per-batch counts differ by at most one.
min_per_stratum_cuts = function(sizes, min_samples_per_stratum) {
  sizes = as.double(sizes)
  n_batches = max(1, min(sizes) %/% min_samples_per_stratum)
  outer(sizes, seq.int(0, n_batches), function(size, b) floor_mul_div(size, b, n_batches))
}

# Rows of each stratum (rows of the matrix) in each batch (columns).
batch_counts = function(sizes, min_samples_per_stratum) {
  counts_from_cuts(min_per_stratum_cuts(sizes, min_samples_per_stratum))
}

# S x (B + 1) rank cuts -> S x B integer counts.
counts_from_cuts = function(cuts) {
  n_batches = ncol(cuts) - 1L
  counts = cuts[, -1L, drop = FALSE] - cuts[, -(n_batches + 1L), drop = FALSE]
  storage.mode(counts) = "integer"
  counts
}

# floor(a * b / d), exact for whole numbers 0 <= a, b < 2^31 and 1 <= d < 2^31.
# The product may exceed 2^53 (e.g. two strata of 10^8 rows with m = 1), where
# doubles no longer hold every integer, so split b = b_hi * 2^16 + b_lo:
#   a * b = (a * b_hi) * 2^16 + a * b_lo, with a * b_hi < 2^46 and
#   a * b_lo < 2^47; with a * b_hi = q * d + r (r < d < 2^31):
#   floor(a * b / d) = q * 2^16 + floor((r * 2^16 + a * b_lo) / d),
# where every intermediate is a whole number below 2^53, and R's %/% on such
# doubles is exact (it corrects the quotient with the remainder).
floor_mul_div = function(a, b, d) {
  b_hi = b %/% 65536
  b_lo = b - b_hi * 65536
  high = a * b_hi
  q = high %/% d
  r = high - q * d
  q * 65536 + (r * 65536 + a * b_lo) %/% d
}

# The batches of one epoch: a list of integer vectors of row positions.
#   codes:       stratum code (1..S) of each row position
#   counts:      batch_counts(sizes, m)
#   permutation: the epoch's permutation of 1..N, or NULL for row order; or
#                an epoch's virtual sequence (rows may repeat), when the
#                counts of each stratum add up to its rows in it
# Batches come in order 1..B; inside a batch rows keep permuted order.
allocate_batches = function(codes, counts, permutation = NULL) {
  n_batches = ncol(counts)
  codes_in_order = if (is.null(permutation)) codes else codes[permutation]
  # A stable sort by stratum lists each stratum's rows by rank (order of
  # appearance); ranks 1..N_s of stratum s fill its batches in order.
  by_stratum = order(codes_in_order, method = "radix")
  batch_in_order = integer(length(codes_in_order))
  batch_in_order[by_stratum] = rep.int(rep.int(seq_len(n_batches), nrow(counts)), t(counts))
  # A stable sort by batch keeps permuted order inside each batch.
  by_batch = order(batch_in_order, method = "radix")
  rows = if (is.null(permutation)) by_batch else permutation[by_batch]
  split_by_sizes(rows, colSums(counts))
}

# Every row once, in row order, cut into batches of the given sizes.
consecutive_batches = function(batch_sizes) {
  split_by_sizes(seq_len(sum(batch_sizes)), batch_sizes)
}

split_by_sizes = function(x, sizes) {
  groups = rep.int(seq_along(sizes), sizes)
  attr(groups, "levels") = as.character(seq_along(sizes))
  class(groups) = "factor"
  unname(split(x, groups))
}

# Warn when the smallest stratum cannot give every batch m rows: there is
# then a single batch holding every row.
check_smallest_stratum = function(encoded, min_samples_per_stratum) {
  smallest = which.min(encoded$sizes)
  n_min = encoded$sizes[[smallest]]
  if (n_min < min_samples_per_stratum) {
    label = stratum_label(encoded, smallest)
    warn_stratum_too_small(sprintf(paste0(
      "The smallest stratum (%s) has %d rows, fewer than min_samples_per_stratum=%s: ",
      "returning a single batch with every row. Lower min_samples_per_stratum to at most %d ",
      "to get several batches."), label, n_min, show_value(min_samples_per_stratum), n_min),
      label, n_min, min_samples_per_stratum)
  }
  invisible(NULL)
}
