# FixedSize, policy_fixed_size(): the twin of pystratum/policies/_fixed_size.py.
# Batches of exactly batch_size rows but a shorter last one (sizes = "exact")
# or round(N / batch_size) batches of nearly equal size ("balanced"), every
# stratum spread as evenly as it can be; ?policies states the rules.

#' @rdname policies
#' @export
policy_fixed_size = function(batch_size, min_per_stratum = 1, sizes = "exact",
  batch_order = NULL) {
  batch_size = assert_whole_number(batch_size, "batch_size", minimum = 1)
  min_per_stratum = assert_whole_number(min_per_stratum, "min_per_stratum", minimum = 1)
  sizes = assert_choice(sizes, "sizes", c("exact", "balanced"))
  new_policy("fixed_size", with_batch_order(list(batch_size = as.double(batch_size),
    min_per_stratum = as.double(min_per_stratum), sizes = sizes), batch_order))
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
# or ceiling of N_s L / N, adding up to L), moved to the floor where that
# leaves fewer than min_per_stratum rows for a full batch (and a stratum with
# room takes the ceiling instead, see fixed_size_exact_last()), and its other
# rows to the full batches as the balanced rule does (the extras then fill
# every full batch alike, so the cycle's epoch shift is 0). Returns list(full,
# last, counts = S x F matrix); inputs no allocation can serve are an error.
fixed_size_exact_layout = function(policy, encoded, epoch) {
  sizes = as.double(encoded$sizes)
  batch_size = policy$params$batch_size
  n_rows = sum(sizes)
  turn = order(match(seq_along(sizes), encoded$codes))
  layout = fixed_size_exact_last(sizes, turn, batch_size, policy$params$min_per_stratum)
  if (is.null(layout$last)) {
    fixed_size_exact_infeasible(policy, encoded)
  }
  full = layout$full
  last = layout$last
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
  list(full = full, last = last, counts = counts)
}

# list(full, last_rows, lo, ceil, hi): stratum s may give the last batch lo_s to hi_s
# rows (Python's _last_batch_range): the floor or the ceiling of its share
# N_s L / N (at least m when the last batch is full too), at most N_s - m F.
# Feasible exactly when lo <= hi for every stratum and sum(lo) <= L <= sum(hi).
fixed_size_last_range = function(sizes, batch_size, m) {
  n_rows = sum(sizes)
  full = (n_rows - 1) %/% batch_size
  last_rows = n_rows - full * batch_size
  # Products up to N * L must stay below 2^53 for %/% on doubles to be exact.
  if (full > 0 && n_rows * last_rows >= 2^53) {
    abort_value("batch_size", sprintf(paste0(
      "batch_size=%s on %s rows leaves a last batch of %s rows, and N * L passes 2^53, ",
      "where R's doubles stop computing its strata's shares exactly. Use a smaller ",
      "batch_size, or sizes = \"balanced\"."), show_value(batch_size),
      format(n_rows, scientific = FALSE), format(last_rows, scientific = FALSE)))
  }
  # One batch holds every row (and N_s * N may pass 2^53).
  lo = if (full == 0) sizes else (sizes * last_rows) %/% n_rows
  ceil = if (full == 0) sizes else lo + ((sizes * last_rows) %% n_rows != 0)
  if (last_rows == batch_size) lo = pmax(lo, m)
  list(full = full, last_rows = last_rows, lo = lo, ceil = ceil,
    hi = pmin(ceil, sizes - m * full))
}

fixed_size_exact_feasible = function(sizes, batch_size, m) {
  range = fixed_size_last_range(sizes, batch_size, m)
  all(range$lo <= range$hi) && sum(range$lo) <= range$last_rows &&
    range$last_rows <= sum(range$hi)
}

# list(full, last): the last batch's rows per stratum (NULL when infeasible):
# systematic rounding over the strata in turn order, clipped to [lo, hi], the
# rows this frees (or needs) taken by the first strata in turn order with room.
fixed_size_exact_last = function(sizes, turn, batch_size, m) {
  range = fixed_size_last_range(sizes, batch_size, m)
  full = range$full
  last_rows = range$last_rows
  lo = range$lo
  hi = range$hi
  if (!(all(lo <= hi) && sum(lo) <= last_rows && last_rows <= sum(hi))) {
    return(list(full = full, last = NULL))
  }
  if (full == 0) {
    return(list(full = full, last = sizes))
  }
  marks = (c(0, cumsum(sizes[turn])) * last_rows) %/% sum(sizes)
  last = numeric(length(sizes))
  last[turn] = diff(marks)
  last = pmin(pmax(last, lo), hi)
  gap = last_rows - sum(last)
  if (gap != 0) {
    room = if (gap > 0) (last < hi)[turn] else (last > lo)[turn]
    moved = turn[which(room)[seq_len(abs(gap))]]
    last[moved] = last[moved] + sign(gap)
  }
  list(full = full, last = last)
}

# How many batch sizes the error message's search tries on either side.
FIXED_SIZE_SEARCH = 4096

# list(batch_size, smallest): the smallest feasible batch_size >= start within
# FIXED_SIZE_SEARCH tries, else ceil(m N / min N_s), from which on every batch
# size is feasible (Python's _smallest_from).
fixed_size_smallest_from = function(sizes, start, m) {
  enough = -((-m * sum(sizes)) %/% min(sizes))
  candidate = start
  while (candidate < min(enough, start + FIXED_SIZE_SEARCH)) {
    if (fixed_size_exact_feasible(sizes, candidate, m)) {
      return(list(batch_size = candidate, smallest = TRUE))
    }
    candidate = candidate + 1
  }
  list(batch_size = max(enough, start), smallest = start >= enough)
}

# The error of exact sizes no allocation can serve: the rule, the numbers and
# what works (Python's FixedSize._exact_infeasible, the same text).
fixed_size_exact_infeasible = function(policy, encoded) {
  m = policy$params$min_per_stratum
  batch_size = policy$params$batch_size
  sizes = as.double(encoded$sizes)
  n_rows = sum(sizes)
  num = function(x) format(x, scientific = FALSE)
  if (min(sizes) < m) {
    short = which.min(sizes)
    abort_value("min_per_stratum", sprintf(paste0(
      "min_per_stratum=%s is more rows than stratum %s has (%s): no batch size below the row ",
      "count (%s) gives every full batch that many; lower min_per_stratum to at most %s, or ",
      "use a policy that oversamples small strata."), show_value(m),
      stratum_label(encoded, short), num(sizes[[short]]), num(n_rows), num(sizes[[short]])))
  }
  range = fixed_size_last_range(sizes, batch_size, m)
  full = range$full
  last_rows = range$last_rows
  turn = order(match(seq_along(sizes), encoded$codes))
  shape = if (last_rows < batch_size) {
    sprintf(paste0("batch_size=%s gives %s full batch(es) and a last batch of %s row(s) (%s ",
      "rows): every full batch needs min_per_stratum=%s row(s) of every stratum, and each ",
      "stratum s gives the last batch the floor or the ceiling of N_s * %s / %s rows"),
      num(batch_size), num(full), num(last_rows), num(n_rows), num(m), num(last_rows),
      num(n_rows))
  } else {
    sprintf(paste0("batch_size=%s gives %s full batch(es) (%s rows): every batch needs ",
      "min_per_stratum=%s row(s) of every stratum"), num(batch_size), num(full + 1),
      num(n_rows), num(m))
  }
  gaps = (range$hi - range$lo)[turn]
  why = if (min(gaps) < 0) {
    short = turn[[which.min(gaps)]]
    n_s = sizes[[short]]
    need = if (last_rows < batch_size) {
      floor_share = (n_s * last_rows) %/% n_rows
      sprintf("%s x %s full batch(es) + floor(%s * %s / %s) = %s", num(m), num(full), num(n_s),
        num(last_rows), num(n_rows), num(m * full + floor_share))
    } else {
      sprintf("%s x %s batches = %s", num(m), num(full + 1), num(m * (full + 1)))
    }
    sprintf("stratum %s has %s row(s), fewer than %s", stratum_label(encoded, short), num(n_s),
      need)
  } else {
    capped = turn[range$hi[turn] < range$ceil[turn]]
    sprintf(paste0("then the strata can fill at most %s of its %s rows (strata %s need every ",
      "row beyond their floor share for the full batches)"), num(sum(range$hi)), num(last_rows),
      paste(vapply(capped, function(s) stratum_label(encoded, s), character(1L)),
        collapse = ", "))
  }
  abort_value("batch_size", sprintf("%s; but %s. %s", shape, why,
    fixed_size_exact_fix(sizes, batch_size, m)))
}

# What works instead: the nearest larger and smaller batch_size, a lower minimum.
fixed_size_exact_fix = function(sizes, batch_size, m) {
  num = function(x) format(x, scientific = FALSE)
  n_rows = sum(sizes)
  enough = -((-m * n_rows) %/% min(sizes))
  above = fixed_size_smallest_from(sizes, batch_size + 1, m)
  fixes = if (above$smallest && above$batch_size < enough) {
    sprintf("batch_size=%s (the smallest larger one that works; every batch_size >= %s works)",
      num(above$batch_size), num(enough))
  } else {
    sprintf("batch_size >= %s (every one works)", num(above$batch_size))
  }
  # No batch size below `fewest` has at most min(N_s) %/% m full batches.
  fewest = -((-n_rows) %/% (min(sizes) %/% m + 1))
  candidate = batch_size - 1
  while (candidate >= max(fewest, batch_size - FIXED_SIZE_SEARCH)) {
    if (fixed_size_exact_feasible(sizes, candidate, m)) {
      fixes = c(fixes, sprintf("batch_size=%s (the largest smaller one that works)",
        num(candidate)))
      break
    }
    candidate = candidate - 1
  }
  # Lowering the minimum only ever helps: bisect for the largest one that works.
  works = 0
  fails = m
  while (fails - works > 1) {
    middle = (works + fails) %/% 2
    if (fixed_size_exact_feasible(sizes, batch_size, middle)) works = middle else fails = middle
  }
  if (works > 0) {
    fixes = c(fixes, sprintf("min_per_stratum=%s (the largest that works with this batch_size)",
      num(works)))
  }
  sprintf("Use %s, or a policy that oversamples small strata.", paste(fixes, collapse = ", "))
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
