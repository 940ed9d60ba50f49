test_that("the blog example: first batch is rows 1:9 and 112", {
  y = rep(c("M", "R"), c(111L, 12L))
  batches = stratified_batches(y, 1, shuffle = FALSE)
  expect_length(batches, 12L)
  expect_identical(batches[[1L]], c(1:9, 112L))
  expect_stratified_batches(batches, y, 1)
  # The blog's count table: 1 R per batch, 9 or 10 M.
  r_counts = vapply(batches, function(b) sum(y[b] == "R"), 1L)
  expect_true(all(r_counts == 1L))
})

test_that("float-defect regression: 3 minority and 187 majority rows, m = 1", {
  y = rep(c("minority", "majority"), c(3L, 187L))
  for (seed in c(1, 2, 3)) {
    batches = stratified_batches(y, 1, seed = seed)
    expect_length(batches, 3L)
    expect_identical(vapply(batches, function(b) sum(y[b] == "minority"), 1L), c(1L, 1L, 1L))
  }
  expect_length(stratified_batches(y, 1, shuffle = FALSE), 3L)
})

test_that("invariants hold on random configurations, and match the reference", {
  set.seed(4)
  for (trial in 1:150) {
    n_strata = sample(1:6, 1L)
    n = sample(n_strata:200, 1L)
    y = sample(c(seq_len(n_strata), sample(n_strata, n - n_strata, replace = TRUE)))
    m = sample(1:5, 1L)
    seed = sample.int(1e6, 1L)
    # One batch allowed (random sizes often give one): the invariants are the point.
    batches = suppressWarnings(stratified_batches(y, m, seed = seed, allow_single_batch = TRUE))
    expect_stratified_batches(batches, y, m)
    set.seed(seed)
    expect_identical(batches, reference_batches(y, sample(n), m))
  }
})

test_that("relabelling strata changes nothing", {
  set.seed(5)
  y = sample(c("a", "b", "c"), 60L, replace = TRUE, prob = c(0.6, 0.3, 0.1))
  expected = stratified_batches(y, 2, seed = 10)
  relabelled = c(a = "zeta", b = "alpha", c = "mid")[y]
  expect_identical(stratified_batches(unname(relabelled), 2, seed = 10), expected)
  expect_identical(stratified_batches(match(y, c("c", "a", "b")), 2, seed = 10), expected)
  expect_identical(stratified_batches(factor(y, levels = c("c", "b", "a", "never")), 2, seed = 10),
    expected)
  expect_identical(stratified_batches(as.double(factor(y)) / 7, 2, seed = 10), expected)
})

test_that("several columns equal their combined key", {
  set.seed(6)
  strata = data.frame(
    y = sample(c("pos", "neg"), 80L, replace = TRUE),
    site = sample(1:3, 80L, replace = TRUE),
    flag = sample(c(TRUE, FALSE), 80L, replace = TRUE)
  )
  key = do.call(paste, strata)
  batches = stratified_batches(strata, 1, seed = 8)
  expect_identical(batches, stratified_batches(key, 1, seed = 8))
  expect_stratified_batches(batches, strata, 1)
  expect_identical(stratified_batches(as.matrix(strata[, 1:2]), 1, seed = 8),
    stratified_batches(do.call(paste, strata[, 1:2]), 1, seed = 8))
})

test_that("data.table strata work like data.frame strata", {
  skip_if_not_installed("data.table")
  strata = data.frame(y = rep(c("a", "b"), 10), g = rep(1:2, each = 10))
  expect_identical(stratified_batches(data.table::as.data.table(strata), 1, seed = 2),
    stratified_batches(strata, 1, seed = 2))
})

test_that("epoch k is the (k + 1)-th sample(N) after set.seed(seed)", {
  y = rep(c(1L, 0L, 2L), c(7L, 60L, 20L))
  set.seed(2024)
  for (epoch in 0:3) {
    expect_identical(stratified_batches(y, 2, seed = 2024, epoch = epoch),
      reference_batches(y, sample(87L), 2))
  }
})

