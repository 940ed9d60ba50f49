# The internal functions pystratum.r (Python, rpy2) calls: python_bridge.R.

test_that("bridge_call_capturing returns value, error and warnings instead of signalling", {
  ok = bridge_call_capturing(function(x) {
    warning("careful")
    x + 1
  }, list(1))
  expect_identical(ok$value, 2)
  expect_null(ok$error)
  expect_length(ok$warnings, 1L)
  expect_identical(ok$warnings[[1L]]$message, "careful")
  expect_identical(ok$warnings[[1L]]$argument, NA_character_)
  failed = bridge_call_capturing(stratified_batches, list(1:4, 0))
  expect_null(failed$value)
  expect_identical(failed$error$class[[1L]], "pystratum_value_error")
  expect_identical(failed$error$argument, "min_samples_per_stratum")
  expect_match(failed$error$message, "^min_samples_per_stratum must be")
})

test_that("bridge_stratified_batches flattens the batches and forwards warnings", {
  y = rep(c("M", "R"), c(111, 12))
  out = bridge_stratified_batches(y, 1, shuffle = FALSE)
  batches = stratified_batches(y, 1, shuffle = FALSE)
  expect_true(out$is_list)
  expect_true(out$all_integer)
  expect_identical(out$flat, unlist(batches))
  expect_identical(out$sizes, lengths(batches))
  expect_null(out$value)
  small = bridge_stratified_batches(c("a", "b", "b"), 2, seed = 1, allow_single_batch = TRUE)
  expect_identical(small$warnings[[1L]]$class[[1L]], "pystratum_stratum_too_small")
  refused = bridge_stratified_batches(c("a", "b", "b"), 2, seed = 1)
  expect_identical(refused$error$class[1:2], c("pystratum_single_batch", "pystratum_value_error"))
  expect_identical(refused$error$argument, "policy")
  failed = bridge_stratified_batches("a", 1, seed = 1, epoch = 1e9, allow_single_batch = TRUE)
  expect_identical(failed$error$argument, "epoch")
  expect_false(out$has_weights)
  expect_null(out$weights_flat)
})

test_that("bridge_stratified_batches flattens a policy's weights beside the batches", {
  y = rep(c("pos", "neg"), c(10, 90))
  policy = policy_downsample(c(neg = 0.2), policy_fixed_size(7))
  out = bridge_stratified_batches(y, policy, seed = 3)
  batches = stratified_batches(y, policy, seed = 3)
  expect_true(out$has_weights)
  expect_true(out$weights_aligned)
  expect_identical(out$weights_flat, unlist(attr(batches, "weights")))
  expect_identical(length(out$weights_flat), sum(out$sizes))
  expect_setequal(unique(out$weights_flat), c(1, 90 / 18))
})

test_that("bridge_factor and bridge_data_frame build ordinary S3 objects", {
  f = bridge_factor(c(2L, 1L, 2L), c("x", "y"), FALSE)
  expect_identical(f, factor(c("y", "x", "y")))
  expect_s3_class(bridge_factor(1L, "a", TRUE), c("ordered", "factor"), exact = TRUE)
  frame = bridge_data_frame(list(1:2, c("a", "b")), c("n", "s"), 2L)
  expect_identical(frame, data.frame(n = 1:2, s = c("a", "b")))
})

test_that("bridge_task_strata describes the stratum columns in row_ids order", {
  task = list(
    col_roles = list(stratum = c("y", "day", "when")),
    row_ids = c(3L, 1L),
    data = function(rows, cols) {
      backend = data.frame(y = factor(c("a", "b", "c")), day = as.Date(c(0, 1, 2), origin = "1970-01-01"),
        when = as.POSIXct(c(0, 1.5, 3), origin = "1970-01-01", tz = "UTC"), raw = as.raw(1:3))
      backend[rows, cols, drop = FALSE]
    }
  )
  found = bridge_task_strata(task)
  expect_null(found$error)
  expect_identical(found$n_rows, 2L)
  expect_identical(found$info$y$kind, "factor")
  expect_identical(found$info$y$values, c(3L, 1L))
  expect_identical(found$info$day$kind, "Date")
  expect_identical(found$info$day$values, c(2, 0))
  expect_identical(found$info$when$kind, "POSIXct")
  expect_identical(found$info$when$values, c(3, 0))
  task$col_roles$stratum = "raw"
  expect_identical(bridge_task_strata(task)$info$raw$kind, "raw")
  task$col_roles$stratum = character(0)
  expect_identical(bridge_task_strata(task)$error, "empty")
})
