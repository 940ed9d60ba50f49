test_that("floor_mul_div is exact where the product exceeds 2^53", {
  big = 2^31 - 1
  # (d + 1)^2 / d = d + 2 + 1/d: the floor is d + 2 = 2^31.
  expect_identical(floor_mul_div(big, big, big - 1), 2^31)
  expect_identical(floor_mul_div(big, big - 1, big), big - 1)
  expect_identical(floor_mul_div(big - 5, big, big), big - 5)
  # a * (d - 1) / d = a - a / d: floor is a - ceiling(a / d).
  d = 2^31 - 3
  a = c(1, 2, 1e9, big)
  expect_identical(floor_mul_div(a, d - 1, d), a - ceiling(a / d))
  expect_identical(floor_mul_div(a, d + 1, d), a + floor(a / d))
  # Agrees with the plain formula wherever that one is exact.
  set.seed(1)
  a = floor(runif(1000, 0, 2^26))
  b = floor(runif(1000, 0, 2^26))
  d = floor(runif(1000, 1, 2^26))
  expect_identical(floor_mul_div(a, b, d), (a * b) %/% d)
})

test_that("batch counts: B = max(1, N_min %/% m), >= m each, rows differ by at most one", {
  counts = batch_counts(c(12L, 111L), 1)
  expect_identical(dim(counts), c(2L, 12L))
  expect_identical(rowSums(counts), c(12, 111))
  expect_true(all(counts[1, ] == 1L))
  expect_true(all(counts[2, ] %in% 9:10))
  set.seed(2)
  for (trial in 1:200) {
    sizes = sample(1:60, sample(1:5, 1L), replace = TRUE)
    m = sample(1:8, 1L)
    counts = batch_counts(sizes, m)
    expect_identical(ncol(counts), as.integer(max(1, min(sizes) %/% m)))
    expect_identical(as.integer(rowSums(counts)), as.integer(sizes))
    expect_true(all(apply(counts, 1L, function(x) max(x) - min(x)) <= 1L))
    if (min(sizes) >= m) expect_true(all(counts >= m))
  }
})

test_that("batch counts match the ceiling formula rank by rank", {
  sizes = c(3L, 187L, 50L)
  counts = batch_counts(sizes, 1)
  for (s in seq_along(sizes)) {
    i = seq_len(sizes[[s]])
    expected = tabulate((i * 3 + sizes[[s]] - 1) %/% sizes[[s]], 3L)
    expect_identical(counts[s, ], expected)
  }
})

test_that("the float defect is absent: 3 minority and 187 majority rows give 3 batches", {
  # (3 / 187) * 187 is 3.0000000000000004 in floating point: the float formula
  # puts one majority row into a 4th batch without any minority row.
  expect_gt((3 / 187) * 187, 3)
  codes = rep(1:2, c(3L, 187L))
  batches = allocate_batches(codes, batch_counts(c(3L, 187L), 1))
  expect_length(batches, 3L)
  expect_identical(vapply(batches, function(b) sum(b <= 3L), 1L), c(1L, 1L, 1L))
})

test_that("vectorised allocation equals the row-by-row reference", {
  set.seed(3)
  for (trial in 1:300) {
    n_strata = sample(c(1:4, 12L), 1L)
    n = sample(1:120, 1L)
    key = sample(letters[seq_len(n_strata)], n, replace = TRUE)
    m = sample(1:4, 1L)
    encoded = encode_strata(key)
    counts = batch_counts(encoded$sizes, m)
    permutation = sample.int(n)
    expect_identical(allocate_batches(encoded$codes, counts, permutation),
      reference_batches(key, permutation, m))
    expect_identical(allocate_batches(encoded$codes, counts),
      reference_batches(key, seq_len(n), m))
  }
})

test_that("consecutive batches serve every row once, in order, with the given sizes", {
  batches = consecutive_batches(c(3, 2, 4))
  expect_identical(batches, list(1:3, 4:5, 6:9))
  expect_identical(consecutive_batches(1), list(1L))
})

test_that("the too-small warning names the smallest stratum, its size and m", {
  encoded = encode_strata(rep(c("M", "R"), c(10L, 3L)))
  expect_warning(check_smallest_stratum(encoded, 5L),
    "The smallest stratum ('R') has 3 rows, fewer than min_samples_per_stratum=5: returning a single batch with every row. Lower min_samples_per_stratum to at most 3 to get several batches.",
    fixed = TRUE, class = "pystratum_stratum_too_small")
  expect_silent(check_smallest_stratum(encoded, 3L))
  # Ties: the first stratum in sorted label order, as in Python.
  tied = encode_strata(c("b", "a", "b", "a", "c", "c", "c"))
  expect_warning(check_smallest_stratum(tied, 3L), "('a')", fixed = TRUE)
})
