# No silent one-batch epochs (issue 19, part 3): R/single_batch.R. The same
# inputs are refused by Python with the same class and argument (vector cases
# error_single_batch_* in tests/vectors/batches.json).

issue_labels = rep(c(0L, 1L, 2L), c(5000L, 300L, 1L))

# A 0/1 multi-label target without touching the session's random stream:
# label j present where a hash of (row, j) falls below 10 + 5 (j - 1) %.
indicator_matrix = function(n_rows = 3000L, n_columns = 8L) {
  rows = rep(seq_len(n_rows), n_columns)
  columns = rep(seq_len(n_columns), each = n_rows)
  hash = (sin(rows * 12.9898 + columns * 78.233) * 43758.5453) %% 1
  matrix(as.integer(hash < 0.1 + 0.05 * (columns - 1L)), n_rows, n_columns)
}

test_that("the issue's example is refused on every stream, naming the smallest strata and the fix", {
  for (rng in c("R", "index")) {
    error = expect_pystratum_error(stratified_batches(issue_labels, 1, seed = 1, rng = rng),
      "single_batch", "policy")
    message = conditionMessage(error)
    expect_match(message, "^policy=policy_min_per_stratum\\(m = 1\\) gives a single batch holding all 5301 rows")
    expect_match(message, "The smallest strata: 2 with 1 row, 1 with 300 rows, 0 with 5000 rows.",
      fixed = TRUE)
    expect_match(message, "merge or drop the one-row strata", fixed = TRUE)
    expect_match(message, "allow_single_batch = TRUE", fixed = TRUE)
  }
  expect_pystratum_error(stratified_batches(issue_labels, 1, shuffle = FALSE), "single_batch",
    "policy")
  # Refused without the too-small warning first.
  expect_silent(tryCatch(stratified_batches(c(rep("a", 10L), rep("rare", 3L)), 5, seed = 1),
    pystratum_value_error = function(e) NULL))
})

test_that("allow_single_batch = TRUE gives the one batch (with the warning when N_min < m)", {
  batches = stratified_batches(issue_labels, 1, seed = 1, allow_single_batch = TRUE)
  expect_length(batches, 1L)
  expect_setequal(batches[[1L]], seq_along(issue_labels))
  expect_warning(stratified_batches(c(rep("a", 10L), rep("rare", 3L)), 5, seed = 1,
    allow_single_batch = TRUE), class = "pystratum_stratum_too_small")
  expect_pystratum_error(stratified_batches(issue_labels, 1, allow_single_batch = NA),
    "type_error", "allow_single_batch")
  expect_pystratum_error(stratified_batches(issue_labels, 1, allow_single_batch = "yes"),
    "type_error", "allow_single_batch")
})

test_that("FixedSize at least the data names a smaller batch_size", {
  y = rep(c("pos", "neg"), c(7L, 20L))
  for (sizes in c("exact", "balanced")) {
    expect_pystratum_error(stratified_batches(y, policy_fixed_size(1000, sizes = sizes), seed = 3),
      "single_batch", "policy", "use a smaller batch_size \\(below 14 for 2 batches\\)")
    expect_gte(length(stratified_batches(y, policy_fixed_size(13, sizes = sizes), seed = 3)), 2L)
  }
})

test_that("0/1 indicator columns: each combination became a stratum, blamed on strata", {
  matrix01 = indicator_matrix()
  combos = table(apply(matrix01, 1L, paste, collapse = ""))
  forms = list(
    matrix = matrix01,
    logical_data_frame = as.data.frame(matrix01 == 1L),
    double_data_frame = as.data.frame(matrix01 + 0),
    list_of_columns = lapply(seq_len(ncol(matrix01)), function(j) matrix01[, j])
  )
  for (form in names(forms)) {
    error = expect_pystratum_error(stratified_batches(forms[[form]], 1, seed = 1), "single_batch",
      "strata")
    message = conditionMessage(error)
    expect_match(message, paste0("^strata has 8 columns of 0/1 values, which look like ",
      "multi-label indicators: each combination of the columns became a stratum"), label = form)
    expect_match(message, sprintf("(%d strata, %d of them with fewer than 2 rows, too few for two batches",
      length(combos), sum(combos < 2L)), fixed = TRUE, label = form)
    expect_match(message, multi_label_fix, fixed = TRUE, label = form)
    expect_length(stratified_batches(forms[[form]], 1, seed = 1, allow_single_batch = TRUE), 1L)
  }
  # The rarest label alone: many batches.
  rarest = which.min(colSums(matrix01))
  expect_length(stratified_batches(matrix01[, rarest], 1, seed = 1), sum(matrix01[, rarest]))
  # Several columns that are not 0/1: blamed on the policy.
  frame = data.frame(y = c(rep(c("a", "b"), 10L), "a"), site = c(rep(1:2, each = 10L), 3L))
  expect_pystratum_error(stratified_batches(frame, 1, seed = 1), "single_batch", "policy",
    "\\('a', 3\\) with 1 row")
})

test_that("stratified_epochs() (the sampler's serving) refuses at construction", {
  expect_pystratum_error(stratified_epochs(issue_labels, policy_min_per_stratum(1), seed = 1),
    "single_batch", "policy")
  epochs = stratified_epochs(issue_labels, policy_min_per_stratum(1), seed = 1,
    allow_single_batch = TRUE)
  expect_identical(epochs$length(), 1L)
  expect_identical(stratified_epochs(issue_labels, policy_min_per_stratum(1), seed = 1,
    rng = "index", allow_single_batch = TRUE)$length(), 1L)
})

test_that("batch_sampler_stratified() takes allow_single_batch", {
  expect_identical(formals(batch_sampler_stratified)$allow_single_batch, FALSE)
  expect_identical(formals(stratified_batches)$allow_single_batch, FALSE)
  skip_if_not_installed("torch")
  expect_pystratum_error(batch_sampler_stratified(1, allow_single_batch = 2), "type_error",
    "allow_single_batch")
})

test_that("one condition class, pystratum_single_batch (a value error), whatever the cause", {
  y = rep(c("a", "b"), c(50L, 3L))
  for (policy in list(policy_fixed_size(60), policy_fixed_size(53), policy_min_per_stratum(4))) {
    error = tryCatch(stratified_batches(y, policy, seed = 1), error = identity)
    expect_s3_class(error, c("pystratum_single_batch", "pystratum_value_error",
      "pystratum_error"), exact = FALSE)
    expect_match(conditionMessage(error), "holding all 53 rows", fixed = TRUE)
    allowed = suppressWarnings(stratified_batches(y, policy, seed = 1,
      allow_single_batch = TRUE))
    expect_length(allowed, 1L)
  }
  expect_error(stratified_batches(rep(c("a", "b"), 3L), policy_classes_per_batch(2, 3), seed = 1),
    class = "pystratum_single_batch")
  error = tryCatch(stratified_batches(indicator_matrix(), 1, seed = 1), error = identity)
  expect_s3_class(error, "pystratum_single_batch")
  expect_match(conditionMessage(error), "policy_multi_label(batch_size = ...)", fixed = TRUE)
  expect_match(multi_label_fix, "policy_multi_label(batch_size = ...)", fixed = TRUE)
})
