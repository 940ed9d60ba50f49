# Batch compositions (policies): stratum sizes in, rank cuts out.
#
# The twin of the Python package's pystratum.policies. A policy decides how
# many rows of each stratum each batch receives; it never sees rows or random
# numbers. policy_allocate() returns the rank cuts: an S x (B + 1) matrix
# whose row s says that the ranks cuts[s, b] < i <= cuts[s, b + 1] (1-based
# ranks, order of appearance in the epoch's permutation) of stratum s go to
# batch b. Everything else (permuting, ranking, grouping) is shared, so a new
# composition is one constructor and one policy_allocate() method here.

#' Batch compositions (policies)
#'
#' A policy says what every batch of an epoch must contain. Pass one to
#' [stratified_batches()] or [batch_sampler_stratified()]; a number `m` is
#' shorthand for `policy_min_per_stratum(m)`. The Python package has the same
#' policies (`pystratum.policies.MinPerStratum`, `FixedSize`) and, for the
#' same seed and `rng = "R"`, gives the same batches.
#'
#' * `policy_min_per_stratum(m)`: at least `m` rows of every stratum in every
#'   batch, as many batches as that allows (`max(1, N_min %/% m)`, Hocking
#'   2025). A stratum's per-batch counts differ by at most one.
#' * `policy_fixed_size(batch_size, min_per_stratum = 1, sizes = "exact")`:
#'   `sizes = "exact"` (default): `B = ceiling(N / batch_size)` batches of
#'   exactly `batch_size` rows but the last, which holds the remainder
#'   `L = N - (B - 1) * batch_size` (full when `batch_size` divides `N`).
#'   Stratum `s` gives the last batch the floor or ceiling of `N_s L / N`
#'   rows (systematic rounding over the strata in order of first appearance)
#'   and spreads its other rows over the full batches as below, so every
#'   full batch holds the floor or ceiling of `N_s * batch_size / N` rows of
#'   it (per-batch counts differ by at most one, at least `min_per_stratum`
#'   each) and exactly `batch_size` rows in all.
#'   `sizes = "balanced"`: `B = max(1, round(N / batch_size))` batches
#'   (halves rounded up, in exact integer arithmetic), every batch of
#'   `floor(N / B)` or `ceiling(N / B)` rows, every stratum spread as evenly
#'   as possible (its per-batch counts differ by at most one, at least
#'   `min_per_stratum` each). Stratum `s` gives every batch `N_s %/% B`
#'   rows; its `N_s %% B` extra rows go one each to consecutive batches,
#'   cyclically, strata in order of first appearance in the data, each
#'   continuing where the previous one stopped, and each epoch continuing
#'   where the last one stopped. A stratum too small for `min_per_stratum`
#'   rows in every (full) batch is an error naming it and a `batch_size`
#'   that works.
#'
#' Every policy serves every row at most once per epoch; these two serve
#' every row exactly once.
#'
#' @param m (`integer(1)`)\cr The fewest rows of each stratum a batch holds.
#' @param batch_size (`integer(1)`)\cr The wanted number of rows per batch.
#' @param sizes (`character(1)`)\cr `"exact"` (batches of `batch_size` rows
#'   but a shorter last one) or `"balanced"` (`round(N / batch_size)` batches
#'   of nearly equal size).
#' @param min_per_stratum (`integer(1)`)\cr The fewest rows of each stratum a
#'   batch holds.
#' @return An object of class `c("pystratum_policy_<name>",
#'   "pystratum_policy")`: a list with `$name` and `$params`.
#' @examples
#' y = rep(c("pos", "neg"), c(30, 970))
#' batches = stratified_batches(y, policy_fixed_size(100), seed = 1)
#' lengths(batches)
#' table(y[batches[[1]]])
#' @name policies
NULL

#' @rdname policies
#' @export
policy_min_per_stratum = function(m) {
  fix = if (is.function(m)) {
    "That is a function: call it, e.g. policy_fixed_size(batch_size = 64)."
  } else {
    paste("Pass a number (at least m rows of every stratum per batch) or a policy",
      "such as policy_fixed_size(batch_size = 64).")
  }
  m = assert_whole_number(m, "min_samples_per_stratum", minimum = 1, fix = fix)
  # Parameters are stored as doubles: 5L and 5 give identical() policies.
  new_policy("min_per_stratum", list(m = as.double(m)))
}

