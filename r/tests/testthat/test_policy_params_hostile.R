# Hostile parameters for the policy constructors and negative_pair_batches()
# (issue 18, items 5 and 6): every outcome is valid batches or a pystratum
# type/value error naming the argument, never "cannot allocate vector", a
# base R error, or a killed process. A seeded random grid of values (R has no
# hypothesis); inputs are small (100 rows, 8 pairs), so a huge parameter that
# got through would show as an epoch beyond max(16 N, 2^24) rows, not as a slow
# test.

y = rep(c("a", "b", "c"), c(60, 30, 10))
users = c(0, 0, 1, 2, 2, 3, 4, 4)
items = c(1, 4, 2, 0, 3, 4, 0, 1)

# A fixed pool of awkward values, plus random whole and fractional numbers of
# every magnitude, random signs and random strings.
hostile_values = function(n) {
  pool = list(2^31 - 1, 2^31, 2^53, 2^53 + 2, 2^63, 2^70, 1e9, 1e10, 1e12, 1e300, -1, 0, 1L,
    5L, 6, 0.5, 2.5, Inf, -Inf, NaN, NA, NA_integer_, NA_real_, TRUE, FALSE, "5", "", "largest",
    "smallest", "balanced", character(0), numeric(0), NULL, c(1, 2), list(5), factor("a"),
    matrix(3), as.Date("2020-01-01"), complex(real = 1), as.raw(5), c(a = 5), .Machine$integer.max)
  random = lapply(seq_len(n), function(i) {
    switch(sample.int(4L, 1L),
      round(10^runif(1, 0, 16)) * sample(c(-1, 1), 1L),
      10^runif(1, -3, 20),
      sample.int(50L, 1L),
      paste(sample(c(letters, 0:9), sample.int(3L, 1L)), collapse = ""))
  })
  c(pool, random)
}

slots = list(
  "policy_min_per_stratum(v)" = list(function(v) policy_min_per_stratum(v),
    "min_samples_per_stratum"),
  "policy_fixed_size(v)" = list(function(v) policy_fixed_size(v), "batch_size"),
  # Too many rows per stratum for 3 batches: a larger batch_size is the fix when one exists.
  "policy_fixed_size(30, v)" = list(function(v) policy_fixed_size(30, v),
    c("min_per_stratum", "batch_size")),
  "policy_targets('balanced', v)" = list(function(v) policy_targets("balanced", v),
    "batch_size"),
  "policy_targets('balanced', 6, v)" = list(function(v) policy_targets("balanced", 6, v),
    "epoch"),
  "policy_targets(v, 6)" = list(function(v) policy_targets(v, 6), "shares"),
  "policy_downsample(c(a = v), 2)" = list(function(v) policy_downsample(c(a = v), 2), "keep"),
  "policy_downsample(c(a = .5), policy_targets('balanced', v))" = list(function(v)
    policy_downsample(c(a = 0.5), policy_targets("balanced", v)), "batch_size")
)

# The grids run with the bound on an epoch lowered to max(16 N, 4096) rows:
# a value the bound lets through is then cheap to serve, and one it should
# stop but does not shows as an epoch above the bound (checked), not as time.
local_small_bound = function(envir = parent.frame()) {
  saved = get("MAX_SERVED_ROWS", envir = asNamespace("pystratum"))
  utils::assignInNamespace("MAX_SERVED_ROWS", 4096, "pystratum")
  withr::defer(utils::assignInNamespace("MAX_SERVED_ROWS", saved, "pystratum"), envir = envir)
}

outcome_of = function(code) {
  tryCatch(list(value = suppressWarnings(code), error = NULL),
    error = function(e) list(value = NULL, error = e))
}

test_that("policy constructors on a hostile grid give batches or a named pystratum error", {
  local_small_bound()
  set.seed(18)
  values = hostile_values(60)
  tried = c(batches = 0L, refused = 0L)
  for (slot in names(slots)) {
    make = slots[[slot]][[1L]]
    argument = slots[[slot]][[2L]]
    for (value in values) {
      # One batch allowed: the parameters' checks are the point (the guard: test_single_batch.R).
      got = outcome_of(stratified_batches(y, make(value), seed = 1, allow_single_batch = TRUE))
      label = sprintf("%s with v = %s", slot, paste(deparse(value), collapse = " "))
      if (is.null(got$error)) {
        rows = unlist(got$value)
        expect_true(length(got$value) >= 1 && all(lengths(got$value) > 0), info = label)
        expect_true(length(rows) <= max(16 * length(y), 4096), info = label)
        expect_true(all(rows >= 1 & rows <= length(y)), info = label)
        tried[["batches"]] = tried[["batches"]] + 1L
      } else {
        expect_true(inherits(got$error, c("pystratum_type_error", "pystratum_value_error")),
          info = paste(label, "->", class(got$error)[1L], conditionMessage(got$error)))
        expect_true(got$error$argument %in% argument, info = paste(label, "->",
          conditionMessage(got$error)))
        tried[["refused"]] = tried[["refused"]] + 1L
      }
    }
  }
  expect_identical(sum(tried), length(slots) * length(values))
  expect_true(all(tried > 0))
})

