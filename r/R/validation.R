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
# draws every epoch before it, each with the draws its policy makes. A jump
# is priced before anything is drawn, in row draws: every draw counts the
# rows it costs the stream (draw_rows()) plus CALL_COST for the call (the
# Python core's measured overhead of one call, ~200 us against ~130 ns a
# row); beyond EPOCH_COST_MAX a call would run for minutes, so it is
# refused. The Python core uses the same rule.
EPOCH_COST_MAX = 1e8
CALL_COST = 2000
# R's sample.int(n, k) draws k values (its hash path) for n above this and k <= n / 2.
R_HASH_MIN_N = 1e7

# Size parameters (batch sizes, batch counts, negatives per pair) are whole
# numbers doubles hold exactly: at most 2^53, as in the Python core.
SIZE_MAX = 2^53
# What one epoch (or one batch of generated pairs) may hold: 16 times the
# input's rows (recycling small strata legitimately serves rows several
# times), and at least 2^24 rows on small inputs. Parameters asking more are
# refused with a memory estimate before anything is allocated (the Python
# core's rule and words).
MAX_SERVED_ROWS = 2^24
SERVED_PER_ROW = 16

# Refuses a parameter that makes an epoch larger than the input can use:
# `rows` served and `entries` of its tables may each be at most
# max(16 * n_rows, MAX_SERVED_ROWS). Python's check_served_size is the twin.
check_served_size = function(rows, entries, n_rows, name, value, what, fix) {
  limit = max(SERVED_PER_ROW * n_rows, MAX_SERVED_ROWS)
  if (rows <= limit && entries <= limit) {
    return(invisible(NULL))
  }
  count = function(x) format(x, big.mark = ",", scientific = FALSE, trim = TRUE)
  gib = (16 * rows + 8 * entries) / 2^30
  abort_value(name, sprintf(paste0("%s=%s makes %s: %s rows served and %s table entries, ",
    "about %s GiB, from an input of %s rows. An epoch may serve, and its tables hold, at most ",
    "max(16 N, 2**24) = %s of each. %s"), name, show_value(value), what, count(rows),
    count(entries), formatC(gib, format = "f", digits = 1, big.mark = ","), count(n_rows),
    count(limit), fix))
}

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

# The rows each draw (sizes[i] values, takes[i] kept) costs the stream:
# torch cuts a whole torch_randperm(size); R's sample.int(size, take) draws
# `take` values on its hash path, else works through `size`.
draw_rows = function(rng, sizes, takes) {
  if (rng == "R") ifelse(sizes > R_HASH_MIN_N & 2 * takes <= sizes, takes, sizes) else sizes
}

# What reaching `epoch` of a fresh sequential stream costs: list(calls, rows,
# cost, complete, groups), groups the skipped epochs' groups of draws
# (group_of(k) for k = 0..epoch - 1, list(sizes, takes); NULL group_of: one
# permutation of n_rows each), NULL when over EPOCH_COST_MAX. Epochs are
# priced one by one and pricing stops past the limit (complete = FALSE: the
# numbers are lower bounds); every epoch costs at least one call, so at most
# EPOCH_COST_MAX / CALL_COST epochs are ever priced. Python's
# SequentialStream.skip_cost is the twin.
epoch_skip_cost = function(epoch, rng, n_rows, group_of = NULL) {
  epoch = as.double(epoch)
  if (is.null(group_of)) {
    rows = epoch * draw_rows(rng, n_rows, n_rows)
    cost = rows + epoch * CALL_COST
    groups = if (cost <= EPOCH_COST_MAX) rep(list(list(sizes = n_rows, takes = n_rows)), epoch)
    return(list(calls = epoch, rows = rows, cost = cost, complete = TRUE, groups = groups))
  }
  if (epoch * (1 + CALL_COST) > EPOCH_COST_MAX) {
    return(list(calls = epoch, rows = epoch, cost = epoch * (1 + CALL_COST), complete = FALSE,
      groups = NULL))
  }
  groups = vector("list", epoch)
  calls = 0
  rows = 0
  for (k in seq_len(epoch) - 1) {
    group = group_of(k)
    calls = calls + length(group$sizes)
    rows = rows + sum(draw_rows(rng, group$sizes, group$takes))
    cost = rows + calls * CALL_COST
    if (cost > EPOCH_COST_MAX) {
      return(list(calls = calls, rows = rows, cost = cost, complete = k == epoch - 1,
        groups = NULL))
    }
    groups[[k + 1]] = group
  }
  list(calls = calls, rows = rows, cost = rows + calls * CALL_COST, complete = TRUE,
    groups = groups)
}

