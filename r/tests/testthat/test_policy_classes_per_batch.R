test_that("policy_classes_per_batch gives P distinct strata x K rows and serves every row", {
  y = rep(1:8, c(9, 4, 13, 7, 22, 5, 16, 11))
  for (seed in 1:5) {
    batches = stratified_batches(y, policy_classes_per_batch(3, 4), seed = seed, epoch = seed %% 3)
    for (b in batches) {
      expect_length(b, 12L)
      expect_equal(anyDuplicated(b), 0L)
      slots = matrix(y[b], nrow = 4)
      expect_true(all(slots == rep(slots[1, ], each = 4)))
      expect_equal(length(unique(slots[1, ])), 3L)
    }
    expect_setequal(unique(unlist(batches)), seq_along(y))
    # ceil(N_s / K) = 3, 1, 4, 2, 6, 2, 4, 3: T = 25, B = max(9, 6) = 9.
    expect_length(batches, 9L)
  }
})

test_that("small strata: error naming them, drop with a warning, repeat", {
  y = rep(1:5, c(10, 2, 9, 3, 12))
  expect_error(stratified_batches(y, policy_classes_per_batch(2, 4), seed = 1),
    "2 stratum/strata have fewer", class = "pystratum_value_error")
  expect_warning(batches <- stratified_batches(y, policy_classes_per_batch(2, 4, small = "drop"),
    seed = 1), "leaves out 2 stratum/strata")
  expect_false(any(y[unlist(batches)] %in% c(2, 4)))
  batches = stratified_batches(y, policy_classes_per_batch(2, 4, small = "repeat"), seed = 1)
  expect_true(all(which(y == 2) %in% unlist(batches)))
})

test_that("infeasible requests state the largest feasible P and K", {
  y = rep(1:4, c(10, 3, 9, 2))
  expect_error(stratified_batches(y, policy_classes_per_batch(3, 4, small = "drop"), seed = 1),
    "largest feasible classes_per_batch with per_class=4 is 2; the largest feasible per_class with classes_per_batch=3 is 3",
    fixed = TRUE)
  expect_error(policy_classes_per_batch(0, 2), "classes_per_batch", class = "pystratum_value_error")
  expect_error(policy_classes_per_batch(2, 2, small = "skip"), "small")
})

test_that("the slot step is coprime with small continued-fraction quotients", {
  for (b in c(3:200, 1000, 15773)) {
    g = slot_step(b)
    expect_equal(whole_gcd(g, b), 1)
    expect_lte(largest_quotient(b, g), 6)
  }
})

test_that("the sampler's epochs (stratified_epochs) walk stratified_batches epoch by epoch", {
  y = rep(c("a", "b", "c", "d", "e"), c(9, 4, 13, 7, 11))
  policy = policy_classes_per_batch(2, 4)
  epochs = stratified_epochs(y, policy, seed = 17)
  expect_equal(epochs$length(), length(stratified_batches(y, policy, seed = 17)))
  for (k in 0:2) {
    expect_identical(epochs$next_epoch(), stratified_batches(y, policy, seed = 17, epoch = k))
  }
  expect_equal(sort(unlist(epochs$in_order())), seq_along(y))
  plain = stratified_epochs(y, policy, shuffle = FALSE)
  expect_identical(plain$next_epoch(), stratified_batches(y, policy, shuffle = FALSE))
  keyed = stratified_epochs(y, policy, seed = 5, rng = "index")
  for (k in 0:1) {
    batches = keyed$next_epoch()
    expect_identical(batches, stratified_batches(y, policy, seed = 5, rng = "index", epoch = k))
    expect_setequal(unique(unlist(batches)), seq_along(y))
  }
})

test_that("an epoch far larger than the data is refused before any table", {
  y = rep(seq_len(100), c(3000000, rep(4, 99)))
  expect_error(stratified_batches(y, policy_classes_per_batch(100, 1), seed = 1),
    "^classes_per_batch=100 makes an epoch of 3,000,000 batches of 100 x 1 rows",
    class = "pystratum_value_error")
})

test_that("classes = 'uniform': equal appearances, rows without replacement across epochs", {
  sizes = c(9, 4, 13, 7, 22, 5, 16)
  y = rep(seq_along(sizes), sizes)[c(40:76, 1:39)]
  policy = policy_classes_per_batch(3, 4, classes = "uniform")
  appearances = numeric(7)
  uses = numeric(length(y))
  for (k in 0:5) {
    batches = stratified_batches(y, policy, seed = 3, epoch = k)
    expect_length(batches, ceiling(76 / 12))
    for (b in batches) {
      expect_length(b, 12)
      expect_length(unique(b), 12)
      expect_length(unique(y[b]), 3)
    }
    epoch = tabulate(vapply(batches, function(b) unique(y[b]), numeric(3)), 7)
    expect_lte(diff(range(epoch)), 1)
    appearances = appearances + epoch
    expect_lte(diff(range(appearances)), 1)
    uses = uses + tabulate(unlist(batches), length(y))
    for (s in seq_along(sizes)) expect_lte(diff(range(uses[y == s])), 1)
  }
  expect_length(stratified_batches(y, policy_classes_per_batch(3, 4, classes = "uniform",
    num_batches = 20), seed = 1, rng = "index"), 20)
  expect_error(policy_classes_per_batch(3, 4, num_batches = 5),
    "^num_batches=5 sets the epoch's length for classes='uniform' only",
    class = "pystratum_value_error")
  expect_error(policy_classes_per_batch(3, 4, classes = "uniform", num_batches = 0),
    "^num_batches", class = "pystratum_value_error")
  epochs = stratified_epochs(y, policy, seed = 8)
  epochs$start_at(2)
  expect_identical(epochs$next_epoch(), stratified_batches(y, policy, seed = 8, epoch = 2))
  expect_identical(epochs$next_epoch(), stratified_batches(y, policy, seed = 8, epoch = 3))
})

test_that("sizes above 2^53 are refused, as in Python", {
  blame = function(expr) tryCatch({expr; "ok"}, pystratum_value_error = function(e) e$argument)
  expect_identical(blame(policy_classes_per_batch(2^53 + 2, 1)), "classes_per_batch")
  expect_identical(blame(policy_classes_per_batch(1, 2^53 + 2)), "per_class")
  expect_identical(blame(policy_classes_per_batch(2, 1, classes = "uniform",
    num_batches = 2^53 + 2)), "num_batches")
  expect_s3_class(policy_classes_per_batch(2^53, 1), "pystratum_policy")
})
