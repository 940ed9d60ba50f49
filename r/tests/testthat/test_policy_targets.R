# policy_targets() and policy_downsample(): compositions, recycling, weights, errors.

test_that("targets: every batch holds exactly its share, small strata recycled", {
  y = rep(c(0L, 1L, 2L), c(90L, 7L, 23L))
  for (epoch in 0:3) {
    b = stratified_batches(y, policy_targets("balanced", 6), seed = 3, epoch = epoch)
    expect_length(b, 45L)
    for (rows in b) expect_identical(as.vector(table(factor(y[rows], 0:2))), c(2L, 2L, 2L))
    uses = tabulate(unlist(b), length(y))
    expect_true(all(uses[y == 0L] == 1L))
    expect_setequal(unique(uses[y == 1L]), c(12L, 13L))
    expect_setequal(unique(uses[y == 2L]), c(3L, 4L))
    # Importance weights (N_s / N) / (1 / 3): the data's shares over the balanced ones.
    weights = attr(b, "weights")
    expect_identical(lengths(weights), lengths(b))
    expect_equal(unlist(weights), c(90, 7, 23)[y[unlist(b)] + 1L] * 3 / 120, tolerance = 1e-15)
  }
})

test_that("targets: an epoch draws stratum by stratum, the last extra pass short", {
  # 45 batches of 2 + 2 + 2: stratum 1 (7 rows) needs 90 slots = 12 extra
  # passes, the last one serving 6 ranks; stratum 2 (23 rows) 3, the last 21.
  y = rep(c(0L, 1L, 2L), c(90L, 7L, 23L))
  set.seed(3, kind = "Mersenne-Twister", normal.kind = "Inversion", sample.kind = "Rejection")
  for (epoch in 0:1) {
    sequences = lapply(0:2, function(s) {
      rows = which(y == s)
      size = length(rows)
      pool = rows[sample.int(size, min(size, 90))]  # pass 0
      passes = (90 - 1) %/% size
      takes = if (passes == 0) integer(0) else c(rep(size, passes - 1), 90 - size * passes)
      c(pool, unlist(lapply(takes, function(take) pool[sample.int(size, take)])))
    })
    expected = lapply(1:45, function(b) unlist(lapply(sequences, function(q) q[2 * b - 1:0])))
    # batch_order = "assembled": stratum by stratum, as drawn.
    b = stratified_batches(y, policy_targets("balanced", 6, batch_order = "assembled"),
      seed = 3, epoch = epoch)
    attr(b, "weights") = NULL
    expect_identical(as.vector(unclass(b), "list"), lapply(expected, as.integer))
    # The default (split-safe) batches hold the same rows, placed by split_safe_batches().
    split = stratified_batches(y, policy_targets("balanced", 6), seed = 3, epoch = epoch)
    attr(split, "weights") = NULL
    expect_identical(as.vector(unclass(split), "list"), lapply(
      pystratum:::split_safe_batches(lapply(expected, as.integer), list(codes = y + 1L,
        sizes = c(90, 7, 23))), as.integer))
    expect_false(identical(unclass(split), unclass(b)))
  }
})

test_that("downsample: an epoch's kept rows are sample.int(N_s, k_s) of each stratum", {
  y = rep(c("b", "a"), c(10L, 40L))  # "b" first in the data: drawn first
  policy = policy_downsample(c(a = 0.25), policy_fixed_size(5))
  set.seed(9, kind = "Mersenne-Twister", normal.kind = "Inversion", sample.kind = "Rejection")
  for (epoch in 0:2) {
    b_rows = which(y == "b")[sample.int(10L, 10L)]
    a_rows = which(y == "a")[sample.int(40L, 10L)]
    batches = stratified_batches(y, policy, seed = 9, epoch = epoch)
    expect_identical(unlist(lapply(batches, function(rows) rows[y[rows] == "b"])), b_rows)
    expect_identical(unlist(lapply(batches, function(rows) rows[y[rows] == "a"])), a_rows)
  }
})

test_that("targets: rotating extras keep floor/ceiling counts and exact long-run shares", {
  y = rep(c("a", "b", "c"), c(300L, 300L, 300L))
  policy = policy_targets(c(a = 0.3, b = 0.5, c = 0.2), 7, epoch = 40L)
  counts = do.call(rbind, lapply(0:9, function(k) {
    b = stratified_batches(y, policy, seed = 1, epoch = k)
    t(vapply(b, function(rows) as.vector(table(factor(y[rows], c("a", "b", "c")))), integer(3)))
  }))
  expect_true(all(rowSums(counts) == 7L))
  expect_true(all(counts[, 1] %in% 2:3) && all(counts[, 2] %in% 3:4) && all(counts[, 3] %in% 1:2))
  expect_lt(max(abs(colSums(counts) - 400 * 7 * c(0.3, 0.5, 0.2))), 15)
})

