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
