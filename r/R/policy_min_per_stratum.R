# MinPerStratum, policy_min_per_stratum(m): the twin of
# pystratum/policies/_min_per_stratum.py. The stratified allocation (Hocking
# 2025), in exact integer arithmetic.
#
# num_batches = max(1, N_min %/% m); the row of rank i (1-based, order of
# appearance in the permutation) in stratum s of size N_s goes to batch
# ceiling(i * num_batches / N_s). Equivalently, batch b receives the ranks
# floor((b - 1) * N_s / B) < i <= floor(b * N_s / B). Those cut points depend
# on the stratum sizes only, not on the permutation, so they are computed
# once per stratum and batch (S * B <= N values, since S * N_min <= N), and
# the per-row work is a stable sort by stratum, a stable sort by batch and
# some indexing (allocate_batches(), assemble.R): no R-level loop over rows
# and no per-row multiplication that could overflow or round.

#' @rdname policies
#' @export
policy_min_per_stratum = function(m, batch_order = NULL) {
  fix = if (is.function(m)) {
    "That is a function: call it, e.g. policy_fixed_size(batch_size = 64)."
  } else {
    paste("Pass a number (at least m rows of every stratum per batch) or a policy",
      "such as policy_fixed_size(batch_size = 64).")
  }
  m = assert_whole_number(m, "min_samples_per_stratum", minimum = 1, fix = fix)
  # Parameters are stored as doubles: 5L and 5 give identical() policies.
  new_policy("min_per_stratum", with_batch_order(list(m = as.double(m)), batch_order))
}

#' @export
policy_allocate.pystratum_policy_min_per_stratum = function(policy, encoded, epoch) {
  check_smallest_stratum(encoded, policy$params$m)
  list(cuts = min_per_stratum_cuts(encoded$sizes, policy$params$m), row_weights = NULL,
    pool_sizes = NULL)
}

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
