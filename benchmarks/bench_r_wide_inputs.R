# Wide inputs in R, timed once each: the lazy shard order (rng = "index") with
# many strata over one-row shards, and MultiLabel plans of 10 rows x L labels
# (all ones, one label a row, sparse). Each line: the outcome (batches, or the
# refusal's first words) and the elapsed seconds of one run.
#
# Run from the repository root after `R CMD INSTALL r`:
#   Rscript benchmarks/bench_r_wide_inputs.R [STRATA] [LABELS]
# (defaults 3000 strata of 20 rows, 1e5 labels).

suppressPackageStartupMessages(library(pystratum))

args = commandArgs(trailingOnly = TRUE)
n_strata = if (length(args) >= 1L) as.integer(as.numeric(args[[1L]])) else 3000L
n_labels = if (length(args) >= 2L) as.integer(as.numeric(args[[2L]])) else 100000L

timed = function(name, call) {
  seconds = system.time(outcome <- tryCatch(sprintf("%d batches", length(call())),
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
