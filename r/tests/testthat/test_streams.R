test_that("the seeded R stream is set.seed(seed) then one sample() per draw", {
  draw = r_stream(2024)
  got = list(draw(20L), draw(20L), draw(5L))
  set.seed(2024, kind = "Mersenne-Twister", normal.kind = "Inversion", sample.kind = "Rejection")
  expected = list(sample(20L), sample(20L), sample(5L))
  expect_identical(got, expected)
})

test_that("the seeded R stream leaves the session's .Random.seed exactly as it was", {
  set.seed(99)
  before = .Random.seed
  draw = r_stream(1)
  draw(10L)
  draw(10L)
  expect_identical(.Random.seed, before)
})

test_that("the seeded R stream leaves .Random.seed absent when it was absent", {
  with_no_random_seed({
    draw = r_stream(1)
    first = draw(10L)
    expect_false(exists(".Random.seed", envir = globalenv(), inherits = FALSE))
    draw(10L)
    expect_false(exists(".Random.seed", envir = globalenv(), inherits = FALSE))
    expect_identical(first, r_stream(1)(10L))
  })
})

test_that("the seeded R stream ignores and keeps the session's RNG kinds", {
  kinds = RNGkind()
  on.exit(do.call(RNGkind, as.list(kinds)), add = TRUE)
  expected = r_stream(5)(30L)
  suppressWarnings(RNGkind("L'Ecuyer-CMRG", "Box-Muller", "Rounding"))
  set.seed(1)
  before = .Random.seed
  expect_identical(r_stream(5)(30L), expected)
  expect_identical(.Random.seed, before)
  expect_identical(RNGkind(), c("L'Ecuyer-CMRG", "Box-Muller", "Rounding"))
})

test_that("the kinds are restored even when .Random.seed was absent", {
  kinds = RNGkind()
  on.exit(do.call(RNGkind, as.list(kinds)), add = TRUE)
  RNGkind("Knuth-TAOCP-2002")
  with_no_random_seed({
    r_stream(5)(30L)
    expect_identical(RNGkind()[[1L]], "Knuth-TAOCP-2002")
    expect_false(exists(".Random.seed", envir = globalenv(), inherits = FALSE))
  })
})

test_that("without a seed the R stream is the session's stream", {
  set.seed(7)
  got = r_stream(NULL)(15L)
  set.seed(7)
  expect_identical(got, sample(15L))
})

test_that("the seeded torch stream restores the global generator and continues its own", {
  backend = fake_torch_backend()
  draw = torch_stream(3, backend)
  first = draw(10L)
  expect_identical(backend$generator$state, 12345)
  second = draw(10L)
  expect_identical(backend$generator$state, 12345)
  expect_false(identical(first, second))
  # The same as seeding the global generator and drawing twice.
  backend$set_state(3 * 1000)
  expect_identical(list(backend$randperm(10L), backend$randperm(10L)), list(first, second))
  expect_identical(backend$generator$seeded, list(3, 3))
})

test_that("the unseeded torch stream draws from the global generator", {
  backend = fake_torch_backend()
  draw = torch_stream(NULL, backend)
  got = draw(8L)
  expect_identical(backend$generator$state, 12346)
  backend$set_state(12345)
  expect_identical(backend$randperm(8L), got)
})

test_that("rng = \"torch\" without torch installed says how to install it", {
  skip_if(requireNamespace("torch", quietly = TRUE), "torch is installed")
  error = expect_error(permutation_stream("torch", 1), class = "pystratum_missing_package")
  expect_match(conditionMessage(error), "install.packages(\"torch\")", fixed = TRUE)
})

test_that("torch's stream matches torch_randperm after torch_manual_seed", {
  skip_if_not_installed("torch")
  skip_if_not(torch::torch_is_installed(), "libtorch is not installed")
  torch::torch_manual_seed(1)
  before = torch::torch_get_rng_state()
  draw = permutation_stream("torch", 7)
  got = list(draw(50L), draw(50L))
  expect_true(torch::torch_equal(torch::torch_get_rng_state(), before))
  torch::torch_manual_seed(7)
  expected = list(as.integer(torch::as_array(torch::torch_randperm(50L))) + 1L,
    as.integer(torch::as_array(torch::torch_randperm(50L))) + 1L)
  expect_identical(got, expected)
})

test_that("epoch_permutation draws epoch + 1 permutations, or none without shuffling", {
  expect_null(epoch_permutation(10L, FALSE, "R", NULL, 3L))
  draw = r_stream(11)
  draw(12L)
  expect_identical(epoch_permutation(12L, TRUE, "R", 11, 1L), draw(12L))
})
