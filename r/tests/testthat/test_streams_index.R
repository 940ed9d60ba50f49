# rng = "index": the keyed bijections and the lazy batches, against the
# golden vectors tests/vectors/index_stream.json (read by pytest too), and
# their invariants.

read_index_vectors = function() {
  vectors = read_vectors("index_stream.json")
  cases = unlist(lapply(vectors$groups, function(group) group$cases), recursive = FALSE)
  list(header = vectors, cases = cases)
}

test_that("index stream: permutations, keys and batches equal the golden vectors", {
  vectors = read_index_vectors()
  expect_identical(vectors$header$index_base, 1L)
  seen = c(permutation = 0, keys = 0, batches = 0)
  for (case in vectors$cases) {
    if (!is.null(case$n)) {
      ranks = if (is.null(case$ranks)) NULL else as.double(unlist(case$ranks)) - 1
      got = pystratum:::index_permutation(case$n, case$seed, case$epoch, case$stream, ranks)
      expect_identical(got + 1, as.double(unlist(case$expected)), label = case$id)
      seen[["permutation"]] = seen[["permutation"]] + 1
    } else if (!is.null(case$streams)) {
      keys = pystratum:::index_round_keys(case$seed, case$epoch, as.double(unlist(case$streams)))
      expected = do.call(cbind, lapply(case$expected, function(k) as.double(unlist(k))))
      expect_identical(unname(keys), unname(expected), label = case$id)
      seen[["keys"]] = seen[["keys"]] + 1
    } else {
      policy = pystratum:::policy_from_params(case$policy$name, case$policy$params)
      strata = unlist(case$strata)
      batches = stratified_batches(strata, policy, seed = case$seed, rng = "index",
        epoch = case$epoch)
      expect_identical(lapply(batches, as.double),
        lapply(case$expected, function(b) as.double(unlist(b))), label = case$id)
      if (!is.null(case$expected_weights)) {
        # N_s / k_s written with every digit: equal to the last bit, as pytest checks.
        expect_identical(lapply(attr(batches, "weights"), as.double),
          lapply(case$expected_weights, function(w) as.double(unlist(w))), label = case$id)
      }
      seen[["batches"]] = seen[["batches"]] + 1
    }
  }
  expect_true(all(seen >= 2))
})

test_that("index stream: a bijection for every domain size, exact near 2^52", {
  for (n in c(1:70, 127, 128, 129, 1000, 4097)) {
    expect_identical(sort(pystratum:::index_permutation(n, 11, 2, 3)), as.double(seq_len(n) - 1))
  }
  big = pystratum:::index_permutation(2^52 - 5, 2^52 - 1, 7, 0, ranks = c(0, 1, 2^52 - 6))
  expect_true(all(big >= 0 & big < 2^52 - 5) && length(unique(big)) == 3L)
})

test_that("rng = 'index': every row once, every batch its composition, epochs differ", {
  y = rep(c("a", "b", "c"), c(200, 13, 40))
  for (epoch in 0:2) {
    batches = stratified_batches(y, 2, seed = 5, rng = "index", epoch = epoch)
    expect_identical(sort(unlist(batches)), seq_along(y))
    expect_stratified_batches(batches, y, 2)
  }
  expect_false(identical(stratified_batches(y, 2, seed = 5, rng = "index", epoch = 0),
    stratified_batches(y, 2, seed = 5, rng = "index", epoch = 1)))
})

test_that("rng = 'index': seeds outside [0, 2^52) are refused, naming seed", {
  expect_pystratum_error(stratified_batches(c(1, 2, 1, 2), 1, seed = -1, rng = "index"),
    "value_error", "seed", "2\\*\\*52")
  expect_pystratum_error(stratified_batches(c(1, 2, 1, 2), 1, seed = 2^52, rng = "index"),
    "value_error", "seed")
  expect_pystratum_error(stratified_batches(c(1, 2), 1, rng = "indexx"), "value_error", "rng")
})

test_that("stratified_epochs() with rng = 'index' serves epoch k as stratified_batches()", {
  y = rep(c("a", "b"), c(60, 9))
  epochs = pystratum:::stratified_epochs(y, 3, seed = 12, rng = "index")
  for (k in 0:2) {
    expect_identical(epochs$next_epoch(), stratified_batches(y, 3, seed = 12, rng = "index",
      epoch = k))
  }
})

test_that("rng = 'index': a recycled stratum's passes derive their keys in one call", {
  # 1 + 8,000 rows: the one-row stratum is recycled 8,000 times (issue 30, item 1). The
  # keys came from one index_round_keys() call per pass and per batch; counted, not timed.
  counter = new.env()
  counter$n = 0L
  namespace = environment(stratified_batches)
  suppressMessages(trace("index_round_keys", tracer = function() counter$n = counter$n + 1L,
    print = FALSE, where = namespace))
  withr::defer(suppressMessages(untrace("index_round_keys", where = namespace)))
  y = c(0, rep(1, 8000))
  batches = stratified_batches(y, policy_targets(c("0" = 0.5, "1" = 0.5), 2), seed = 1,
    rng = "index")
  expect_length(batches, 8000L)
  expect_true(all(vapply(batches, function(b) identical(sort(y[b]), c(0, 1)), logical(1))))
  expect_lte(counter$n, 4L)
})

test_that("rng = 'index' with shards: the lazy order works per (stratum, block) pair, not per block", {
  # 300 strata of 4 rows, each row its own shard (W = 1): 1,200 blocks. The order took a
  # key derivation per stratum and a permutation per (stratum, block), tabulating all H / W
  # blocks per stratum (strata x H / W; 3,000 x 20 rows took seconds). Counted, not timed.
  counter = new.env()
  counter$keys = 0L
  counter$encrypt = 0L
  namespace = environment(stratified_batches)
  suppressMessages(trace("index_round_keys", tracer = function() counter$keys = counter$keys + 1L,
    print = FALSE, where = namespace))
  withr::defer(suppressMessages(untrace("index_round_keys", where = namespace)))
  suppressMessages(trace("index_encrypt", tracer = function() counter$encrypt = counter$encrypt + 1L,
    print = FALSE, where = namespace))
  withr::defer(suppressMessages(untrace("index_encrypt", where = namespace)))
  codes = rep(seq_len(300), 4)
  batches = stratified_batches(codes, 1, seed = 1, rng = "index", shards = seq_along(codes),
    allow_single_batch = TRUE)
  expect_length(batches, 4L)
  expect_true(all(vapply(batches, function(b) identical(sort(codes[b]), seq_len(300)),
    logical(1))))
  expect_identical(sort(unlist(batches)), seq_along(codes))
  # The epoch's keys, the shard order's and the blocks' (3 calls); a few passes each.
  expect_lte(counter$keys, 4L)
  expect_lte(counter$encrypt, 100L)
})
