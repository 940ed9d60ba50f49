# Hostile inputs: every one gets either correct batches or a classed error
# naming the argument, never NA positions, a crash or a hang (issue 7).

# Either stratified batches that pass the invariants, or a classed error
# naming `strata`. Returns "ok" or the error class, for the tally. One batch
# is allowed: hostile inputs often make one (the guard: test_single_batch.R).
outcome_of = function(strata, m = 1, ...) {
  result = tryCatch(suppressWarnings(stratified_batches(strata, m, seed = 1,
    allow_single_batch = TRUE, ...)),
    pystratum_error = function(e) e)
  if (inherits(result, "pystratum_error")) {
    expect_identical(result$argument, "strata")
    expect_match(conditionMessage(result), "^strata")
    return(class(result)[[1L]])
  }
  rows = unlist(result)
  expect_type(rows, "integer")
  expect_false(anyNA(rows))
  expect_setequal(rows, seq_along(rows))
  "ok"
}

test_that("a catalogue of hostile strata: batches or a classed error, nothing else", {
  posix = as.POSIXct(c(0, 3600, 0, 3600), origin = "1970-01-01", tz = "UTC")
  matrix_column = data.frame(a = 1:4)
  matrix_column$m = matrix(1:8, 4)
  list_column = data.frame(a = 1:4)
  list_column$l = I(list(1, 2, 3, 4))
  ragged = structure(list(a = 1:4, b = 1:3), class = "data.frame", row.names = 1:4)
  cases = list(
    factor_na_level = list(factor(c("a", NA, "a", NA), exclude = NULL), "ok"),
    factor_na = list(factor(c("a", NA, "a")), "pystratum_value_error"),
    matrix_column = list(matrix_column, "pystratum_type_error"),
    list_column = list(list_column, "pystratum_type_error"),
    ragged_data_frame = list(ragged, "pystratum_value_error"),
    ragged_list = list(list(a = 1:4, b = 1:3), "pystratum_value_error"),
    list_of_columns = list(list(c(1, 1, 2, 2), c("x", "y", "x", "y")), "ok"),
    nested_list = list(list(1:2, list(1, 2)), "pystratum_type_error"),
    empty_list = list(list(), "pystratum_value_error"),
    raw = list(as.raw(1:4), "pystratum_type_error"),
    complex = list(c(1i, 2i, 1i, 2i), "ok"),
    complex_na = list(c(1i, NA), "pystratum_value_error"),
    posixlt = list(as.POSIXlt(posix), "ok"),
    posixct = list(posix, "ok"),
    date = list(as.Date(c(0, 1, 0, 1), origin = "1970-01-01"), "ok"),
    difftime = list(as.difftime(c(1, 2, 1, 2), units = "mins"), "ok"),
    array_3d = list(array(1:8, c(2, 2, 2)), "pystratum_value_error"),
    array_1d = list(array(c(1L, 2L, 1L, 2L)), "ok"),
    table_1d = list(table(c("a", "b", "a")), "pystratum_type_error"),
    table_2d = list(table(c("a", "b"), c(1, 2)), "pystratum_type_error"),
    environment = list(new.env(), "pystratum_type_error"),
    `function` = list(identity, "pystratum_type_error"),
    null = list(NULL, "pystratum_type_error"),
    empty_integer = list(integer(0), "pystratum_value_error"),
    empty_character = list(character(0), "pystratum_value_error"),
    empty_data_frame = list(data.frame(), "pystratum_value_error"),
    zero_column_matrix = list(matrix(integer(0), 3, 0), "pystratum_value_error"),
    na_logical = list(NA, "pystratum_value_error"),
    na_integer = list(c(1L, NA_integer_), "pystratum_value_error"),
    na_real = list(c(1, NA_real_), "pystratum_value_error"),
    nan = list(c(NaN, 1), "pystratum_value_error"),
    na_character = list(c("a", NA_character_), "pystratum_value_error"),
    inf = list(c(Inf, Inf, -Inf, -Inf), "ok"),
    huge_doubles = list(rep(c(1e19, 2e19, 3e19), 4), "ok"),
    max_doubles = list(c(.Machine$double.xmax, -.Machine$double.xmax), "ok"),
    signed_zero = list(c(0, -0), "ok"),
    int_extremes = list(c(.Machine$integer.max, -.Machine$integer.max), "ok"),
    empty_strings = list(c("", "", "a", "a"), "ok"),
    utf8 = list(c("\u00e9", "e\u0301", "\u00e9", "e\u0301"), "ok"),
    latin1 = list(iconv(c("\u00e9", "a"), "UTF-8", "latin1"), "ok"),
    s4 = list(methods::new("numeric"), "pystratum_value_error")
  )
  tally = character(0)
  for (name in names(cases)) {
    got = outcome_of(cases[[name]][[1L]])
    expect_identical(got, cases[[name]][[2L]], label = name)
    tally[[name]] = got
  }
  # Values that must stay apart are kept apart (strata never merged).
  expect_length(stratified_batches(rep(c(1e19, 2e19, 3e19), 4), 2, seed = 1), 2L)
  expect_length(stratified_batches(c(0, -0, 0, -0), 1, seed = 1), 4L)
  expect_length(stratified_batches(factor(c("a", NA, "a", NA), exclude = NULL), 1, seed = 1), 2L)
  expect_gt(length(tally), 40L)
})