test_that("seed = NULL draws one sample(N) from the session's stream", {
  y = rep(c("a", "b"), c(5L, 15L))
  set.seed(31)
  got = stratified_batches(y, 1)
  expect_identical(got, stratified_batches(y, 1, seed = 31))
  set.seed(31)
  sample(20L)
  after = .Random.seed
  set.seed(31)
  stratified_batches(y, 1)
  expect_identical(.Random.seed, after)
})

test_that("a seed leaves .Random.seed untouched, and absent when it was absent", {
  y = rep(c("a", "b"), c(5L, 15L))
  set.seed(123)
  before = .Random.seed
  stratified_batches(y, 1, seed = 5, epoch = 2)
  expect_identical(.Random.seed, before)
  with_no_random_seed({
    first = stratified_batches(y, 1, seed = 5)
    expect_false(exists(".Random.seed", envir = globalenv(), inherits = FALSE))
    expect_identical(stratified_batches(y, 1, seed = 5), first)
  })
  # shuffle = FALSE never touches the generator either.
  with_no_random_seed({
    stratified_batches(y, 1, shuffle = FALSE)
    expect_false(exists(".Random.seed", envir = globalenv(), inherits = FALSE))
  })
})

test_that("shuffle = FALSE is the identity permutation; an epoch there is an error", {
  y = c("b", "a", "b", "b", "a", "b")
  expected = list(c(1L, 2L, 3L), c(4L, 5L, 6L))
  expect_identical(stratified_batches(y, 1, shuffle = FALSE), expected)
  expect_identical(stratified_batches(y, 1, shuffle = FALSE, epoch = 0), expected)
  expect_pystratum_error(stratified_batches(y, 1, shuffle = FALSE, epoch = 5), "value_error",
    "epoch", "^epoch=5 has no effect since shuffle=FALSE .*Leave epoch=0, or set shuffle=TRUE\\.$")
})

test_that("small inputs: N = 1, one stratum, two rows", {
  expect_pystratum_error(stratified_batches("a", 1, seed = 1), "single_batch", "policy")
  expect_identical(stratified_batches("a", 1, seed = 1, allow_single_batch = TRUE), list(1L))
  expect_identical(stratified_batches(5L, 1, shuffle = FALSE, allow_single_batch = TRUE), list(1L))
  expect_identical(lengths(stratified_batches(rep("x", 10L), 3, seed = 2)), c(3L, 3L, 4L))
  expect_identical(stratified_batches(c("a", "b"), 1, shuffle = FALSE, allow_single_batch = TRUE),
    list(1:2))
})

test_that("the smallest stratum below m, allowed, gives one batch and a classed warning", {
  y = rep(c("M", "R"), c(10L, 3L))
  expect_warning(batches <- stratified_batches(y, 5, seed = 3, allow_single_batch = TRUE),
    "^The smallest stratum \\('R'\\) has 3 rows, fewer than min_samples_per_stratum=5: returning a single batch with every row\\. Lower min_samples_per_stratum to at most 3 to get several batches\\.$",
    class = "pystratum_stratum_too_small")
  expect_length(batches, 1L)
  set.seed(3)
  expect_identical(batches, list(sample(13L)))
  # Exactly one warning, and it is a warning, not an error.
  warnings = list()
  withCallingHandlers(stratified_batches(y, 4, shuffle = FALSE, allow_single_batch = TRUE),
    warning = function(w) {
    warnings[[length(warnings) + 1L]] <<- w
    invokeRestart("muffleWarning")
  })
  expect_length(warnings, 1L)
  expect_s3_class(warnings[[1L]], c("pystratum_stratum_too_small", "warning", "condition"),
    exact = TRUE)
})

