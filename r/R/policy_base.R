# Batch compositions (policies), the base every policy shares.
#
# The twin of the Python package's pystratum/policies/_base.py. A policy
# decides how many rows of each stratum each batch receives; it never sees
# rows or random numbers. policy_allocate() returns the rank cuts: an
# S x (B + 1) matrix whose row s says that the ranks cuts[s, b] < i <=
# cuts[s, b + 1] (1-based ranks, order of appearance in the epoch's
# permutation) of stratum s go to batch b. Everything else (permuting,
# ranking, grouping) is shared, so a new composition is one file,
# policy_<name>.R: its constructor policy_<name>() and its policy_allocate()
# method (and a policy_may_recycle() method if it serves rows twice);
# known_policies() finds it by those names.

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
#'   rows (systematic rounding over the strata in order of first appearance;
#'   where that leaves a stratum fewer than `min_per_stratum` rows per full
#'   batch it gives the floor and the first strata that can give the ceiling)
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
#'   where the last one stopped. Exact sizes are refused exactly when no
#'   allocation keeps these guarantees; the error states the rule that fails,
#'   its numbers, and the nearest `batch_size` (larger and smaller) and the
#'   largest `min_per_stratum` that work, as Python's `FixedSize` does.
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

new_policy = function(name, params) {
  structure(list(name = name, params = params),
    class = c(paste0("pystratum_policy_", name), "pystratum_policy"))
}

#' @export
print.pystratum_policy = function(x, ...) {
  cat(sprintf("<pystratum_policy> %s\n", policy_call_text(x)))
  invisible(x)
}

# "name(param = value, ...)", as print() and messages show a policy.
policy_call_text = function(policy) {
  arguments = vapply(names(policy$params), function(k) sprintf("%s = %s", k,
    show_value(policy$params[[k]])), "")
  sprintf("%s(%s)", policy$name, paste(arguments, collapse = ", "))
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

# The policies the package defines, name -> constructor, found by their names
# (no list to keep): every function policy_<name> of the namespace with a
# policy_allocate.pystratum_policy_<name>() method. A policy's own file
# defining those two is all it takes to be known (policy_from_params(), the
# golden vectors, the Python bindings). `where`: the environment searched,
# the namespace (a test passes another).
known_policies = function(where = environment(known_policies)) {
  functions = grep("^policy_[[:alnum:]_]+$", ls(where, all.names = TRUE), value = TRUE)
  names = substring(functions, nchar("policy_") + 1L)
  known = vapply(seq_along(functions), function(i) {
    is.function(get(functions[[i]], envir = where)) && exists(paste0(
      "policy_allocate.pystratum_policy_", names[[i]]), envir = where, mode = "function")
  }, logical(1L))
  constructors = mget(functions[known], envir = where)
  names(constructors) = names[known]
  constructors
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
# allocation with double cuts. A slot allocation, list(slots = )
# (policy_classes_per_batch(), whose file builds and checks its slots), is
# checked for its number of batches only.
checked_allocation = function(policy, encoded, epoch, n_batches = NULL) {
  allocation = policy_allocate(policy, encoded, epoch)
  where = sprintf("policy %s: policy_allocate(policy, encoded, epoch = %s)", class(policy)[[1L]],
    format(epoch, scientific = FALSE))
  slots = if (is.list(allocation)) allocation[["slots"]]
  if (!is.null(slots)) {
    check_epoch_batches(where, slots$n_batches, n_batches)
    return(list(slots = slots))
  }
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
  check_epoch_batches(where, ncol(counts), n_batches)
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

# An epoch's number of batches, `count`, must be epoch 0's, `n_batches` (when
# given): the sampler's .length() relies on it.
check_epoch_batches = function(where, count, n_batches) {
  if (!is.null(n_batches) && count != n_batches) {
    abort_value("policy", sprintf(paste0("%s gives %d batches, but epoch 0 has %d: ",
      "num_batches must not depend on the epoch (the sampler's .length() relies on it); ",
      "only the counts may vary."), where, count, n_batches))
  }
  invisible(NULL)
}

# The allocation of one epoch: list(cuts = S x (B + 1) double matrix of
# whole numbers, row_weights = NULL or one weight per stratum, pool_sizes =
# NULL or the rows each stratum draws from; see assemble.R for pools,
# recycling and assemble_epoch()).
#   encoded: encode_strata() output ($sizes, labels for messages)
#   epoch:   0-based epoch (compositions may rotate across epochs; the number
#            of batches never depends on it)
policy_allocate = function(policy, encoded, epoch) {
  UseMethod("policy_allocate")
}

# Whether a policy's cuts may pass a stratum's size (or its pool's): rows
# served more than once per epoch, in extra passes drawn for these policies
# alone. FALSE unless the policy's file says otherwise (Python's
# Policy.may_recycle()).
policy_may_recycle = function(policy) {
  UseMethod("policy_may_recycle")
}

#' @export
policy_may_recycle.default = function(policy) {
  FALSE
}

# (a * b) %% d, exact for whole numbers 0 <= a, b < 2^31, 1 <= d < 2^31 (the
# product itself may pass 2^53, where doubles stop holding every integer).
mul_mod = function(a, b, d) {
  b_hi = b %/% 65536
  b_lo = b - b_hi * 65536
  (((a * b_hi) %% d) * 65536 + a * b_lo) %% d
}

# The layout step g (Python: pystratum.policies._base.slot_step).
slot_step = function(n_batches) {
  if (n_batches <= 2) return(n_batches - 1)
  centre = (n_batches * 618034) %/% 1000000
  best = NULL
  for (distance in 0:400) {
    steps = if (distance == 0) centre else c(centre + distance, centre - distance)
    for (step in steps) {
      if (step < 1 || step >= n_batches || whole_gcd(step, n_batches) != 1) next
      largest = max(largest_quotient(n_batches, step), 3)
      if (is.null(best) || largest < best[[1L]]) best = c(largest, step)
      if (largest == 3) return(step)
    }
  }
  best[[2L]]
}

# The greatest common divisor of whole numbers (doubles): the Weyl steps of
# slot_step() and weyl_step() (policy_shares.R) must be coprime to their modulus.
whole_gcd = function(a, b) {
  while (b != 0) {
    rest = a %% b
    a = b
    b = rest
  }
  a
}

largest_quotient = function(a, b) {
  largest = 0
  while (b != 0) {
    largest = max(largest, a %/% b)
    rest = a %% b
    a = b
    b = rest
  }
  largest
}
