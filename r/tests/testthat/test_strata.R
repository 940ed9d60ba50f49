# Two encodings describe the same strata when they partition rows alike.
same_partition = function(codes, key) {
  length(unique(codes)) == length(unique(key)) &&
    length(unique(paste(codes, key))) == length(unique(key))
}

test_that("every supported column type is encoded into sorted codes", {
  expect_identical(encode_strata(c("b", "a", "c", "a"))$codes, c(2L, 1L, 3L, 1L))
  expect_identical(encode_strata(c(10L, -5L, 10L))$codes, c(2L, 1L, 2L))
  expect_identical(encode_strata(c(0.5, -3.75, 0.5))$codes, c(2L, 1L, 2L))
  expect_identical(encode_strata(c(TRUE, FALSE, TRUE))$codes, c(2L, 1L, 2L))
  expect_identical(encode_strata(factor(c("x", "y"), levels = c("y", "x")))$codes, c(2L, 1L))
  expect_identical(encode_strata(as.Date(c("2024-01-02", "2024-01-01")))$codes, c(2L, 1L))
  encoded = encode_strata(c("b", "a", "c", "a"))
  expect_identical(encoded$sizes, c(2L, 1L, 1L))
  expect_identical(encoded$n_rows, 4L)
})

test_that("strings sort in C-locale order, as Python sorts them", {
  encoded = encode_strata(c("b", "B", "a", "\u00e9"))
  expect_identical(encoded$codes, c(3L, 1L, 2L, 4L))
})

test_that("sparse integers and doubles take the sorting path", {
  x = c(1e15, -1e15, 3, 3)
  expect_identical(encode_strata(x)$codes, c(3L, 1L, 2L, 2L))
  y = c(.Machine$integer.max, -.Machine$integer.max, 0L)
  expect_identical(encode_strata(y)$codes, c(3L, 1L, 2L))
  z = c(1.5, 2, 1.5, 100)
  expect_identical(encode_strata(z)$codes, c(1L, 2L, 1L, 3L))
})

test_that("unused factor levels and absent logical values are not strata", {
  encoded = encode_strata(factor(c("a", "b", "a"), levels = c("z", "a", "unused", "b")))
  expect_identical(encoded$codes, c(1L, 2L, 1L))
  expect_identical(encoded$sizes, c(2L, 1L))
  expect_identical(encode_strata(c(TRUE, TRUE))$sizes, 2L)
  expect_identical(encode_strata(c(7L, 7L, 9L))$sizes, c(2L, 1L))
})

test_that("several columns: every combination that occurs is one stratum", {
  strata = data.frame(y = c("a", "b", "a", "b", "a"), g = c(1L, 1L, 2L, 1L, 1L))
  encoded = encode_strata(strata)
  expect_identical(encoded$codes, c(1L, 3L, 2L, 3L, 1L))
  expect_identical(encoded$sizes, c(2L, 1L, 2L))
  # Factors' unused levels do not create strata in combinations either.
  strata$f = factor(c("u", "u", "u", "u", "u"), levels = c("u", "never"))
  expect_identical(encode_strata(strata)$codes, c(1L, 3L, 2L, 3L, 1L))
})

test_that("many possible combinations are numbered by sorting (sparse path)", {
  set.seed(3)
  strata = data.frame(a = sample(200L, 150L, replace = TRUE), b = sample(200L, 150L, replace = TRUE))
  encoded = encode_strata(strata)
  key = paste(strata$a, strata$b)
  expect_true(same_partition(encoded$codes, key))
  # Lexicographic order of (a, b).
  first_rows = match(seq_len(max(encoded$codes)), encoded$codes)
  expect_false(is.unsorted(order(strata$a[first_rows], strata$b[first_rows])))
  expect_identical(combine_codes(c(1L, 2L, 1L), 2L, c(3L, 1L, 3L), 1e6)$codes, c(1L, 2L, 1L))
})

