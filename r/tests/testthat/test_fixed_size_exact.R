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
  # The rule, the numbers and what works, word for word as Python says it.
  expect_identical(conditionMessage(error), paste0("batch_size=5 gives 24 full batch(es) and a ",
    "last batch of 3 row(s) (123 rows): every full batch needs min_per_stratum=1 row(s) of ",
    "every stratum, and each stratum s gives the last batch the floor or the ceiling of ",
    "N_s * 3 / 123 rows; but stratum 'R' has 12 row(s), fewer than 1 x 24 full batch(es) + ",
    "floor(12 * 3 / 123) = 24. Use batch_size=10 (the smallest larger one that works; every ",
    "batch_size >= 11 works), or a policy that oversamples small strata."))
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

test_that("inputs the last batch's rounding used to refuse are served (as in Python)", {
  # Strata x, y, y, z with batch_size 3: the full batch takes x, y and z, the last one
  # y (rounding in order of appearance gave z's only row to the last batch).
  expect_identical(t(exact_counts(c(1L, 2L, 1L), 3)), rbind(c(1L, 1L, 1L), c(0L, 1L, 0L)))
  counts = exact_counts(c(5L, 23L, 5L, 44L), 50, min_per_stratum = 4)
  expect_identical(colSums(counts), c(50, 27))
  expect_gte(min(counts[, 1L]), 4)
})

test_that("every small input is served exactly when an allocation keeps the guarantees", {
  # The guarantees, checked on what is served; what is refused suggests sizes that work.
  for (k in 1:3) {
    grid = as.matrix(expand.grid(rep(list(1:4), k)))
    for (row in seq_len(nrow(grid))) {
      sizes = as.integer(grid[row, ])
      n_rows = sum(sizes)
      for (m in 1:2) for (batch_size in seq_len(n_rows + 1L)) {
        counts = tryCatch(exact_counts(sizes, batch_size, min_per_stratum = m),
          pystratum_value_error = function(e) e)
        if (inherits(counts, "pystratum_value_error")) {
          expect_identical(counts$argument, if (min(sizes) < m) "min_per_stratum" else "batch_size")
          works = as.numeric(regmatches(conditionMessage(counts), gregexpr(
            "(?<=batch_size=)[0-9]+(?= \\(the)|(?<=batch_size >= )[0-9]+",
            conditionMessage(counts), perl = TRUE))[[1L]])
          for (other in works) {
            expect_true(is.matrix(exact_counts(sizes, other, min_per_stratum = m)))
          }
          next
        }
        full = (n_rows - 1) %/% batch_size
        last_rows = n_rows - full * batch_size
        expect_identical(colSums(counts), c(rep(batch_size, full), last_rows))
        spread = if (last_rows == batch_size) counts else counts[, seq_len(full), drop = FALSE]
        if (length(spread)) {
          expect_true(min(spread) >= m && all(apply(spread, 1L, function(x) diff(range(x))) <= 1))
        }
        share = sizes * last_rows / n_rows
        expect_true(all(counts[, ncol(counts)] >= floor(share) &
          counts[, ncol(counts)] <= ceiling(share)))
      }
    }
  }
})