test_that("targets: 'smallest' never repeats a row and undersamples the rest", {
  y = rep(c("M", "R"), c(111L, 12L))
  b = stratified_batches(y, policy_targets(c(M = 0.5, R = 0.5), 4, epoch = "smallest"), seed = 2)
  expect_length(b, 6L)
  expect_false(anyDuplicated(unlist(b)) > 0)
})

test_that("downsample: exact kept counts, fresh subsets, weights N_s / k_s", {
  y = rep(c(0L, 1L), c(90L, 10L))
  policy = policy_downsample(c(`0` = 0.2), policy_fixed_size(7))
  b0 = stratified_batches(y, policy, seed = 4)
  b1 = stratified_batches(y, policy, seed = 4, epoch = 1)
  expect_length(b0, 4L)
  expect_identical(as.vector(table(y[unlist(b0)])), c(18L, 10L))
  expect_false(setequal(unlist(b0)[y[unlist(b0)] == 0L], unlist(b1)[y[unlist(b1)] == 0L]))
  w = attr(b0, "weights")
  expect_length(w, length(b0))
  expect_identical(unlist(w), ifelse(y[unlist(b0)] == 0L, 5, 1))
})

test_that("policies round-trip through their record", {
  for (policy in list(policy_targets("balanced", 6), policy_targets(c(a = 0.25, b = 0.75), 8,
    epoch = "smallest"), policy_downsample(c(a = 0.5), policy_targets("balanced", 4)),
    policy_downsample(list(`1` = 0.3), 2))) {
    record = jsonlite::fromJSON(jsonlite::toJSON(unclass(policy), auto_unbox = TRUE),
      simplifyVector = FALSE)
    rebuilt = pystratum:::policy_from_params(record$name, record$params)
    expect_equal(rebuilt, policy)  # whole numbers may come back as integers
  }
  expect_output(print(policy_targets("balanced", 6)), "targets")
})

test_that("stratified_epochs serves recycled epochs as stratified_batches does", {
  y = rep(c(0L, 1L, 2L), c(30L, 4L, 9L))
  policy = policy_downsample(c(`0` = 0.5), policy_targets(c(`0` = 0.5, `1` = 0.25, `2` = 0.25), 8))
  epochs = pystratum:::stratified_epochs(y, policy, seed = 21, rng = "R")
  for (k in 0:3) {
    expect_identical(epochs$next_epoch(), stratified_batches(y, policy, seed = 21, epoch = k))
  }
})

test_that("bad input names the argument and the fix", {
  expect_error(policy_targets(c(a = -0.1, b = 1.1), 4), class = "pystratum_value_error",
    regexp = "shares must be >= 0")
  expect_error(policy_targets(c(a = 0.5, b = 0.4), 4), class = "pystratum_value_error",
    regexp = "add up to 1 \\(they are not normalised\\)")
  expect_error(policy_targets(c(0.5, 0.5), 4), class = "pystratum_type_error", regexp = "named")
  expect_error(policy_targets(c(a = 0.5, b = 0.5), 1), class = "pystratum_value_error",
    regexp = "batch_size must be at least the number of strata")
  expect_error(policy_targets("balanced", 4, epoch = "all"), class = "pystratum_value_error",
    regexp = "epoch must be")
  expect_error(policy_downsample(c(a = 0), 1), class = "pystratum_value_error",
    regexp = "keep fractions must be in \\(0, 1\\]")
  expect_error(policy_downsample(c(a = 1.5), 1), class = "pystratum_value_error",
    regexp = "keep fractions")
  y = rep(c("a", "b", "c"), c(10L, 5L, 5L))
  e = tryCatch(stratified_batches(y, policy_targets(c(a = 0.5, x = 0.5), 4), seed = 1),
    pystratum_value_error = function(e) e)
  expect_identical(e$argument, "shares")
  expect_match(conditionMessage(e), "not in the data: 'x'")
  e = tryCatch(stratified_batches(y, policy_targets(c(a = 1), 4), seed = 1),
    pystratum_value_error = function(e) e)
  expect_match(conditionMessage(e), "misses 2")
  e = tryCatch(stratified_batches(y, policy_downsample(c(z = 0.5), 1), seed = 1),
    pystratum_value_error = function(e) e)
  expect_identical(e$argument, "keep")
})