#' @rdname policies
#' @export
policy_fixed_size = function(batch_size, min_per_stratum = 1, sizes = "exact") {
  batch_size = assert_whole_number(batch_size, "batch_size", minimum = 1)
  min_per_stratum = assert_whole_number(min_per_stratum, "min_per_stratum", minimum = 1)
  sizes = assert_choice(sizes, "sizes", c("exact", "balanced"))
  new_policy("fixed_size", list(batch_size = as.double(batch_size),
    min_per_stratum = as.double(min_per_stratum), sizes = sizes))
}

new_policy = function(name, params) {
  structure(list(name = name, params = params),
    class = c(paste0("pystratum_policy_", name), "pystratum_policy"))
}

#' @export
print.pystratum_policy = function(x, ...) {
  arguments = vapply(names(x$params), function(k) sprintf("%s = %s", k,
    show_value(x$params[[k]])), "")
  cat(sprintf("<pystratum_policy> %s(%s)\n", x$name, paste(arguments, collapse = ", ")))
  invisible(x)
}

# A policy object, or a number as shorthand for policy_min_per_stratum();
# anything else is refused as the shorthand's argument, as in Python. A
# policy of a known name is rebuilt from its parameters, so one whose list
# was edited by hand (policy$params$batch_size = 0) is checked like a new
# one; any policy needs a policy_allocate() method.
as_policy = function(policy) {
  if (!inherits(policy, "pystratum_policy")) {
    return(policy_min_per_stratum(policy))
  }
  if (is.list(policy) && is.character(policy$name) && length(policy$name) == 1L &&
    policy$name %in% names(known_policies()) &&
    identical(class(policy), c(paste0("pystratum_policy_", policy$name), "pystratum_policy"))) {
    return(policy_from_params(policy$name, policy$params))
  }
  if (!is.list(policy) || !is.character(policy$name) || length(policy$name) != 1L ||
    is.na(policy$name) || !is.list(policy$params)) {
    abort_type("policy", sprintf(paste0(
      "a policy must be a list with $name (one string) and $params (a list), as ",
      "policy_fixed_size() makes; got an object of class %s with names %s."),
      paste0("'", class(policy), "'", collapse = "/"), show_value(names(policy))))
  }
  has_method = any(vapply(class(policy), function(cls) {
    !is.null(utils::getS3method("policy_allocate", cls, optional = TRUE))
  }, logical(1L)))
  if (!has_method) {
    abort_type("policy", sprintf(paste0(
      "policy of class %s has no policy_allocate() method. Use policy_fixed_size() or ",
      "policy_min_per_stratum(), or define policy_allocate.%s(policy, encoded, epoch)."),
      paste0("'", class(policy), "'", collapse = "/"), class(policy)[[1L]]))
  }
  policy
}

# The policy of a call taking `policy` or the older `min_samples_per_stratum`.
resolve_policy = function(policy, min_samples_per_stratum) {
  if (!is.null(min_samples_per_stratum)) {
    if (!is.null(policy)) {
      abort_type("min_samples_per_stratum", sprintf(paste0(
        "Pass either policy or min_samples_per_stratum, not both: got policy=%s and ",
        "min_samples_per_stratum=%s. A number as policy means min_samples_per_stratum."),
        show_value(policy), show_value(min_samples_per_stratum)))
    }
    policy = min_samples_per_stratum
  }
  as_policy(policy)
}

# The policies the package defines: name -> constructor.
known_policies = function() {
  list(min_per_stratum = policy_min_per_stratum, fixed_size = policy_fixed_size,
    targets = policy_targets, downsample = policy_downsample,
    classes_per_batch = policy_classes_per_batch)
}

# Rebuild a policy from its name and parameters (the golden vectors' record,
# the Python bindings). Junk is refused with the classed errors Python's
# policy_from_params() raises: an unknown name (value error, "name"), params
# that are not a named list fitting the constructor (type error, "params").
policy_from_params = function(name, params) {
  constructors = known_policies()
  if (!is.character(name) || length(name) != 1L || is.na(name) ||
    !(name %in% names(constructors))) {
    abort_value("name", sprintf("policy name must be one of %s, got name=%s.",
      paste0("'", sort(names(constructors)), "'", collapse = ", "), show_value(name)))
  }
  constructor = constructors[[name]]
  if (!is.list(params) || is.object(params) || (length(params) > 0L &&
    (is.null(names(params)) || any(!nzchar(names(params))) || anyDuplicated(names(params))))) {
    abort_type("params", sprintf(paste0(
      "policy params must be a list of named arguments, got params=%s."), show_value(params)))
  }
  formal_names = names(formals(constructor))
  unknown = setdiff(names(params), formal_names)
  required = formal_names[vapply(formals(constructor), function(x) {
    is.symbol(x) && !nzchar(as.character(x))
  }, logical(1L))]
  missing_names = setdiff(required, names(params))
  if (length(unknown) || length(missing_names)) {
    abort_type("params", sprintf(paste0(
      "policy params %s do not fit '%s' (policy_%s(%s)): %s."), show_value(params), name, name,
      paste(formal_names, collapse = ", "), paste(c(
        if (length(unknown)) sprintf("unexpected %s", paste0("'", unknown, "'", collapse = ", ")),
        if (length(missing_names)) sprintf("missing %s",
          paste0("'", missing_names, "'", collapse = ", "))), collapse = "; ")))
  }
  do.call(constructor, params)
}

