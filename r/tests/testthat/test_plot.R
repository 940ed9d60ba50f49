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

test_that("a label matrix's table counts each label, not the label combinations", {
  labels = data.frame(a = rep(c(1, 0, 1, 0), 25), b = rep(c(0, 1, 1, 0), 25),
                      c = rep(c(0, 0, 0, 1), 25))
  batches = stratified_batches(labels, policy_multi_label(batch_size = 10), seed = 1)
  counts = batch_count_table(labels, batches)
  expect_s3_class(counts, "pystratum_label_table")
  expect_equal(colnames(counts), c("a", "b", "c"))
  expect_equal(unname(unclass(counts)[, , drop = TRUE]), unname(attr(batches, "label_counts")),
               ignore_attr = TRUE)
  expect_equal(colSums(unclass(counts)), c(a = 50, b = 50, c = 25))
  # Plain batches of the same matrix: the policy says it is a label matrix.
  plain = split(1:100, rep(1:10, each = 10L))
  expect_s3_class(batch_count_table(labels, plain, policy = policy_multi_label(batch_size = 10)),
                  "pystratum_label_table")
  result = summary(counts)
  expect_equal(result$headline, paste0("every batch holds >= 1 positive(s) of every label ",
                                       "(best effort: strict=False): all 10 batches do"))
  expect_equal(result$per_label$positives, c(50L, 50L, 25L))
  path = tempfile(fileext = ".png")
  grDevices::png(path, width = 600, height = 300)
  expect_invisible(plot(counts))
  grDevices::dev.off()
  expect_gt(file.size(path), 1000)
})

test_that("a classes-per-batch table names each batch's classes and states P x K", {
  y = rep(paste0("c", 1:30), each = 8L)
  policy = policy_classes_per_batch(4, 2)
  batches = stratified_batches(y, policy, seed = 1)
  classes = batch_count_table(y, batches, policy = policy)
  expect_s3_class(classes, "pystratum_class_table")
  expect_equal(dim(classes), c(length(batches), 4L))
  result = summary(classes)
  expect_false(grepl("miss", result$headline))
  expect_match(result$headline, "^every batch holds 4 distinct classes x 2 rows: all 30 batches do")
  expect_equal(result$records$classes, 30L)
  expect_equal(sum(attr(classes, "appearances")), 4L * length(batches))
  expect_output(print(classes), "classes of each batch \\(2 rows each\\)")
  path = tempfile(fileext = ".png")
  grDevices::png(path, width = 600, height = 300)
  expect_invisible(plot(classes))
  grDevices::dev.off()
  expect_gt(file.size(path), 1000)
})

test_that("a stratum policy's summary states its promise; past 300 batches plot() aggregates", {
  y = rep(c("a", "b"), c(2400L, 400L))
  batches = stratified_batches(y, 1, seed = 2)
  counts = batch_count_table(y, batches, policy = 1)
  expect_equal(summary(counts)$headline, paste0("every batch holds >= 1 row(s) of every ",
                                                "stratum: all 400 batches do (fewest rows of a ",
                                                "stratum in a batch: 1)"))
  path = tempfile(fileext = ".png")
  grDevices::png(path, width = 600, height = 300)
  expect_invisible(plot(counts))
  grDevices::dev.off()
  expect_gt(file.size(path), 1000)
  expect_error(batch_count_table(y, batches, policy = "x"), class = "pystratum_type_error")
})

test_that("a label table keeps empty batches and a batch of one label", {
  labels = data.frame(a = c(1, 0, 1), b = c(0, 1, 1))
  counts = batch_count_table(labels, list(1L, integer(0), 2:3),
                             policy = policy_multi_label(num_batches = 3))
  expect_equal(unname(unclass(counts)[, , drop = TRUE]),
               matrix(c(1L, 0L, 1L, 0L, 0L, 2L), nrow = 3L), ignore_attr = TRUE)
  expect_equal(attr(counts, "batch_rows"), c(1L, 0L, 2L))
})

