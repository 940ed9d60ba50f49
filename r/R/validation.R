# checkmate-style assertions for the public boundary, without checkmate.
#
# Whole numbers may come as integers or as doubles without a fractional part
# (in R `2` is a double); logicals, strings, vectors and doubles that are not
# whole (2.5, Inf, NaN, NA_real_) are rejected with a type error, out-of-range
# values and NA_integer_ with a value error, as the Python core does for
# bools/floats (TypeError) and bad ranges (ValueError).

# Largest seed R's set.seed() takes: it converts the seed to a C int, and
# -2^31 is NA_integer_, so the range is symmetric.
R_SEED_MAX = 2147483647

# torch_manual_seed() passes the seed on as a decimal string; whole doubles
# are exact up to 2^53.
TORCH_SEED_MAX = 2^53

is_whole_number = function(x) {
  (is.integer(x) || is.double(x)) && length(x) == 1L && !is.na(x) &&
    is.finite(x) && x == trunc(x)
}

assert_whole_number = function(x, name, minimum = NULL, fix = "") {
  fail = function(kind, what) {
    text = sprintf("%s must be %s, got %s=%s", name, what, name, show_value(x))
    if (kind == "type") text = sprintf("%s of type %s", text, type_name(x))
    text = paste0(text, ".", if (nzchar(fix)) paste0(" ", fix))
    if (kind == "type") abort_type(name, text) else abort_value(name, text)
  }
  if (!(is.integer(x) || is.double(x)) || is.object(x) || length(x) != 1L) {
    fail("type", "a single whole number")
  }
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
  x
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
  if (rng == "R" && abs(seed) > R_SEED_MAX) {
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
