test_that("epochs are consecutive permutations of one private stream", {
  y = rep(c(1L, 0L, 2L), c(7L, 60L, 20L))
  epochs = stratified_epochs(y, 2, seed = 2024)
  expect_s3_class(epochs, "pystratum_epochs")
  expect_identical(epochs$length(), 3L)
  for (epoch in 0:3) {
    expect_identical(epochs$epochs_served(), epoch)
    expect_identical(epochs$next_epoch(), stratified_batches(y, 2, seed = 2024, epoch = epoch))
  }
  expect_identical(epochs$epochs_served(), 4L)
})

test_that("each epoch is a new shuffle with the same per-batch sizes", {
  y = rep(c("a", "b"), c(8L, 40L))
  epochs = stratified_epochs(y, 2, seed = 1)
  first = epochs$next_epoch()
  second = epochs$next_epoch()
  expect_false(identical(first, second))
  expect_identical(lengths(first), lengths(second))
  expect_identical(as.integer(lengths(first)), as.integer(epochs$batch_sizes))
  expect_stratified_batches(first, y, 2)
  expect_stratified_batches(second, y, 2)
})

test_that("in_order() serves every row once, in order, in batches of the epoch sizes", {
  y = rep(c("a", "b"), c(8L, 40L))
  epochs = stratified_epochs(y, 2, seed = 1)
  batches = epochs$in_order()
  expect_identical(unlist(batches), seq_len(48L))
  expect_identical(lengths(batches), lengths(epochs$next_epoch()))
  expect_identical(epochs$in_order(), batches)
})

test_that("shuffle = FALSE serves the row-order plan every epoch, without a generator", {
  y = c("b", "a", "b", "b", "a", "b")
  with_no_random_seed({
    epochs = stratified_epochs(y, 1, shuffle = FALSE)
    expect_identical(epochs$next_epoch(), list(1:3, 4:6))
    expect_identical(epochs$next_epoch(), list(1:3, 4:6))
    expect_false(exists(".Random.seed", envir = globalenv(), inherits = FALSE))
  })
})

test_that("without a seed, epochs come from the session's stream", {
  y = rep(c("a", "b"), c(4L, 12L))
  set.seed(77)
  epochs = stratified_epochs(y, 1)
  got = list(epochs$next_epoch(), epochs$next_epoch())
  set.seed(77)
  expected = list(reference_batches(y, sample(16L), 1), reference_batches(y, sample(16L), 1))
  expect_identical(got, expected)
})

test_that("the seeded R stream never moves the session's stream between epochs", {
  y = rep(c("a", "b"), c(4L, 12L))
  set.seed(8)
  before = .Random.seed
  epochs = stratified_epochs(y, 1, seed = 3)
  epochs$next_epoch()
  epochs$next_epoch()
  expect_identical(.Random.seed, before)
})

test_that("rng = \"torch\" with a seed: a private generator, global state untouched", {
  backend = fake_torch_backend()
  y = rep(c("a", "b"), c(4L, 12L))
  epochs = stratified_epochs(y, 1, seed = 5, rng = "torch", torch_backend = backend)
  first = epochs$next_epoch()
  second = epochs$next_epoch()
  expect_identical(backend$generator$state, 12345)
  backend$set_state(5000)
  expect_identical(list(first, second), list(reference_batches(y, backend$randperm(16L), 1),
    reference_batches(y, backend$randperm(16L), 1)))
})

test_that("rng = \"torch\" without a seed follows the global generator (the learner's seed)", {
  backend = fake_torch_backend()
  y = rep(c("a", "b"), c(4L, 12L))
  epochs = stratified_epochs(y, 1, rng = "torch", torch_backend = backend)
  first = epochs$next_epoch()
  expect_identical(backend$generator$state, 12346)
  backend$set_state(12345)
  expect_identical(first, reference_batches(y, backend$randperm(16L), 1))
})

test_that("arguments are validated and the too-small warning is given once", {
  expect_pystratum_error(stratified_epochs(1:4, 0), "value_error", "min_samples_per_stratum")
  expect_pystratum_error(stratified_epochs(1:4, 1, rng = "numpy"), "value_error", "rng")
  expect_pystratum_error(stratified_epochs(1:4, 1, shuffle = FALSE, seed = 1), "value_error",
    "seed")
  expect_pystratum_error(stratified_epochs(rep(1:2, c(2L, 5L)), 3, seed = 1), "single_batch",
    "policy", "gives a single batch holding all 7 rows")
  expect_warning(epochs <- stratified_epochs(rep(1:2, c(2L, 5L)), 3, seed = 1,
    allow_single_batch = TRUE), class = "pystratum_stratum_too_small")
  expect_silent(epochs$next_epoch())
  expect_identical(epochs$length(), 1L)
})

test_that("print() summarises the object", {
  epochs = stratified_epochs(rep(1:2, 5L), 1, seed = 4)
  expect_output(print(epochs), "10 rows, 5 batches per epoch, shuffle=TRUE, rng='R', seed=4, 0 epochs served")
})

test_that("batch_iterator() serves each batch once, then the sentinel forever", {
  iterator = batch_iterator(list(1:2, 3L), "done")
  expect_identical(iterator(), 1:2)
  expect_identical(iterator(), 3L)
  expect_identical(iterator(), "done")
  expect_identical(iterator(), "done")
  expect_identical(batch_iterator(list(), "done")(), "done")
})
