# Wide inputs in R, timed once each: the lazy shard order (rng = "index") with
# many strata over one-row shards, MultiLabel plans of 10 rows x L labels
# (all ones, one label a row, sparse), and label_matrix() reading ROWS x COLUMNS
# of 0/1 (an integer matrix, a data.frame, and the same with one bad cell at the
# end, which every check must reach). Each line: the outcome (batches, labels
# read, or the refusal's first words) and the elapsed seconds of one run.
#
# Run from the repository root after `R CMD INSTALL r`:
#   Rscript benchmarks/bench_r_wide_inputs.R [STRATA] [LABELS] [ROWS] [COLUMNS]
# (defaults 3000 strata of 20 rows, 1e5 labels, 1e5 rows x 1e3 label columns).

suppressPackageStartupMessages(library(pystratum))

args = commandArgs(trailingOnly = TRUE)
n_strata = if (length(args) >= 1L) as.integer(as.numeric(args[[1L]])) else 3000L
n_labels = if (length(args) >= 2L) as.integer(as.numeric(args[[2L]])) else 100000L
n_rows = if (length(args) >= 3L) as.integer(as.numeric(args[[3L]])) else 100000L
n_columns = if (length(args) >= 4L) as.integer(as.numeric(args[[4L]])) else 1000L

timed = function(name, call, what = "batches", size = length) {
  seconds = system.time(outcome <- tryCatch(sprintf("%d %s", size(call()), what),
    error = function(e) paste("refused:", substr(conditionMessage(e), 1, 60))))[["elapsed"]]
  cat(sprintf("%-44s %-30s %8.2f s\n", name, outcome, seconds))
}

cat(sprintf("R %s\n", getRversion()))
codes = rep(seq_len(n_strata), 20)
timed(sprintf("rng='index', %s strata x 20 rows, H = N, W = 1",
  format(n_strata, big.mark = ",")), function() stratified_batches(codes, 1, seed = 1,
  rng = "index", shards = seq_along(codes), allow_single_batch = TRUE))

set.seed(0)
shapes = list(
  "all ones" = matrix(TRUE, 10, n_labels),
  "one label a row" = diag(TRUE, 10, n_labels),
  "sparse 1e-5" = matrix(stats::runif(10 * n_labels) < 1e-5, 10, n_labels))
for (name in names(shapes)) {
  labels = shapes[[name]]
  timed(sprintf("MultiLabel 10 x %s, %s", format(n_labels, big.mark = ","), name),
    function() stratified_batches(labels, policy_multi_label(batch_size = 5), seed = 1))
}

set.seed(1)
values = matrix(as.integer(stats::runif(n_rows * n_columns) < 0.1), n_rows, n_columns)
frame = as.data.frame(values)
shape = sprintf("%s x %s", format(n_rows, big.mark = ","), format(n_columns, big.mark = ","))
timed(sprintf("label_matrix(), integer matrix %s", shape), function() label_matrix(values),
  "labels", ncol)
timed(sprintf("label_matrix(), data.frame %s", shape), function() label_matrix(frame),
  "labels", ncol)
values[n_rows, n_columns] = 2L
frame[[n_columns]][[n_rows]] = 2L
timed(sprintf("label_matrix(), integer matrix %s, last cell 2", shape),
  function() label_matrix(values), "labels", ncol)
timed(sprintf("label_matrix(), data.frame %s, last cell 2", shape),
  function() label_matrix(frame), "labels", ncol)