# policy_allocate() checked against the contract below: a faulty method is an
# error naming the policy's class (type error: not a list with a numeric cuts
# matrix of the right shape; value error: cuts not starting at 0, decreasing,
# beyond a stratum's size or pool (unless the policy recycles rows), bad
# pool_sizes, an empty batch, bad row_weights, or (n_batches
# given: epoch 0's count) a number of batches that moves with the epoch), never
# wrong batches. The same checks as Python's check_allocation(). Returns the
# allocation with double cuts.
checked_allocation = function(policy, encoded, epoch, n_batches = NULL) {
  allocation = policy_allocate(policy, encoded, epoch)
  where = sprintf("policy %s: policy_allocate(policy, encoded, epoch = %s)", class(policy)[[1L]],
    format(epoch, scientific = FALSE))
  sizes = as.double(encoded$sizes)
  cuts = if (is.list(allocation)) allocation[["cuts"]]
  if (!is.list(allocation) || !(is.integer(cuts) || is.double(cuts)) || is.object(cuts) ||
    !is.matrix(cuts)) {
    abort_type("policy", sprintf(paste0("%s must return list(cuts = <numeric matrix>, ",
      "row_weights = NULL or one weight per stratum), got %s."), where,
      if (is.list(allocation)) sprintf("cuts of class %s", paste(class(cuts), collapse = "/"))
      else sprintf("an object of class %s", paste(class(allocation), collapse = "/"))))
  }
  if (nrow(cuts) != length(sizes) || ncol(cuts) < 2L) {
    abort_type("policy", sprintf(paste0("%s returned cuts of dimension %d x %d; they must be ",
      "n_strata x (num_batches + 1) = %d x (B + 1) with B >= 1."), where, nrow(cuts),
      ncol(cuts), length(sizes)))
  }
  fail = function(what) {
    abort_value("policy", sprintf(paste0("%s returned cuts that %s. Cuts must be whole ",
      "numbers starting at 0, never decrease along a row and end at most at the stratum's ",
      "size (its pool's, with pool_sizes) unless the policy recycles rows."), where, what))
  }
  if (anyNA(cuts) || any(!is.finite(cuts)) || any(cuts != trunc(cuts))) {
    fail("are not all whole numbers")
  }
  cuts = matrix(as.double(cuts), nrow(cuts))
  bad = which(cuts[, 1L] != 0)
  if (length(bad)) {
    fail(sprintf("start at %s for stratum %s (cuts[%d, 1])", format(cuts[bad[[1L]], 1L],
      scientific = FALSE), stratum_label(encoded, bad[[1L]]), bad[[1L]]))
  }
  counts = cuts[, -1L, drop = FALSE] - cuts[, -ncol(cuts), drop = FALSE]
  if (any(counts < 0)) {
    at = which(counts < 0, arr.ind = TRUE)[1L, ]
    fail(sprintf("decrease for stratum %s: cuts[%d, %d] = %s > cuts[%d, %d] = %s",
      stratum_label(encoded, at[[1L]]), at[[1L]], at[[2L]], format(cuts[at[[1L]], at[[2L]]],
        scientific = FALSE), at[[1L]], at[[2L]] + 1L,
      format(cuts[at[[1L]], at[[2L]] + 1L], scientific = FALSE)))
  }
  pools = allocation[["pool_sizes"]]
  if (!is.null(pools)) {
    if (!(is.integer(pools) || is.double(pools)) || is.object(pools) ||
      length(pools) != length(sizes)) {
      abort_type("policy", sprintf(paste0("%s returned pool_sizes of class %s and length %d; ",
        "they must be NULL or %d whole numbers, one per stratum."), where,
        paste(class(pools), collapse = "/"), length(pools), length(sizes)))
    }
    bad = which(is.na(pools) | pools != trunc(pools) | pools < 1 | pools > sizes)
    if (length(bad)) {
      abort_value("policy", sprintf(paste0("%s returned pool_sizes[%d] = %s for stratum %s of ",
        "%s rows; a pool holds 1 to all of its stratum's rows."), where, bad[[1L]],
        format(pools[[bad[[1L]]]]), stratum_label(encoded, bad[[1L]]),
        format(sizes[[bad[[1L]]]], scientific = FALSE)))
    }
  }
  # Past the pool (or the stratum) only when the policy recycles rows: the
  # extra passes are drawn for those policies alone.
  limit = if (is.null(pools)) sizes else as.double(pools)
  bad = if (policy_may_recycle(policy)) integer(0) else which(cuts[, ncol(cuts)] > limit)
  if (length(bad)) {
    fail(sprintf("end at %s for stratum %s, which has only %s rows%s",
      format(cuts[bad[[1L]], ncol(cuts)], scientific = FALSE),
      stratum_label(encoded, bad[[1L]]), format(limit[[bad[[1L]]]], scientific = FALSE),
      if (is.null(pools)) "" else " in its pool"))
  }
  empty = which(colSums(counts) == 0)
  if (length(empty)) {
    abort_value("policy", sprintf(paste0("%s gives batch %d no row (of %d batches); every ",
      "batch must receive at least one row."), where, empty[[1L]], ncol(counts)))
  }
  if (!is.null(n_batches) && ncol(counts) != n_batches) {
    abort_value("policy", sprintf(paste0("%s gives %d batches, but epoch 0 has %d: ",
      "num_batches must not depend on the epoch (the sampler's .length() relies on it); ",
      "only the counts may vary."), where, ncol(counts), n_batches))
  }
  weights = allocation[["row_weights"]]
  if (!is.null(weights)) {
    if (!(is.integer(weights) || is.double(weights)) || is.object(weights) ||
      length(weights) != length(sizes)) {
      abort_type("policy", sprintf(paste0("%s returned row_weights of class %s and length %d; ",
        "they must be NULL or %d numbers, one per stratum."), where,
        paste(class(weights), collapse = "/"), length(weights), length(sizes)))
    }
    bad = which(is.na(weights) | !is.finite(weights) | weights < 0)
    if (length(bad)) {
      abort_value("policy", sprintf(paste0("%s returned row_weights[%d] = %s for stratum %s; ",
        "weights must be finite and >= 0."), where, bad[[1L]], format(weights[[bad[[1L]]]]),
        stratum_label(encoded, bad[[1L]])))
    }
  }
  list(cuts = cuts, row_weights = weights, pool_sizes = pools)
}

