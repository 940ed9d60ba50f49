# FixedSize, policy_fixed_size(): the twin of pystratum/policies/_fixed_size.py.
# Batches of exactly batch_size rows but a shorter last one (sizes = "exact")
# or round(N / batch_size) batches of nearly equal size ("balanced"), every
# stratum spread as evenly as it can be; ?policies states the rules.

#' @rdname policies
#' @export
policy_fixed_size = function(batch_size, min_per_stratum = 1, sizes = "exact") {
  batch_size = assert_whole_number(batch_size, "batch_size", minimum = 1)
  min_per_stratum = assert_whole_number(min_per_stratum, "min_per_stratum", minimum = 1)
  sizes = assert_choice(sizes, "sizes", c("exact", "balanced"))
  new_policy("fixed_size", list(batch_size = as.double(batch_size),
    min_per_stratum = as.double(min_per_stratum), sizes = sizes))
}

#' @export
policy_allocate.pystratum_policy_fixed_size = function(policy, encoded, epoch) {
  if (identical(policy$params$sizes, "exact")) {
    layout = fixed_size_exact_layout(policy, encoded, epoch)
    counts = cbind(layout$counts, layout$last)
    # matrix(): apply() drops to a vector when there is one batch.
    cuts = cbind(0, matrix(t(apply(counts, 1L, cumsum)), nrow = nrow(counts)))
    dimnames(cuts) = NULL
    return(list(cuts = cuts, row_weights = NULL, pool_sizes = NULL))
  }
  sizes = as.double(encoded$sizes)
  n_rows = sum(sizes)
  batch_size = policy$params$batch_size
  n_batches = fixed_size_num_batches(n_rows, batch_size)
  check_fixed_size_feasible(policy, encoded, n_batches, n_rows)
  base = sizes %/% n_batches
  extra = sizes - base * n_batches
  # Extras of stratum s fill batches start_s, start_s + 1, ... (mod B), where
  # stratum s - 1's stopped; each epoch shifts the cycle by a whole epoch's
  # extras. mul_mod keeps the product exact for any size.
  total_extra = sum(extra) %% n_batches
  first = mul_mod(epoch %% n_batches, total_extra, n_batches)
  # Strata take turns in order of first appearance in the data (a property of
  # the rows, not of the label coding, so Python agrees).
  turn = order(match(seq_along(sizes), encoded$codes))
  starts = numeric(length(sizes))
  starts[turn] = (first + cumsum(extra[turn]) - extra[turn]) %% n_batches
  takes_extra = outer(starts, seq.int(0, n_batches - 1),
    function(start, b) (b - start) %% n_batches) < extra
  counts = base + takes_extra  # S x B
  cuts = cbind(0, if (n_batches == 1) counts else t(apply(counts, 1L, cumsum)))
  dimnames(cuts) = NULL
  list(cuts = cuts, row_weights = NULL, pool_sizes = NULL)
}

# Exact sizes (Python's FixedSize(sizes="exact")): F = (N - 1) %/% batch_size
# full batches of batch_size rows, then one of L = N - F * batch_size rows.
# Stratum s gives the last batch floor(C'_s L / N) - floor(C_s L / N) rows
# (C_s: rows of the strata before s in order of first appearance; the floor
# or ceiling of N_s L / N, adding up to L) and its other rows to the full
# batches as the balanced rule does (the extras then fill every full batch
# alike, so the cycle's epoch shift is 0). Returns list(full, last, counts =
# S x F matrix); with check = TRUE a stratum short of min_per_stratum in a
# full batch is an error.
fixed_size_exact_layout = function(policy, encoded, epoch, batch_size = policy$params$batch_size,
  check = TRUE) {
  sizes = as.double(encoded$sizes)
  n_rows = sum(sizes)
  full = (n_rows - 1) %/% batch_size
  last_rows = n_rows - full * batch_size
  turn = order(match(seq_along(sizes), encoded$codes))
  if (full == 0) {
    last = sizes
  } else {
    # Products up to N * L must stay below 2^53 for %/% on doubles to be exact.
    if (n_rows * last_rows >= 2^53) {
      abort_value("batch_size", sprintf(paste0(
        "batch_size=%s on %s rows leaves a last batch of %s rows, and N * L passes 2^53, ",
        "where R's doubles stop computing its strata's shares exactly. Use a smaller ",
        "batch_size, or sizes = \"balanced\"."), show_value(batch_size),
        format(n_rows, scientific = FALSE), format(last_rows, scientific = FALSE)))
    }
    marks = (c(0, cumsum(sizes[turn])) * last_rows) %/% n_rows
    last = numeric(length(sizes))
    last[turn] = diff(marks)
  }
  counts = matrix(0, length(sizes), max(full, 0))
  if (full > 0) {
    rest = sizes - last
    base = rest %/% full
    extra = rest - base * full
    starts = numeric(length(sizes))
    total_extra = sum(extra) %% full
    first = mul_mod(epoch %% full, total_extra, full)
    starts[turn] = (first + cumsum(extra[turn]) - extra[turn]) %% full
    takes_extra = outer(starts, seq.int(0, full - 1),
      function(start, b) (b - start) %% full) < extra
    counts = base + takes_extra
  }
  layout = list(full = full, last = last, counts = counts)
  if (check && fixed_size_exact_fewest(layout, last_rows == batch_size)$rows <
    policy$params$min_per_stratum) {
    fixed_size_exact_infeasible(policy, encoded, layout, last_rows == batch_size)
  }
  layout
}

