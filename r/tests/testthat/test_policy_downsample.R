# A bad `base` of policy_downsample() is blamed on `base` (as in Python), not on
# the shorthand's own argument name.

test_that("a bad downsample base names base", {
  for (base in list(0, -1, "abc", c(1, 2), TRUE)) {
    error = tryCatch(policy_downsample(c(neg = 0.5), base), pystratum_error = function(e) e)
    expect_s3_class(error, "pystratum_error")
    expect_identical(error$argument, "base")
    expect_match(conditionMessage(error), "^base must be a policy, a whole number m")
  }
  expect_s3_class(
    tryCatch(policy_downsample(c(neg = 0.5), "abc"), error = function(e) e),
    "pystratum_type_error")
  expect_s3_class(
    tryCatch(policy_downsample(c(neg = 0.5), 0), error = function(e) e),
    "pystratum_value_error")
  expect_identical(policy_downsample(c(neg = 0.5), 2)$params$base$name, "min_per_stratum")
})