test_that("matrices and data.tables are columns of strata", {
  m = cbind(c(1, 2, 1, 2), c(1, 1, 1, 2))
  expect_true(same_partition(encode_strata(m)$codes, paste(m[, 1], m[, 2])))
  skip_if_not_installed("data.table")
  dt = data.table::data.table(y = c("a", "b", "a"), g = c(1L, 1L, 2L))
  expect_identical(encode_strata(dt)$codes, encode_strata(as.data.frame(dt))$codes)
})

test_that("missing values name the first offending row (1-based) and column", {
  expect_pystratum_error(encode_strata(c("a", NA, "b")), "value_error", "strata",
    "^strata has a missing value at row 2 \\(1-based\\): NA\\. Every row needs a stratum")
  expect_pystratum_error(encode_strata(c(1, 2, NaN)), "value_error", "strata", "row 3 .*: NaN")
  expect_pystratum_error(encode_strata(factor(c("a", "b", NA))), "value_error", "strata", "row 3")
  expect_pystratum_error(encode_strata(c(TRUE, NA)), "value_error", "strata", "row 2")
  strata = data.frame(y = c(1L, 2L, 3L, NA), g = c("a", NA, "b", "c"))
  expect_pystratum_error(encode_strata(strata), "value_error", "strata",
    "^strata\\$g has a missing value at row 2 ")
  unnamed = strata
  names(unnamed) = c("", "")
  expect_pystratum_error(encode_strata(unnamed), "value_error", "strata",
    "^strata\\[\\[2\\]\\] has a missing value at row 2")
})

test_that("empty and malformed strata are rejected", {
  expect_pystratum_error(encode_strata(character(0)), "value_error", "strata",
    "^strata is empty \\(0 rows\\)")
  expect_pystratum_error(encode_strata(data.frame(y = integer(0))), "value_error", "strata",
    "empty")
  expect_pystratum_error(encode_strata(data.frame(row.names = 1:3)), "value_error", "strata",
    "zero columns")
  expect_pystratum_error(encode_strata(NULL), "type_error", "strata", "data.frame")
  expect_pystratum_error(encode_strata(list(1, 2:3)), "value_error", "strata", "same length")
  expect_pystratum_error(encode_strata(list(1, list(2))), "type_error", "strata", "type list")
  expect_pystratum_error(encode_strata(as.raw(1:2)), "type_error", "strata")
  expect_pystratum_error(encode_strata(data.frame(x = I(list(1, 2)))), "type_error", "strata")
})

test_that("labels for messages look like the Python core's", {
  expect_identical(stratum_label(encode_strata(c("R", "M")), 2L), "'R'")
  expect_identical(stratum_label(encode_strata(c(3L, 4L)), 1L), "3")
  expect_identical(stratum_label(encode_strata(factor("lvl")), 1L), "'lvl'")
  strata = data.frame(y = c("a", "b"), g = c(1L, 2L))
  expect_identical(stratum_label(encode_strata(strata), 2L), "('b', 2)")
})

test_that("errors naming date or time strata print the dates, not seconds since 1970", {
  d = as.Date("2024-01-01") + c(0, 0, 0, 0, 1, 1, 1, 2)
  message = function(strata, policy) tryCatch(stratified_batches(strata, policy, seed = 1),
    pystratum_error = conditionMessage)
  expect_match(message(d, policy_min_per_stratum(2)), "'2024-01-03' with 1 row", fixed = TRUE)
  expect_match(message(d, policy_fixed_size(2, 2)), "stratum '2024-01-03' has (1)", fixed = TRUE)
  expect_match(message(as.POSIXct(d, tz = "UTC"), policy_classes_per_batch(2, 2)),
    "'2024-01-03' (1 rows)", fixed = TRUE)
  expect_match(message(data.frame(d = d, g = 1L), policy_min_per_stratum(2)),
    "('2024-01-03', 1) with 1 row", fixed = TRUE)
  expect_false(grepl("1970|19725|1704240000", message(d, policy_min_per_stratum(2))))
})