test_that("the mlr3 Task guard says what to pass instead", {
  skip_if_not_installed("R6")
  Task = R6::R6Class("Task", public = list(col_roles = list(stratum = "y")))
  error = expect_pystratum_error(stratified_batches(Task$new(), 1), "type_error", "strata",
    "mlr3 Task")
  expect_match(conditionMessage(error), "task$data(cols = task$col_roles$stratum)", fixed = TRUE)
  expect_match(conditionMessage(error), "batch_sampler_stratified()", fixed = TRUE)
})

test_that("bit64::integer64 labels are read by value", {
  skip_if_not_installed("bit64")
  x = bit64::as.integer64(c(-5, 3, -5, 3, 0))
  expect_identical(encode_strata(x)$codes, encode_strata(c(-5, 3, -5, 3, 0))$codes)
  # NA is missing (not the raw bits of a double, not 0).
  expect_pystratum_error(encode_strata(bit64::as.integer64(c(0, NA, 0))), "value_error",
    "strata", "row 2")
  # Beyond 2^53 the values are distinct strata even where doubles would merge them.
  big = bit64::as.integer64(c("9007199254740993", "9007199254740992"))
  expect_identical(encode_strata(big[c(1, 2, 1, 2)])$sizes, c(2L, 2L))
  frame = data.frame(y = c("a", "b", "a", "b"))
  frame$id = bit64::as.integer64(c(1, 1, 2, 2))
  expect_identical(encode_strata(frame)$sizes, c(1L, 1L, 1L, 1L))
})

test_that("every epoch is a whole number in [0, 2^31 - 1] and affordable", {
  y = rep(c("a", "b"), 10)
  expect_pystratum_error(stratified_batches(y, 1, seed = 1, epoch = 2^31), "value_error",
    "epoch", "between 0 and 2147483647")
  expect_pystratum_error(stratified_batches(y, 1, seed = 1, epoch = 1e12), "value_error",
    "epoch")
  expect_pystratum_error(stratified_batches(y, 1, seed = 1, epoch = Inf), "type_error", "epoch")
  # epoch * (n_rows + 2000 a call) > 1e8: refused at once, with the cost and the fix.
  started = proc.time()[["elapsed"]]
  error = expect_pystratum_error(stratified_batches(y, 1, seed = 1, epoch = 100001),
    "value_error", "epoch", "^epoch=100001 with rng='R' means drawing")
  expect_lt(proc.time()[["elapsed"]] - started, 1)
  expect_match(conditionMessage(error), "202,002,020 row draws")
  expect_match(conditionMessage(error), "batch_sampler_stratified()", fixed = TRUE)
  expect_pystratum_error(stratified_batches(rep(c("a", "b"), 1e5), 1, seed = 1, epoch = 501), "value_error",
    "epoch", "200,000 rows")
  # The rule depends on the stream being sequential, not on shuffle = FALSE rows.
  expect_length(stratified_batches(y, 1, seed = 1, epoch = 5), 10L)
})
