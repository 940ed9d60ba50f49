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
  expect_output(print(policy),
    "fixed_size\\(batch_size = 64, min_per_stratum = 2, sizes = 'exact'\\)")
  expect_pystratum_error(policy_from_params("fixed", list(batch_size = 3)), "value_error", "name")
  expect_pystratum_error(policy_fixed_size(0), "value_error", "batch_size")
  expect_pystratum_error(policy_fixed_size(2.5), "type_error", "batch_size")
  expect_pystratum_error(policy_fixed_size(4, min_per_stratum = 0), "value_error",
    "min_per_stratum")
})

fixed_counts = function(sizes, batch_size, epoch = 0, min_per_stratum = 1) {
  encoded = encode_strata(rep(seq_along(sizes), sizes))
  counts_from_cuts(policy_allocate(policy_fixed_size(batch_size, min_per_stratum,
    sizes = "balanced"), encoded,
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
  expect_match(conditionMessage(error), "stratum 'R' has 12 row(s), fewer than", fixed = TRUE)
  suggested = as.numeric(sub(".*Use batch_size=([0-9]+) .*", "\\1", conditionMessage(error)))
  expect_identical(suggested, 10)
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
  expect_length(stratified_batches(1:50, 1, seed = 1, allow_single_batch = TRUE), 1L)
})

test_that("policy parameters of every odd type are refused like Python's (class and argument)", {
  type_errors = list(NULL, NA, NA_real_, NaN, Inf, -Inf, 2.5, 1e-300, "5", TRUE, c(5, 6),
    numeric(0), factor(5), list(5), 5 + 0i, as.Date("2020-01-01"), matrix(5))
  for (bad in type_errors) {
    expect_pystratum_error(policy_fixed_size(bad), "type_error", "batch_size")
    expect_pystratum_error(policy_fixed_size(5, bad), "type_error", "min_per_stratum")
    expect_pystratum_error(policy_min_per_stratum(bad), "type_error", "min_samples_per_stratum")
  }
  for (bad in list(0, -1, NA_integer_, -2^31)) {
    expect_pystratum_error(policy_fixed_size(bad), "value_error", "batch_size")
    expect_pystratum_error(policy_fixed_size(5, bad), "value_error", "min_per_stratum")
  }
  # Integers and whole doubles, named or not, give the same policy; 2^31 and 2^70 are fine.
  expect_identical(policy_fixed_size(c(a = 5L), 2L), policy_fixed_size(5, 2))
  expect_identical(policy_min_per_stratum(3L), policy_min_per_stratum(3))
  expect_pystratum_error(stratified_batches(rep(c("a", "b"), 5), policy_fixed_size, seed = 1),
    "type_error", "min_samples_per_stratum", "That is a function: call it")
  expect_identical(policy_fixed_size(2^31)$params$batch_size, 2^31)
  expect_length(stratified_batches(rep(c("a", "b"), c(30L, 10L)), policy_fixed_size(2^70),
    seed = 1, allow_single_batch = TRUE), 1L)
  expect_output(print(policy_fixed_size(2^40, 3)), "batch_size = 1099511627776")
})

test_that("policy_from_params refuses junk with classed errors", {
  for (name in list(1, NA_character_, NULL, c("fixed_size", "min_per_stratum"), "", "fixed")) {
    expect_pystratum_error(policy_from_params(name, list(batch_size = 3)), "value_error", "name")
  }
  for (params in list(NULL, "3", list(3), list(size = 3), list(batch_size = 3, foo = 1), list(),
    list(batch_size = 3, batch_size = 4))) {
    expect_pystratum_error(policy_from_params("fixed_size", params), "type_error", "params")
  }
  expect_pystratum_error(policy_from_params("fixed_size", list(batch_size = "3")), "type_error",
    "batch_size")
  expect_identical(policy_from_params("min_per_stratum", list(m = 3)), policy_min_per_stratum(3))
})

test_that("a policy edited by hand is checked again; one without a method is refused", {
  y = rep(c("a", "b"), c(30L, 10L))
  policy = policy_fixed_size(5)
  policy$params$batch_size = 0
  expect_pystratum_error(stratified_batches(y, policy, seed = 1), "value_error", "batch_size")
  policy$params$batch_size = "5"
  expect_pystratum_error(stratified_batches(y, policy, seed = 1), "type_error", "batch_size")
  expect_pystratum_error(stratified_epochs(y, policy, seed = 1), "type_error", "batch_size")
  fake = structure(list(name = "nothing", params = list()),
    class = c("pystratum_policy_nothing", "pystratum_policy"))
  expect_pystratum_error(stratified_batches(y, fake, seed = 1), "type_error", "policy",
    "no policy_allocate\\(\\) method")
  nameless = structure(list(params = list()), class = c("pystratum_policy_fixed_size",
    "pystratum_policy"))
  expect_pystratum_error(stratified_batches(y, nameless, seed = 1), "type_error", "policy",
    "must be a list with \\$name")
})

faulty_policy = function(allocate) {
  registerS3method("policy_allocate", "pystratum_policy_test_faulty",
    function(policy, encoded, epoch) allocate(as.double(encoded$sizes), epoch),
    envir = asNamespace("pystratum"))
  structure(list(name = "test_faulty", params = list()),
    class = c("pystratum_policy_test_faulty", "pystratum_policy"))
}

test_that("a faulty policy_allocate() method is an error naming the policy, as in Python", {
  y = rep(c("a", "b", "c"), c(10L, 6L, 4L))
  cases = list(
    list(function(s, e) cbind(0, s), NULL),  # correct: one batch
    list(function(s, e) NULL, "type_error", "must return list"),
    list(function(s, e) list(cuts = c(0, s)), "type_error", "must return list"),
    list(function(s, e) list(cuts = cbind("0", s)), "type_error", "must return list"),
    list(function(s, e) list(cuts = cbind(0, s)[-1L, , drop = FALSE]), "type_error", "2 x 2"),
    list(function(s, e) list(cuts = cbind(0 * s)), "type_error", "B >= 1"),
    list(function(s, e) list(cuts = cbind(0, s / 3)), "value_error", "whole numbers"),
    list(function(s, e) list(cuts = cbind(0, s + NA)), "value_error", "whole numbers"),
    list(function(s, e) list(cuts = cbind(-1, s)), "value_error", "start at -1"),
    list(function(s, e) list(cuts = cbind(0, s, s - 2)), "value_error", "decrease"),
    list(function(s, e) list(cuts = cbind(0, s + 1)), "value_error", "only 10 rows"),
    list(function(s, e) list(cuts = cbind(0, 0, s)), "value_error", "batch 1 no row"),
    list(function(s, e) list(cuts = cbind(0, s), row_weights = 1), "type_error", "row_weights"),
    list(function(s, e) list(cuts = cbind(0, s), row_weights = c(1, NA, 1)), "value_error",
      "finite and >= 0")
  )
  for (case in cases) {
    allocate = case[[1L]]
    policy = faulty_policy(function(s, e) {
      result = allocate(s, e)
      if (is.matrix(result)) list(cuts = result) else result
    })
    if (is.null(case[[2L]])) {
      expect_identical(sort(unlist(stratified_batches(y, policy, seed = 1, epoch = 2,
        allow_single_batch = TRUE))), 1:20)
    } else {
      expect_pystratum_error(stratified_batches(y, policy, seed = 1, epoch = 2,
        allow_single_batch = TRUE), case[[2L]],
        "policy", paste0("^policy pystratum_policy_test_faulty: policy_allocate\\(policy, ",
          "encoded, epoch = 2\\).*", case[[3L]]))
    }
  }
  # Cuts that leave rows out serve the first ranks only.
  policy = faulty_policy(function(s, e) list(cuts = cbind(0, s %/% 2)))
  expect_identical(stratified_batches(y, policy, shuffle = FALSE, allow_single_batch = TRUE),
    list(c(1:5, 11:13, 17:18)))
  batches = stratified_batches(y, policy, seed = 1, epoch = 1, allow_single_batch = TRUE)
  expect_identical(as.vector(table(y[unlist(batches)])), c(5L, 3L, 2L))
  expect_false(anyDuplicated(unlist(batches)) > 0)
  policy = faulty_policy(function(s, e) list(cuts = cbind(0, s %/% 4, s %/% 2)))
  expect_identical(lengths(stratified_epochs(y, policy, seed = 3)$next_epoch()), c(4L, 6L))
  # The number of batches may not move with the epoch: the sampler's .length() relies on it.
  policy = faulty_policy(function(s, e) list(cuts = t(vapply(s, function(n) {
    floor(n * seq(0, e + 1) / (e + 1))
  }, numeric(e + 2)))))
  epochs = stratified_epochs(y, policy, seed = 1, allow_single_batch = TRUE)
  expect_length(epochs$next_epoch(), 1L)
  expect_pystratum_error(epochs$next_epoch(), "value_error", "policy",
    "gives 2 batches, but epoch 0 has 1")
})
