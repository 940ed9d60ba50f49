# negative_pair_batches(): invariants, errors, and the shared golden vectors
# (tests/vectors/negative_pairs.json, also read by the Python suite).

toy_pairs = function() {
  list(users = c(0, 0, 1, 2, 2, 3, 5, 5, 5, 1, 4, 4),
    items = c(1, 4, 2, 0, 3, 4, 0, 1, 2, 3, 5, 0))
}

test_that("every observed pair once, k negatives each, none of them observed", {
  d = toy_pairs()
  k = 3L
  for (pair_with in c("user", "random")) {
    batches = negative_pair_batches(d$users, d$items, num_items = 6, negatives = k,
      batch_size = 5, seed = 11, pair_with = pair_with, epoch = 1)
    expect_length(batches, 3L)
    positives = unlist(lapply(batches, function(b) b$positive[b$label == 1L]))
    expect_setequal(positives, seq_along(d$users))
    expect_length(positives, length(d$users))
    observed = paste(d$users, d$items)
    for (b in batches) {
      n = sum(b$label)
      expect_identical(b$label, rep(c(1L, 0L), c(n, n * k)))
      expect_true(all(is.na(b$positive[-seq_len(n)])))
      expect_false(any(paste(b$user, b$item)[-seq_len(n)] %in% observed))
      if (pair_with == "user") {
        expect_identical(b$user[-seq_len(n)], rep(b$user[seq_len(n)], each = k))
        # q = 1 / (num_items - n_observed(user)) after rejection.
        n_observed = tabulate(d$users + 1, nbins = 6)
        expect_equal(b$log_q[-seq_len(n)], -log(6 - n_observed[b$user[-seq_len(n)] + 1]))
      } else {
        expect_equal(b$log_q[-seq_len(n)], rep(-log(6 * 6 - 12), n * k))
      }
      expect_equal(b$weight, exp(-b$log_q) / ifelse(b$label == 1L, 1, k))
    }
  }
})

test_that("the session's random stream is left alone and results repeat", {
  d = toy_pairs()
  set.seed(99)
  before = .Random.seed
  a = negative_pair_batches(d$users, d$items, 6, 2, 4, seed = 3)
  expect_identical(.Random.seed, before)
  expect_identical(a, negative_pair_batches(d$users, d$items, 6, 2, 4, seed = 3))
  expect_false(identical(a, negative_pair_batches(d$users, d$items, 6, 2, 4, seed = 3,
    epoch = 1)))
})

test_that("bad input names the argument", {
  d = toy_pairs()
  expect_pystratum_error(negative_pair_batches(d$users, d$items, 6, 0, 4, seed = 1),
    "value_error", "negatives")
  expect_pystratum_error(negative_pair_batches(d$users, d$items[-1], 6, 1, 4, seed = 1),
    "value_error", "users", "same length")
  expect_pystratum_error(negative_pair_batches(c(d$users, 0), c(d$items, 1), 6, 1, 4,
    seed = 1), "value_error", "users", "1 duplicate")
  expect_pystratum_error(negative_pair_batches(d$users, d$items, 5, 1, 4, seed = 1),
    "value_error", "items", "num_items=6")
  expect_pystratum_error(negative_pair_batches(as.character(d$users), d$items, 6, 1, 4,
    seed = 1), "type_error", "users")
  expect_pystratum_error(negative_pair_batches(d$users, replace(d$items, 2, NA), 6, 1, 4,
    seed = 1), "value_error", "items", "missing")
  expect_pystratum_error(negative_pair_batches(d$users, d$items, 6, 1, 4), "value_error",
    "seed")
  expect_pystratum_error(negative_pair_batches(d$users, d$items, 6, 1, 4, seed = 1,
    rng = "numpy"), "value_error", "rng")
  expect_pystratum_error(negative_pair_batches(d$users, d$items, 6, 1, 4, seed = 1,
    item_weights = rep(0, 6)), "value_error", "item_weights", "all zero")
  expect_pystratum_error(negative_pair_batches(c(0, 0), c(0, 1), 2, 1, 4, seed = 1),
    "value_error", "users", "user 0 has observed every item")
  dropped = negative_pair_batches(c(d$users, 0), c(d$items, 1), 6, 1, 20, seed = 1,
    duplicates = "drop")
  expect_setequal(dropped[[1]]$positive[dropped[[1]]$label == 1L], seq_along(d$users))
})

test_that("golden vectors: R reproduces every case of tests/vectors/negative_pairs.json", {
  vectors = read_vectors("negative_pairs.json")
  expect_identical(vectors$index_base, 1L)
  for (case in vectors$cases) {
    input = lapply(case$input, function(v) {
      if (is.list(v)) vapply(v, function(x) if (is.null(x)) NaN else as.double(x), 0) else v
    })
    result = tryCatch(do.call(negative_pair_batches, input), pystratum_error = function(e) e)
    if (!is.null(case$expected_error)) {
      expect_s3_class(result, paste0("pystratum_", case$expected_error$class))
      expect_identical(result$argument, case$expected_error$argument, label = case$id)
      next
    }
    expect_false(inherits(result, "error"), label = case$id)
    expect_length(result, length(case$expected$batches))
    for (b in seq_along(result)) {
      want = case$expected$batches[[b]]
      got = result[[b]]
      positive = vapply(want$positive, function(x) if (is.null(x)) NA_integer_ else
        as.integer(x), 0L)
      expect_identical(got$positive, positive, label = case$id)
      for (name in c("user", "item", "label")) {
        expect_identical(got[[name]], as.integer(unlist(want[[name]])),
          label = paste(case$id, name))
      }
      expect_equal(got$log_q, as.double(unlist(want$log_q)), tolerance = 1e-13)
      expect_equal(got$weight, as.double(unlist(want$weight)), tolerance = 1e-13)
    }
  }
})
