test_that("whole numbers: integers and whole doubles pass, returned unchanged", {
  expect_identical(assert_whole_number(2L, "m", minimum = 1), 2L)
  expect_identical(assert_whole_number(2, "m", minimum = 1), 2)
  expect_identical(assert_whole_number(0L, "epoch", minimum = 0), 0L)
  expect_identical(assert_whole_number(1e12, "m", minimum = 1), 1e12)
})

test_that("whole numbers: wrong types are type errors, like Python's TypeError", {
  expect_pystratum_error(assert_whole_number(2.5, "m", minimum = 1), "type_error", "m",
    "^m must be a whole number, got m=2.5 of type double\\.$")
  expect_pystratum_error(assert_whole_number(TRUE, "m", minimum = 1), "type_error", "m",
    "got m=TRUE of type logical")
  expect_pystratum_error(assert_whole_number("2", "m", minimum = 1), "type_error", "m",
    "got m='2' of type character")
  expect_pystratum_error(assert_whole_number(c(1, 2), "m", minimum = 1), "type_error", "m",
    "single whole number")
  expect_pystratum_error(assert_whole_number(integer(0), "m", minimum = 1), "type_error", "m")
  expect_pystratum_error(assert_whole_number(NULL, "m", minimum = 1), "type_error", "m")
  expect_pystratum_error(assert_whole_number(Inf, "m", minimum = 1), "type_error", "m")
  expect_pystratum_error(assert_whole_number(factor(1), "m", minimum = 1), "type_error", "m")
  expect_pystratum_error(assert_whole_number(NA, "m", minimum = 1), "type_error", "m")
})

test_that("whole numbers: bad values are value errors", {
  expect_pystratum_error(assert_whole_number(0L, "m", minimum = 1), "value_error", "m",
    "^m must be a positive whole number, got m=0\\.$")
  expect_pystratum_error(assert_whole_number(-1, "epoch", minimum = 0), "value_error", "epoch",
    "^epoch must be a whole number >= 0, got epoch=-1\\.$")
  expect_pystratum_error(assert_whole_number(NA_integer_, "m", minimum = 1), "value_error", "m")
  # Doubles that are not whole numbers are the wrong type, NaN and NA_real_
  # included (Python: float('nan') is a TypeError); a missing integer is a value.
  expect_pystratum_error(assert_whole_number(NA_real_, "m", minimum = 1), "type_error", "m")
  expect_pystratum_error(assert_whole_number(NaN, "m", minimum = 1), "type_error", "m")
  expect_pystratum_error(assert_whole_number(0, "m", minimum = 1, fix = "Try 1."),
    "value_error", "m", "got m=0\\. Try 1\\.$")
})

test_that("flags accept only TRUE and FALSE", {
  expect_true(assert_flag(TRUE, "shuffle"))
  expect_false(assert_flag(FALSE, "shuffle"))
  expect_pystratum_error(assert_flag(1, "shuffle"), "type_error", "shuffle",
    "shuffle must be TRUE or FALSE, got shuffle=1 of type double")
  expect_pystratum_error(assert_flag(NA, "shuffle"), "type_error", "shuffle")
  expect_pystratum_error(assert_flag(c(TRUE, FALSE), "shuffle"), "type_error", "shuffle")
  expect_pystratum_error(assert_flag("TRUE", "shuffle"), "type_error", "shuffle")
})

test_that("choices are exact", {
  expect_identical(assert_choice("R", "rng", c("R", "torch")), "R")
  expect_pystratum_error(assert_choice("foo", "rng", c("R", "torch")), "value_error", "rng",
    "^rng must be one of 'R', 'torch', got rng='foo'\\.$")
  expect_pystratum_error(assert_choice("r", "rng", c("R", "torch")), "value_error", "rng")
  expect_pystratum_error(assert_choice(c("R", "torch"), "rng", c("R", "torch")),
    "value_error", "rng")
  expect_pystratum_error(assert_choice(1, "rng", c("R", "torch")), "value_error", "rng")
  expect_pystratum_error(assert_choice(NA_character_, "rng", c("R", "torch")),
    "value_error", "rng")
})

test_that("seeds: NULL or whole numbers in the stream's range", {
  expect_null(assert_seed(NULL, "R"))
  expect_identical(assert_seed(42L, "R"), 42)
  expect_identical(assert_seed(-2147483647, "R"), -2147483647)
  expect_identical(assert_seed(2147483647L, "R"), 2147483647)
  expect_identical(assert_seed(2^40, "torch"), 2^40)
  expect_pystratum_error(assert_seed(TRUE, "R"), "type_error", "seed", "seed=TRUE of type logical")
  expect_pystratum_error(assert_seed("1", "R"), "type_error", "seed")
  expect_pystratum_error(assert_seed(1.5, "R"), "type_error", "seed", "seed=1.5")
  expect_pystratum_error(assert_seed(c(1, 2), "R"), "type_error", "seed")
  expect_pystratum_error(assert_seed(NA_real_, "R"), "type_error", "seed")
  expect_pystratum_error(assert_seed(NaN, "R"), "type_error", "seed")
  expect_pystratum_error(assert_seed(NA_integer_, "R"), "value_error", "seed")
  # set.seed() turns 2^31 and -2^31 into NA and fails: so do we, up front.
  expect_error(suppressWarnings(set.seed(2^31)))
  expect_pystratum_error(assert_seed(2^31, "R"), "value_error", "seed", "seed=2147483648")
  expect_pystratum_error(assert_seed(-2^31, "R"), "value_error", "seed")
  expect_pystratum_error(assert_seed(3e9, "R"), "value_error", "seed", "seed=3000000000")
  expect_pystratum_error(assert_seed(-1, "torch"), "value_error", "seed", "rng='torch'")
  expect_pystratum_error(assert_seed(2^54, "torch"), "value_error", "seed")
})

test_that("a seed with shuffle = FALSE is an error that says how to fix it", {
  expect_null(assert_seed_with_shuffle(NULL, FALSE))
  expect_identical(assert_seed_with_shuffle(3, TRUE), 3)
  expect_pystratum_error(assert_seed_with_shuffle(3, FALSE), "value_error", "seed",
    "^seed=3 has no effect since shuffle=FALSE .*Leave seed=NULL, or set shuffle=TRUE\\.$")
})
