test_that("errors carry their class and the argument name", {
  error = tryCatch(abort_type("seed", "bad seed"), error = identity)
  expect_s3_class(error, c("pystratum_type_error", "pystratum_error", "error", "condition"),
    exact = TRUE)
  expect_identical(error$argument, "seed")
  expect_identical(conditionMessage(error), "bad seed")

  error = tryCatch(abort_value("epoch", "bad epoch"), error = identity)
  expect_s3_class(error, c("pystratum_value_error", "pystratum_error", "error", "condition"),
    exact = TRUE)
  expect_identical(error$argument, "epoch")
})

test_that("a missing package has its own class and says how to install it", {
  error = tryCatch(abort_missing_package("torch", "rng = \"torch\""), error = identity)
  expect_s3_class(error, c("pystratum_missing_package", "pystratum_error", "error", "condition"),
    exact = TRUE)
  expect_match(conditionMessage(error), "install.packages(\"torch\")", fixed = TRUE)
  expect_identical(error$package, "torch")
})

test_that("the stratum-too-small warning has its class and fields", {
  warning = tryCatch(warn_stratum_too_small("few rows", "'R'", 3L, 5), warning = identity)
  expect_s3_class(warning, c("pystratum_stratum_too_small", "warning", "condition"), exact = TRUE)
  expect_identical(warning$stratum, "'R'")
  expect_identical(warning$size, 3L)
})

test_that("values are shown the way the messages need them", {
  expect_identical(show_value(3e9), "3000000000")
  expect_identical(show_value(2.5), "2.5")
  expect_identical(show_value("2"), "'2'")
  expect_identical(show_value(TRUE), "TRUE")
  expect_identical(show_value(NULL), "NULL")
  expect_identical(show_value(NA), "NA")
  expect_lte(nchar(show_value(seq_len(1000))), 80L)
  expect_identical(type_name(factor("a")), "factor")
  expect_identical(type_name(data.frame()), "data.frame")
  expect_identical(type_name(1L), "integer")
})
