# policy_fixed_size(batch_size, sizes = "exact"), the default: batch_size rows
# in every batch but a shorter last one (Python's FixedSize; the golden
# vectors hold the shared batches, test_vectors.R replays them).

exact_counts = function(sizes, batch_size, epoch = 0, min_per_stratum = 1) {
  encoded = encode_strata(rep(seq_along(sizes), sizes))
  counts_from_cuts(policy_allocate(policy_fixed_size(batch_size, min_per_stratum), encoded,
    epoch)$cuts)
}

test_that("the example worked by hand (same as Python's test)", {
  # 10 + 7 rows, batch_size 5: three batches of 5 (3 + 2), then one of 2 (1 + 1).
  expect_identical(t(exact_counts(c(10L, 7L), 5)),
    rbind(c(3L, 2L), c(3L, 2L), c(3L, 2L), c(1L, 1L)))
  expect_identical(policy_fixed_size(5)$params$sizes, "exact")
})

test_that("exact sizes keep their guarantees on random sizes", {
  set.seed(7)
  checked = 0L
  for (k in 1:300) {
    sizes = sample.int(300L, sample.int(6L, 1L), replace = TRUE)
    batch_size = sample.int(500L, 1L)
    epoch = sample.int(20L, 1L) - 1L
    counts = tryCatch(exact_counts(sizes, batch_size, epoch),
      pystratum_value_error = function(e) e)
    if (inherits(counts, "pystratum_value_error")) {
      expect_identical(counts$argument, "batch_size")
      next
    }
    checked = checked + 1L
    n_rows = sum(sizes)
    n_batches = ceiling(n_rows / batch_size)
    totals = colSums(counts)
    expect_identical(ncol(counts), as.integer(n_batches))
    expect_identical(rowSums(counts), as.double(sizes))
    expect_true(all(totals[-n_batches] == batch_size))
    expect_identical(totals[[n_batches]], n_rows - (n_batches - 1) * batch_size)
    # The floor or ceiling of every stratum's share of every batch.
    share = outer(sizes, totals) / n_rows
    expect_true(all(counts >= floor(share) & counts <= ceiling(share)))
  }
  expect_gt(checked, 100L)
})

test_that("sizes is checked, and an infeasible minimum names its argument", {
  expect_pystratum_error(policy_fixed_size(8, sizes = "nearest"), "value_error", "sizes")
  expect_pystratum_error(policy_fixed_size(8, sizes = NA), "value_error", "sizes")
  expect_identical(policy_from_params("fixed_size", list(batch_size = 8, sizes = "balanced")),
    policy_fixed_size(8, sizes = "balanced"))
  y = rep(c("M", "R"), c(111L, 12L))
  error = tryCatch(stratified_batches(y, policy_fixed_size(5), seed = 1),
    pystratum_value_error = function(e) e)
  expect_identical(error$argument, "batch_size")
  suggested = as.numeric(sub(".*batch_size >= ([0-9]+),.*", "\\1", conditionMessage(error)))
  expect_silent(stratified_batches(y, policy_fixed_size(suggested), seed = 1))
  expect_error(stratified_batches(y, policy_fixed_size(suggested - 1), seed = 1),
    class = "pystratum_value_error")
  expect_pystratum_error(stratified_batches(y, policy_fixed_size(40, 13), seed = 1),
    "value_error", "min_per_stratum")
})

test_that("the balanced sizes stay available", {
  y = rep(c("pos", "neg"), c(30L, 970L))
  expect_identical(lengths(stratified_batches(y, policy_fixed_size(64, sizes = "balanced"),
    seed = 1)), rep(c(63L, 62L), c(8L, 8L)))
  expect_identical(lengths(stratified_batches(y, policy_fixed_size(64), seed = 1)),
    c(rep(64L, 15L), 40L))
})