test_that("bad arguments are classed errors naming the argument", {
  y = c(0L, 1L, 0L, 1L)
  expect_pystratum_error(stratified_batches(y, 0), "value_error", "min_samples_per_stratum",
    "min_samples_per_stratum must be a positive whole number, got min_samples_per_stratum=0")
  expect_pystratum_error(stratified_batches(y, -3), "value_error", "min_samples_per_stratum")
  expect_pystratum_error(stratified_batches(y, 2.5), "type_error", "min_samples_per_stratum",
    "got min_samples_per_stratum=2.5")
  expect_pystratum_error(stratified_batches(y, TRUE), "type_error", "min_samples_per_stratum")
  expect_pystratum_error(stratified_batches(y, NA), "type_error", "min_samples_per_stratum")
  expect_pystratum_error(stratified_batches(y, "2"), "type_error", "min_samples_per_stratum")
  expect_pystratum_error(stratified_batches(y, c(1, 2)), "type_error", "min_samples_per_stratum")
  expect_pystratum_error(stratified_batches(y, 1, rng = "foo"), "value_error", "rng",
    "rng must be one of 'R', 'torch', 'index', got rng='foo'")
  expect_pystratum_error(stratified_batches(y, 1, epoch = -1), "value_error", "epoch",
    "epoch must be a whole number >= 0, got epoch=-1")
  expect_pystratum_error(stratified_batches(y, 1, seed = 1, epoch = 1.5), "type_error", "epoch")
  expect_pystratum_error(stratified_batches(y, 1, shuffle = 1), "type_error", "shuffle")
  expect_pystratum_error(stratified_batches(y, 1, seed = 3, shuffle = FALSE), "value_error",
    "seed", "^seed=3 has no effect since shuffle=FALSE")
  expect_pystratum_error(stratified_batches(y, 1, seed = 1.5), "type_error", "seed")
  expect_pystratum_error(stratified_batches(y, 1, seed = TRUE), "type_error", "seed")
  expect_pystratum_error(stratified_batches(y, 1, seed = 3e9), "value_error", "seed",
    "seed=3000000000")
  expect_pystratum_error(stratified_batches(y, 1, epoch = 2), "value_error", "epoch",
    "epoch=2 cannot be selected when seed=NULL.*Pass seed=")
  expect_pystratum_error(stratified_batches(c(1, NA), 1), "value_error", "strata", "row 2")
  expect_pystratum_error(stratified_batches(integer(0), 1), "value_error", "strata", "empty")
  # Several problems: the scalar arguments are checked before the strata, as in Python.
  expect_pystratum_error(stratified_batches(integer(0), 1, seed = 2.5), "type_error", "seed")
})

test_that("rng = \"torch\" needs torch only when it shuffles", {
  skip_if(requireNamespace("torch", quietly = TRUE), "torch is installed")
  error = expect_error(stratified_batches(1:4, 1, rng = "torch"), class = "pystratum_missing_package")
  expect_match(conditionMessage(error), "install.packages(\"torch\")", fixed = TRUE)
  expect_identical(stratified_batches(c(1, 2, 1, 2), 1, rng = "torch", shuffle = FALSE),
    list(1:2, 3:4))
})

test_that("rng = \"torch\" is torch_randperm after torch_manual_seed, and restores torch's state", {
  skip_if_not_installed("torch")
  skip_if_not(torch::torch_is_installed(), "libtorch is not installed")
  y = rep(c("a", "b"), c(6L, 30L))
  torch::torch_manual_seed(100)
  before = torch::torch_get_rng_state()
  got = stratified_batches(y, 2, seed = 9, rng = "torch", epoch = 1)
  expect_true(torch::torch_equal(torch::torch_get_rng_state(), before))
  torch::torch_manual_seed(9)
  torch::torch_randperm(36L)
  permutation = as.integer(torch::as_array(torch::torch_randperm(36L))) + 1L
  expect_identical(got, reference_batches(y, permutation, 2))
})

test_that("large inputs stay exact and every row is served once", {
  set.seed(7)
  n = 200000L
  y = sample(c("a", "b", "c"), n, replace = TRUE, prob = c(0.01, 0.29, 0.7))
  batches = stratified_batches(y, 3, seed = 1)
  expect_identical(sort(unlist(batches)), seq_len(n))
  counts = vapply(batches, function(b) sum(y[b] == "a"), 1L)
  expect_true(all(counts >= 3L) && max(counts) - min(counts) <= 1L)
})
