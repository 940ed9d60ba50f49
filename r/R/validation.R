# checkmate-style assertions for the public boundary, without checkmate.
#
# Whole numbers may come as integers or as doubles without a fractional part
# (in R `2` is a double); logicals, strings, vectors and doubles that are not
# whole (2.5, Inf, NaN, NA_real_) are rejected with a type error, out-of-range
# values and NA_integer_ with a value error, as the Python core does for
# bools/floats (TypeError) and bad ranges (ValueError).

# R integers are signed 32-bit and -2^31 is NA_integer_. It bounds seeds
# for rng = "R" (set.seed() converts the seed to a C int, so the range is
# symmetric) and epochs (as in the Python core).
R_INT_MAX = 2147483647

# Reaching epoch k of a sequential stream (R's, torch's) from its start
# draws k earlier permutations of n rows; beyond this many row draws
# (k * max(n, 1000)) a call would run for minutes, so it is refused. The
# Python core uses the same rule.
EPOCH_COST_MAX = 1e8

# torch_manual_seed() passes the seed on as a decimal string; whole doubles
# are exact up to 2^53.
TORCH_SEED_MAX = 2^53

assert_whole_number = function(x, name, minimum = NULL, fix = "", maximum = NULL) {
  fail = function(kind, what) {
    text = sprintf("%s must be %s, got %s=%s", name, what, name, show_value(x))
    if (kind == "type") text = sprintf("%s of type %s", text, type_name(x))
    text = paste0(text, ".", if (nzchar(fix)) paste0(" ", fix))
    if (kind == "type") abort_type(name, text) else abort_value(name, text)
  }
  # A 1 x 1 matrix is refused like Python's 1-element arrays; names are
  # dropped (x["a"] is an ordinary way to get a number in R).
  if (!(is.integer(x) || is.double(x)) || is.object(x) || length(x) != 1L || !is.null(dim(x))) {
    fail("type", "a single whole number")
  }
  x = unname(x)
  # NaN and NA_real_ are doubles that are not whole numbers: type errors, as
  # Python's float('nan'); a missing integer is a missing value.
  if (is.integer(x) && is.na(x)) {
    fail("value", "a whole number")
  }
  if (!is.finite(x) || x != trunc(x)) {
    fail("type", "a whole number")
  }
  if (!is.null(minimum) && x < minimum) {
    what = if (minimum == 1) "a positive whole number" else sprintf("a whole number >= %d", minimum)
    fail("value", what)
  }
  if (!is.null(maximum) && x > maximum) {
    fail("value", sprintf("a whole number between %s and %s", format(minimum, scientific = FALSE),
      format(maximum, scientific = FALSE)))
  }
  x
}

# epoch: a whole number in [0, R_INT_MAX], as in the Python core.
assert_epoch = function(epoch) {
  assert_whole_number(epoch, "epoch", minimum = 0, maximum = R_INT_MAX)
}

assert_flag = function(x, name) {
  if (!is.logical(x) || length(x) != 1L || is.na(x)) {
    abort_type(name, sprintf("%s must be TRUE or FALSE, got %s=%s of type %s.",
      name, name, show_value(x), type_name(x)))
  }
  x
}

assert_choice = function(x, name, choices) {
  if (!is.character(x) || length(x) != 1L || is.na(x) || !(x %in% choices)) {
    abort_value(name, sprintf("%s must be one of %s, got %s=%s.", name,
      paste0("'", choices, "'", collapse = ", "), name, show_value(x)))
  }
  x
}

# seed: NULL or a whole number in the range of the chosen stream. Returns the
# seed as a double (exact for every accepted value).
assert_seed = function(seed, rng) {
  if (is.null(seed)) {
    return(NULL)
  }
  if (!(is.integer(seed) || is.double(seed)) || is.object(seed) || length(seed) != 1L) {
    abort_type("seed", sprintf(
      "seed must be a single whole number (or NULL), got seed=%s of type %s.",
      show_value(seed), type_name(seed)))
  }
  if (is.integer(seed) && is.na(seed)) {
    abort_value("seed", "seed must be a whole number (or NULL), got seed=NA.")
  }
  if (is.na(seed) || !is.finite(seed) || seed != trunc(seed)) {
    abort_type("seed", sprintf(
      "seed must be a whole number (or NULL) for rng='%s', got seed=%s.", rng, show_value(seed)))
  }
  seed = as.double(seed)
  if (rng == "R" && abs(seed) > R_INT_MAX) {
    abort_value("seed", sprintf(paste0(
      "seed must be a whole number between -2147483647 and 2147483647 for rng='R' ",
      "(R's set.seed() takes a 32-bit signed integer), got seed=%s."), show_value(seed)))
  }
  if (rng == "torch" && (seed < 0 || seed > TORCH_SEED_MAX)) {
    abort_value("seed", sprintf(
      "seed must be a whole number between 0 and 2^53 for rng='torch', got seed=%s.",
      show_value(seed)))
  }
  seed
}

assert_seed_with_shuffle = function(seed, shuffle) {
  if (!shuffle && !is.null(seed)) {
    abort_value("seed", sprintf(paste0(
      "seed=%s has no effect since shuffle=FALSE (batches then follow row order). ",
      "Leave seed=NULL, or set shuffle=TRUE."), show_value(seed)))
  }
  invisible(seed)
}

assert_epoch_with_shuffle = function(epoch, shuffle) {
  if (!shuffle && epoch != 0) {
    abort_value("epoch", sprintf(paste0(
      "epoch=%s has no effect since shuffle=FALSE (every epoch then follows row order). ",
      "Leave epoch=0, or set shuffle=TRUE."), show_value(epoch)))
  }
  invisible(epoch)
}

# Sequential streams have no skip-ahead: refuse an epoch whose start costs
# more than EPOCH_COST_MAX row draws, saying the cost and the fix, instead
# of running for minutes (or forever).
assert_epoch_cost = function(epoch, n_rows, rng) {
  cost = as.double(epoch) * max(n_rows, 1000)
  if (cost > EPOCH_COST_MAX) {
    abort_value("epoch", sprintf(paste0(
      "epoch=%s is too far to reach: rng='%s' has no skip-ahead, so epoch %s costs drawing ",
      "%s earlier permutations of %d rows (epoch * max(n_rows, 1000) = %s row draws, the ",
      "limit is %s). Iterate the epochs in order with one sampler (batch_sampler_stratified()), ",
      "which draws one permutation per epoch, or pass a smaller epoch."), show_value(epoch), rng, show_value(epoch), show_value(epoch), n_rows,
      format(cost, big.mark = ",", scientific = FALSE),
      format(EPOCH_COST_MAX, big.mark = ",", scientific = FALSE)))
  }
  invisible(epoch)
}