# The repeat draws of an epoch: `draws[s]` draws of `sizes[s]` rows per
# stratum, the first of each stratum free (O(strata)), each further one its
# rows plus CALL_COST for the call (the jump guard's model). The limit scales
# with the epoch: EPOCH_COST_MAX plus `served`, the rows the epoch serves (a
# pass draws its pool, so repeat passes' rows are at most the rows served plus
# one partial pass per stratum: linear work always passes; many calls for few
# rows do not). Refused past it before anything is drawn, naming the policy;
# Python's policies/_draw_cost.py (check_repeat_draws) is the twin.
check_repeat_draws = function(policy, draws, sizes, served, what, fix) {
  extra = pmax(as.double(draws) - 1, 0)
  calls = sum(extra)
  rows = sum(extra * as.double(sizes))
  cost = rows + calls * CALL_COST
  limit = EPOCH_COST_MAX + served
  if (cost <= limit) {
    return(invisible(NULL))
  }
  count = function(x) format(x, big.mark = ",", scientific = FALSE, trim = TRUE)
  abort_value("policy", sprintf(paste0(
    "policy=%s makes %s: %s draw(s) beyond the first of each stratum (recycled passes or ",
    "refills) of %s rows, a cost of %s row draws (each draw counts its rows plus %s for the ",
    "call), over the limit of %s plus the %s rows the epoch serves (%s). %s"),
    policy_call_text(policy), what, count(calls), count(rows), count(cost), count(CALL_COST),
    count(EPOCH_COST_MAX), count(served), count(limit), fix))
}

# check_repeat_draws() for a rank-cut allocation: ceiling(used / pool) passes
# of each stratum, one draw each (stratum_draws()).
check_recycled_passes = function(policy, allocation, encoded) {
  cuts = allocation$cuts
  pool = if (is.null(allocation$pool_sizes)) as.double(encoded$sizes) else
    as.double(allocation$pool_sizes)
  used = as.double(cuts[, ncol(cuts)])
  passes = ceiling(used / pmax(pool, 1))
  check_repeat_draws(policy, passes, pool, sum(used), sprintf("an epoch of %s batches",
    format(ncol(cuts) - 1, big.mark = ",", scientific = FALSE, trim = TRUE)), paste0(
    "Serve fewer rows of the smallest strata: lower the epoch's batches or batch_size, give ",
    "those strata a smaller share, or give them more rows (each pass of a recycled stratum is ",
    "one draw)."))
}

# check_repeat_draws() for a slot allocation's refills drawn one stream call
# each (rng "R" and "torch"; "index" keys them per value). Python:
# check_refill_draws.
check_refill_draws = function(policy, slots, sizes) {
  counts = tabulate(slots$refill_strata, nbins = length(sizes))
  served = sum(as.double(slots$n_slots)) * slots$width
  check_repeat_draws(policy, counts, sizes, served, sprintf("an epoch of %s batches",
    format(slots$n_batches, big.mark = ",", scientific = FALSE, trim = TRUE)), paste0(
    "Lower per_class, pass small='drop' to leave out the strata far smaller than per_class, ",
    "give them more rows (a small stratum's slot takes one draw per pass over its rows), or ",
    "use rng='index', which keys every refill without a call."))
}

# The skipped epochs' groups of draws (epoch_skip_cost()), or the refusal
# saying the cost and the fix, before anything is drawn.
epoch_skip_groups = function(epoch, rng, n_rows, group_of = NULL) {
  price = epoch_skip_cost(epoch, rng, n_rows, group_of)
  if (is.null(price$groups) && epoch > 0) {
    count = function(x) format(x, big.mark = ",", scientific = FALSE, trim = TRUE)
    least = if (price$complete) "" else "at least "
    abort_value("epoch", sprintf(paste0(
      "epoch=%s with rng='%s' means drawing the %s earlier epoch(s) of these %s rows first ",
      "(epoch k of this stream is its (k+1)-th group of draws, counted from its seed): ",
      "%s%s draw(s) of %s%s rows, a cost of %s%s row draws (each draw counts its rows plus ",
      "%s for the call), over the limit of %s. Use rng='index', which reaches any epoch ",
      "directly; or keep one sampler and walk the epochs in order (batch_sampler_stratified() ",
      "keeps its stream's position, so each epoch costs only its own draws); or pick a ",
      "smaller epoch."), format(epoch, scientific = FALSE), rng, count(epoch), count(n_rows), least,
      count(price$calls), least, count(price$rows), least, count(price$cost),
      count(CALL_COST), count(EPOCH_COST_MAX)))
  }
  price$groups
}