# The fewest rows a stratum gives a full batch: list(stratum, rows).
fixed_size_exact_fewest = function(layout, last_is_full) {
  fewest = if (layout$full == 0) {
    if (last_is_full) layout$last else rep(Inf, length(layout$last))
  } else {
    low = apply(layout$counts, 1L, min)
    if (last_is_full) pmin(low, layout$last) else low
  }
  short = which.min(fewest)
  list(stratum = short, rows = fewest[[short]])
}

fixed_size_exact_infeasible = function(policy, encoded, layout, last_is_full) {
  m = policy$params$min_per_stratum
  sizes = as.double(encoded$sizes)
  n_rows = sum(sizes)
  if (min(sizes) < m) {
    short = which.min(sizes)
    abort_value("min_per_stratum", sprintf(paste0(
      "min_per_stratum=%s is more rows than stratum %s has (%s): no batch size below the row ",
      "count (%s) gives every full batch that many; lower min_per_stratum to at most %s, or ",
      "use a policy that oversamples small strata."), show_value(m),
      stratum_label(encoded, short), format(sizes[[short]], scientific = FALSE),
      format(n_rows, scientific = FALSE), format(sizes[[short]], scientific = FALSE)))
  }
  short = fixed_size_exact_fewest(layout, last_is_full)$stratum
  abort_value("batch_size", sprintf(paste0(
    "batch_size=%s gives %s full batch(es) of %s rows, but stratum %s has only %s rows: it ",
    "cannot give every full batch min_per_stratum=%s row(s). Use batch_size >= %s, lower ",
    "min_per_stratum, or use a policy that oversamples small strata."),
    show_value(policy$params$batch_size), format(layout$full, scientific = FALSE),
    format(n_rows, scientific = FALSE), stratum_label(encoded, short),
    format(sizes[[short]], scientific = FALSE), show_value(m),
    format(fixed_size_smallest_exact(policy, encoded), scientific = FALSE)))
}

# The smallest feasible batch_size with exact sizes, searched over a bounded
# range (Python's FixedSize._smallest_exact_size).
fixed_size_smallest_exact = function(policy, encoded) {
  sizes = as.double(encoded$sizes)
  n_rows = sum(sizes)
  n_min = min(sizes)
  m = policy$params$min_per_stratum
  # Enough: every full-batch count is at least floor(N_s * batch_size / N) >= m.
  enough = -((-m * n_rows) %/% n_min)
  # Needed: F = B - 1 full batches each taking m of the smallest stratum's rows.
  needed = -((-n_rows) %/% (n_min %/% m + 1))
  candidate = needed
  while (candidate < min(enough, needed + 4096)) {
    layout = fixed_size_exact_layout(policy, encoded, 0, candidate, check = FALSE)
    full_last = n_rows - layout$full * candidate == candidate
    if (fixed_size_exact_fewest(layout, full_last)$rows >= m) {
      return(candidate)
    }
    candidate = candidate + 1
  }
  enough
}

# max(1, round(N / batch_size)) with halves rounded up, in whole numbers (R's
# and Python's round() both round halves to even; this rule is the same in
# both languages for every input).
fixed_size_num_batches = function(n_rows, batch_size) {
  max(1, (2 * n_rows + batch_size) %/% (2 * batch_size))
}

check_fixed_size_feasible = function(policy, encoded, n_batches, n_rows) {
  m = policy$params$min_per_stratum
  smallest = which.min(encoded$sizes)
  n_min = encoded$sizes[[smallest]]
  if (n_min %/% n_batches >= m) {
    return(invisible(NULL))
  }
  most_batches = n_min %/% m
  fix = if (most_batches == 0) {
    sprintf(paste0("No batch size can do that: lower min_per_stratum to at most %d, or use a ",
      "policy that oversamples small strata."), n_min)
  } else {
    # Smallest b with round(N / b) <= most_batches: N / b < most_batches + 1/2.
    smallest_size = (2 * n_rows) %/% (2 * most_batches + 1) + 1
    sprintf(paste0("Use batch_size >= %s (at most %s batches), lower min_per_stratum, or ",
      "use a policy that oversamples small strata."), format(smallest_size, scientific = FALSE),
      format(most_batches, scientific = FALSE))
  }
  # No batch size helps when the smallest stratum is below min_per_stratum: that
  # argument is at fault, as Python's FixedSize says.
  abort_value(if (most_batches == 0) "min_per_stratum" else "batch_size", sprintf(paste0(
    "batch_size=%s gives %s batches of %s rows, but stratum %s has only %d rows: it cannot ",
    "give every batch min_per_stratum=%s row(s). %s"), show_value(policy$params$batch_size),
    format(n_batches, scientific = FALSE), format(n_rows, scientific = FALSE),
    stratum_label(encoded, smallest), n_min, show_value(m), fix))
}