# The allocation of one epoch: list(cuts = S x (B + 1) double matrix of
# whole numbers, row_weights = NULL or one weight per stratum, pool_sizes =
# NULL or the rows each stratum draws from; see policy_targets.R for pools,
# recycling and assemble_epoch()).
#   encoded: encode_strata() output ($sizes, labels for messages)
#   epoch:   0-based epoch (compositions may rotate across epochs; the number
#            of batches never depends on it)
policy_allocate = function(policy, encoded, epoch) {
  UseMethod("policy_allocate")
}

#' @export
policy_allocate.pystratum_policy_min_per_stratum = function(policy, encoded, epoch) {
  check_smallest_stratum(encoded, policy$params$m)
  list(cuts = min_per_stratum_cuts(encoded$sizes, policy$params$m), row_weights = NULL,
    pool_sizes = NULL)
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

# (a * b) %% d, exact for whole numbers 0 <= a, b < 2^31, 1 <= d < 2^31 (the
# product itself may pass 2^53, where doubles stop holding every integer).
mul_mod = function(a, b, d) {
  b_hi = b %/% 65536
  b_lo = b - b_hi * 65536
  (((a * b_hi) %% d) * 65536 + a * b_lo) %% d
}

# Refuse strata with (on average) fewer than two rows each among many strata:
# a feature column, a row id or a continuous target, not group labels.
check_strata_are_groups = function(encoded, name = "strata") {
  n_strata = length(encoded$sizes)
  n_rows = encoded$n_rows
  if (n_strata >= 100 && n_rows < 2 * n_strata) {
    abort_value(name, sprintf(paste0(
      "%s has %d distinct strata for %d rows (on average %.2f rows per stratum): this looks ",
      "like a feature column, a row id or a continuous target, not group labels, and every ",
      "batch would have to hold every stratum (one batch with the whole data set). Pass the ",
      "class or group column(s) as %s; bin a continuous target first (e.g. with cut())."),
      name, n_strata, n_rows, n_rows / n_strata, name))
  }
  invisible(NULL)
}
