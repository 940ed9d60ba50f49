# Hostile labels for the sampling policies' parameters: double strata are named by
# Python's text of each value (repr; whole numbers in full), value by value.

test_that("double strata are named by their own shortest text, not a common format", {
  y = rep(c(-1.5, -1.25, 3, 0.1, 1e-7, 1 / 3, 123456.789, 1.5e-05), times = c(4, 5, 6, 7, 8, 9, 10, 11))
  keys = c("-1.5", "-1.25", "3", "0.1", "1e-07", "0.3333333333333333", "123456.789", "1.5e-05")
  for (key in keys) {
    keep = stats::setNames(0.5, key)
    b = stratified_batches(y, policy_downsample(keep, 1), seed = 4)
    weights = unlist(attr(b, "weights"))
    expect_true(all(weights[y[unlist(b)] == unique(y)[match(key, keys)]] > 1))
  }
  shares = stats::setNames(rep(1 / 8, 8), keys)
  b = stratified_batches(y, policy_targets(shares, 8), seed = 2)
  expect_true(all(vapply(b, function(batch) length(unique(y[batch])) == 8L, TRUE)))
  expect_equal(double_keys(c(-0, 2^53 + 2, Inf, -Inf, 5e-324)),
    c("0", "9007199254740994", "inf", "-inf", "5e-324"))
})

test_that("stratified_epochs() serves epoch k of a sampling policy as stratified_batches()", {
  # Odd policies whose epochs draw different sizes (rotating extras, tiny keeps, strata of
  # one row): the sequential stream must replay each skipped epoch with its own draws.
  y = rep(c("a", "b", "c", "d", "e"), times = c(1, 2, 17, 40, 3))
  y = y[c(seq(2, length(y), by = 2), seq(1, length(y), by = 2))]
  policies = list(
    policy_targets(c(a = 0.1, b = 0, c = 0.3, d = 0.6, e = 0), 7, epoch = 3L),
    policy_targets("balanced", 5, epoch = "smallest"),
    policy_downsample(c(d = 1e-9, c = 0.33), policy_targets("balanced", 9)),
    policy_downsample(c(e = 0.5, d = 0.1), 1))
  for (policy in policies) {
    for (seed in c(-7L, 2147483647L)) {
      # One batch allowed (the stratum of one row): the draws are the point here.
      epochs = stratified_epochs(y, policy, seed = seed, allow_single_batch = TRUE)
      for (k in 0:3) {
        served = epochs$next_epoch()
        expected = stratified_batches(y, policy, seed = seed, epoch = k, allow_single_batch = TRUE)
        expect_identical(unclass(served)[seq_along(served)], unclass(expected)[seq_along(expected)])
        expect_identical(attr(served, "weights"), attr(expected, "weights"))
      }
    }
  }
})