test_that("huge target sizes are refused with the Python core's estimate", {
  expect_pystratum_error(stratified_batches(y, policy_targets("balanced", 1e10), seed = 1),
    "value_error", "batch_size", paste0("^batch_size=10000000000 makes an epoch of 1 batch\\(es\\) ",
      "of 10,000,000,000 rows with epoch='largest': 10,000,000,000 rows served and 6 table ",
      "entries, about 149.0 GiB, from an input of 100 rows\\. An epoch may serve, and its tables ",
      "hold, at most max\\(16 N, 2\\*\\*24\\) = 16,777,216 of each\\. Lower batch_size\\.$"))
  expect_pystratum_error(stratified_batches(y, policy_targets("balanced", 6, 2^31 - 1),
    seed = 1), "value_error", "epoch", "^epoch=2147483647 makes an epoch of 2,147,483,647 batch")
  expect_pystratum_error(policy_targets("balanced", 2^70), "value_error", "batch_size",
    "between 1 and 9007199254740992")
  # The same size is served when the input allows it.
  expect_length(stratified_batches(y, policy_targets("balanced", 3, 10), seed = 1), 10L)
})

negative_slots = c("negatives", "batch_size", "num_items", "num_users", "max_rounds", "epoch")

test_that("negative_pair_batches on a hostile grid gives batches or a named error", {
  local_small_bound()
  set.seed(1818)
  values = hostile_values(40)
  tried = c(batches = 0L, refused = 0L)
  for (slot in negative_slots) {
    for (value in values) {
      arguments = list(users, items, num_items = 5, negatives = 2, batch_size = 3, seed = 1)
      arguments[slot] = list(value)
      got = outcome_of(do.call(negative_pair_batches, arguments))
      label = sprintf("%s = %s", slot, paste(deparse(value), collapse = " "))
      if (is.null(got$error)) {
        rows = sum(vapply(got$value, nrow, 1L))
        k = arguments$negatives
        expect_identical(rows, as.integer(length(users) * (1 + k)), info = label)
        expect_true(rows <= max(16 * length(users), 4096), info = label)
        tried[["batches"]] = tried[["batches"]] + 1L
      } else {
        expect_true(inherits(got$error, c("pystratum_type_error", "pystratum_value_error")),
          info = paste(label, "->", class(got$error)[1L], conditionMessage(got$error)))
        # Ids beyond a small num_items/num_users are named as the ids.
        allowed = switch(slot, num_items = c("num_items", "items"),
          num_users = c("num_users", "users"), slot)
        expect_true(got$error$argument %in% allowed, info = paste(label, "->",
          conditionMessage(got$error)))
        tried[["refused"]] = tried[["refused"]] + 1L
      }
    }
  }
  expect_identical(sum(tried), length(negative_slots) * length(values))
  expect_true(all(tried > 0))
})

test_that("negatives beyond the input are refused with an estimate, num_users sizes nothing", {
  expect_pystratum_error(negative_pair_batches(users, items, num_items = 5, negatives = 1e9,
    batch_size = 3, seed = 1), "value_error", "negatives", paste0("^negatives=1000000000 makes ",
      "batches of 3 observed pair\\(s\\) with 1,000,000,000 negative\\(s\\) each: 3,000,000,003 ",
      "rows served and 0 table entries, about 44.7 GiB"))
  expect_pystratum_error(negative_pair_batches(users, items, num_items = 5, negatives = 2^22,
    batch_size = 1, seed = 1), "value_error", "negatives", "^negatives=4194304 makes an epoch")
  batches = negative_pair_batches(users, items, num_items = 5, negatives = 2, batch_size = 3,
    seed = 1, num_users = 1e12)
  expect_length(batches, 3L)
  expect_pystratum_error(negative_pair_batches(users, items, num_items = 5e15, negatives = 2,
    batch_size = 3, seed = 1), "value_error", "num_items", "at most 4.5e15")
})

test_that("batch_order: a named or classed value is the bare value, hostile values name it", {
  # Regression: c(x = "split_safe") passed the check, then policy_split_safe()
  # (identical()) read it as not split-safe and the batches kept the assembled order.
  named = policy_fixed_size(10, batch_order = c(x = "split_safe"))
  expect_identical(named$params$batch_order, "split_safe")
  expect_true(pystratum:::policy_split_safe(named))
  y = rep(0:2, c(40, 30, 30))[c(seq(1, 100, 3), seq(2, 100, 3), seq(3, 100, 3))]
  expect_identical(unclass(stratified_batches(y, named, seed = 1)),
    unclass(stratified_batches(y, policy_fixed_size(10, batch_order = "split_safe"), seed = 1)))
  expect_identical(policy_targets("balanced", 8,
    batch_order = structure("assembled", class = "foo"))$params$batch_order, "assembled")
  for (value in list(charToRaw("split_safe"), NA_character_, TRUE, 0, "SPLIT_SAFE",
    " split_safe", factor("split_safe"), list("split_safe"), character(0))) {
    expect_pystratum_error(policy_min_per_stratum(1, batch_order = value), "value_error",
      "batch_order", "^batch_order must be 'split_safe', 'assembled' or None")
  }
})
