library(testthat)
library(pystratum)

test_check("pystratum")
