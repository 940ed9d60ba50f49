test_that("batch_count_table counts every stratum in every batch, batches from 1", {
  y = c("a", "b", "a", "a", "b", "a")
  counts = batch_count_table(y, list(c(1L, 3L), c(2L, 4L, 5L), 6L))
  expect_s3_class(counts, "pystratum_count_table")
  expect_equal(dimnames(counts), list(batch = c("1", "2", "3"), stratum = c("a", "b")))
  expect_equal(unname(unclass(counts)), matrix(c(2L, 1L, 1L, 0L, 2L, 0L), nrow = 3L))
})

test_that("batch_count_table of stratified batches equals the allocation's counts", {
  y = rep(c("x", "y", "z"), c(40L, 7L, 13L))
  for (seed in 1:5) {
    batches = stratified_batches(y, 2, seed = seed)
    counts = batch_count_table(y, batches)
    expect_equal(nrow(counts), length(batches))
    expect_true(all(unclass(counts) >= 2L))
    expect_equal(sum(counts), length(y))
    expect_equal(summary(counts)$batches_missing_a_stratum, 0L)
  }
})

test_that("several columns are one stratum per combination, labelled a/b", {
  strata = data.frame(y = rep(c("p", "q"), 10), g = rep(1:2, each = 10))
  counts = batch_count_table(strata, stratified_batches(strata, 1, seed = 3))
  expect_equal(colnames(counts), c("p/1", "p/2", "q/1", "q/2"))
})

test_that("batch_count_table refuses what is not a list of row positions", {
  expect_error(batch_count_table(1:3, 1:3), class = "pystratum_type_error")
  expect_error(batch_count_table(1:3, list(c(1L, 4L))), "1..3", class = "pystratum_value_error")
})

test_that("plot() draws with 2 and with 200 strata and marks missing strata", {
  path = tempfile(fileext = ".png")
  grDevices::png(path, width = 600, height = 300)
  y = rep(c("a", "b"), c(30L, 3L))
  summary_plain = summary(batch_count_table(y, split(1:33, rep(1:3, each = 11L))))
  expect_equal(summary_plain$batches_missing_a_stratum, 2L)
  expect_invisible(plot(batch_count_table(y, split(1:33, rep(1:3, each = 11L)))))
  many = rep(1:200, c(rep(50L, 7L), rep(2L, 193L)))
  expect_invisible(plot(batch_count_table(many, stratified_batches(many, 1, seed = 1)),
                        max_strata = 8))
  grDevices::dev.off()
  expect_gt(file.size(path), 1000)
  expect_error(plot(batch_count_table(y, list(1:33)), max_strata = 1),
               class = "pystratum_value_error")
})
