test_that("a number is shorthand for policy_min_per_stratum everywhere", {
  y = rep(c("a", "b", "c"), c(30L, 7L, 12L))
  expect_identical(as_policy(3), policy_min_per_stratum(3))
  expect_identical(stratified_batches(y, 3, seed = 5),
    stratified_batches(y, policy_min_per_stratum(3), seed = 5))
  expect_identical(stratified_batches(y, 3, seed = 5),
    stratified_batches(y, min_samples_per_stratum = 3, seed = 5))
  expect_pystratum_error(stratified_batches(y, 3, min_samples_per_stratum = 3), "type_error",
    "min_samples_per_stratum")
  for (bad in list(NULL, "2", TRUE, c(2, 3), 0, 2.5)) {
    expect_error(as_policy(bad), class = "pystratum_error")
  }
  expect_pystratum_error(stratified_batches(y), "type_error", "min_samples_per_stratum")
})

test_that("policies print and rebuild from their name and parameters", {
  policy = policy_fixed_size(64, min_per_stratum = 2)
  expect_s3_class(policy, c("pystratum_policy_fixed_size", "pystratum_policy"))
  expect_identical(policy_from_params(policy$name, policy$params), policy)
  expect_output(print(policy), "fixed_size\\(batch_size = 64, min_per_stratum = 2\\)")
  expect_pystratum_error(policy_from_params("fixed", list(batch_size = 3)), "value_error", "name")
  expect_pystratum_error(policy_fixed_size(0), "value_error", "batch_size")
  expect_pystratum_error(policy_fixed_size(2.5), "type_error", "batch_size")
  expect_pystratum_error(policy_fixed_size(4, min_per_stratum = 0), "value_error",
    "min_per_stratum")
})

fixed_counts = function(sizes, batch_size, epoch = 0, min_per_stratum = 1) {
  encoded = encode_strata(rep(seq_along(sizes), sizes))
  counts_from_cuts(policy_allocate(policy_fixed_size(batch_size, min_per_stratum), encoded,
    epoch)$cuts)
}

test_that("policy_fixed_size: the example worked by hand (same as Python's test)", {
  # 10 + 7 rows, batch_size 5 -> round(17 / 5) = 3 batches of 6, 6, 5.
  expect_identical(t(fixed_counts(c(10L, 7L), 5)), rbind(c(4L, 2L), c(3L, 3L), c(3L, 2L)))
  # Epoch 1 starts the extras where epoch 0 stopped.
  expect_identical(t(fixed_counts(c(10L, 7L), 5, epoch = 1)),
    rbind(c(3L, 3L), c(3L, 2L), c(4L, 2L)))
  expect_identical(mapply(fixed_size_num_batches, c(100, 100, 100, 5, 7), c(30, 40, 200, 2, 2)),
    c(3, 3, 1, 3, 4))
})

test_that("policy_fixed_size keeps its guarantees on random sizes", {
  set.seed(42)
  for (k in 1:200) {
    sizes = sample.int(300L, sample.int(6L, 1L), replace = TRUE)
    batch_size = sample.int(400L, 1L)
    epoch = sample.int(20L, 1L) - 1L
    n_rows = sum(sizes)
    n_batches = fixed_size_num_batches(n_rows, batch_size)
    if (min(sizes) < n_batches) {
      expect_error(fixed_counts(sizes, batch_size, epoch), class = "pystratum_value_error")
      next
    }
    counts = fixed_counts(sizes, batch_size, epoch)
    expect_identical(ncol(counts), as.integer(n_batches))
    expect_identical(rowSums(counts), as.double(sizes))
    expect_true(all(colSums(counts) %in% c(n_rows %/% n_batches, ceiling(n_rows / n_batches))))
    expect_true(all(apply(counts, 1L, function(x) max(x) - min(x)) <= 1L))
  }
})

test_that("policy_fixed_size names the stratum and the smallest batch size that works", {
  y = rep(c("M", "R"), c(111L, 12L))
  error = tryCatch(stratified_batches(y, policy_fixed_size(5), seed = 1),
    pystratum_value_error = function(e) e)
  expect_identical(error$argument, "batch_size")
  expect_match(conditionMessage(error), "stratum 'R' has only 12 rows")
  suggested = as.numeric(sub(".*batch_size >= ([0-9]+).*", "\\1", conditionMessage(error)))
  expect_silent(stratified_batches(y, policy_fixed_size(suggested), seed = 1))
  expect_error(stratified_batches(y, policy_fixed_size(suggested - 1), seed = 1),
    class = "pystratum_value_error")
  expect_match(conditionMessage(tryCatch(stratified_batches(y, policy_fixed_size(5, 13),
    seed = 1), error = function(e) e)), "lower min_per_stratum to at most 12")
})

test_that("policy_fixed_size batches: sizes, composition, and relabelling changes nothing", {
  y = rep(c("pos", "neg"), c(30L, 970L))
  batches = stratified_batches(y, policy_fixed_size(100), seed = 3)
  expect_identical(lengths(batches), rep(100L, 10L))
  expect_identical(sort(unlist(batches)), seq_len(1000L))
  expect_true(all(vapply(batches, function(b) sum(y[b] == "pos"), 1L) == 3L))
  rows = rep(c(0L, 1L, 0L, 1L), c(10L, 7L, 5L, 3L))
  expect_identical(stratified_batches(rows, policy_fixed_size(5), seed = 2, epoch = 1),
    stratified_batches(1L - rows, policy_fixed_size(5), seed = 2, epoch = 1))
})

test_that("the sampler's epochs rotate a fixed-size allocation like stratified_batches", {
  y = rep(c("a", "b", "c"), c(7L, 60L, 20L))
  epochs = stratified_epochs(y, policy_fixed_size(15), seed = 2024)
  for (epoch in 0:3) {
    expect_identical(epochs$next_epoch(),
      stratified_batches(y, policy_fixed_size(15), seed = 2024, epoch = epoch))
  }
  expect_identical(epochs$length(), 6L)
})

test_that("about one row per stratum among many strata is refused", {
  expect_pystratum_error(stratified_batches(1:600, 1, seed = 1), "value_error", "strata")
  expect_match(tryCatch(stratified_batches(1:600, 1, seed = 1), error = conditionMessage),
    "600 distinct strata for 600 rows")
  expect_length(suppressWarnings(stratified_batches(1:50, 1, seed = 1)), 1L)
})