# Reports at many strata (issue 32, item 4): past 20 strata a printed table or summary is
# one line per stratum, the 10 least served first, then how many more; the data keep all.
wide_strata = function(n_strata = 10000L, seed = 4L) {
  set.seed(seed)
  sizes = sample(3:8, n_strata, replace = TRUE)
  paste0("s", rep(seq_len(n_strata) - 1L, sizes))
}

test_that("a table past 20 strata prints the least served strata, then how many more", {
  y = wide_strata()
  batches = stratified_batches(y, 1, seed = 5)
  counts = batch_count_table(y, batches, policy = 1)
  expect_equal(dim(counts), c(length(batches), 10000L))  # every count kept
  lines = capture.output(print(counts))
  expect_identical(lines, format(counts))
  expect_identical(lines[[1L]], sprintf(paste0("10,000 strata over %d batches, more than 20 to ",
    "show as columns: rows of each stratum in a batch, the least served first"), length(batches)))
  expect_identical(strsplit(trimws(lines[[2L]]), " +")[[1L]],
                   c("stratum", "min", "median", "max", "rows"))
  plain = unclass(counts)
  least = apply(plain, 2L, min)
  shown = order(least)[1:10]
  median = apply(plain[, shown], 2L, stats::median)
  expected = cbind(colnames(plain)[shown], least[shown],
                   ifelse(median == floor(median), sprintf("%.0f", median),
                          sprintf("%.1f", median)),
                   apply(plain[, shown], 2L, max), colSums(plain[, shown]))
  cells = do.call(rbind, strsplit(trimws(lines[3:12]), " +"))
  expect_identical(unname(cells), unname(matrix(as.character(expected), nrow = 10L)))
  expect_identical(lines[13:length(lines)], "... and 9,990 more strata")
})

test_that("a summary past 20 strata prints the least served records and keeps every record", {
  y = wide_strata()
  result = summary(batch_count_table(y, stratified_batches(y, 1, seed = 5), policy = 1))
  expect_equal(nrow(result$records), 10000L)
  lines = capture.output(print(result))
  expect_identical(lines[[1L]], result$headline)
  expect_identical(lines[[2L]], "10,000 strata, more than 20 to show: the least served first")
  expect_identical(strsplit(trimws(lines[[3L]]), " +")[[1L]],
                   c("stratum", "rows", "min_per_batch", "max_per_batch"))
  shown = result$records[order(result$records$min_per_batch)[1:10], ]
  cells = do.call(rbind, strsplit(trimws(lines[4:13]), " +"))
  expect_identical(cells[, 1L], shown$stratum)
  expect_identical(as.integer(cells[, 3L]), as.integer(shown$min_per_batch))
  expect_identical(lines[14:length(lines)], "... and 9,990 more strata")
})

test_that("tables of up to 20 strata keep a column each; 21 labels are compact", {
  y = rep(sprintf("s%02d", 0:19), each = 4L)
  counts = batch_count_table(y, stratified_batches(y, 1, seed = 1), policy = 1)
  expect_match(capture.output(print(counts))[[2L]], "s00 s01", fixed = TRUE)
  expect_length(capture.output(print(summary(counts))), 1L + 1L + 20L)
  set.seed(6)
  labels = as.data.frame(matrix(as.integer(runif(400 * 21) < 0.3), ncol = 21L,
                                dimnames = list(NULL, paste0("label", 0:20))))
  table = batch_count_table(labels, stratified_batches(labels,
    policy_multi_label(batch_size = 40), seed = 2))
  lines = capture.output(print(table))
  expect_match(lines[[1L]], "^21 labels over [0-9]+ batches, .*: positives of each label in a")
  expect_identical(strsplit(trimws(lines[[2L]]), " +")[[1L]],
                   c("label", "min", "median", "max", "positives"))
  expect_identical(lines[[length(lines)]], "... and 11 more labels")
  expect_identical(utils::tail(capture.output(print(summary(table))), 1L),
                   "... and 11 more labels")
})
