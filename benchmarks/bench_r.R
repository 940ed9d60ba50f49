# Speed of pystratum::stratified_batches() against a data.table version of
# the same allocation, written from the blog's description:
#   dt[, i := seq_len(.N), by = stratum]; batch = ceiling(i * B / N_s); split
#
# Run from the repository root after `R CMD INSTALL r`:
#   Rscript benchmarks/bench_r.R [N]          (default N = 1e6)
# Prints the median of several runs for each method and the ratios
# (data.table time / pystratum time; > 1 means pystratum is faster), and
# checks that all give identical batches. "dt" is the blog's code shape
# (split() on the double batch number); "dt tuned" is the same allocation
# with integer batches and a directly built factor.

suppressPackageStartupMessages({
  library(pystratum)
  library(data.table)
})

args = commandArgs(trailingOnly = TRUE)
n = if (length(args)) as.integer(as.numeric(args[[1L]])) else 1000000L
runs = 7L
setDTthreads(0L)

# The blog's allocation with data.table: datatable_batches(), shared with report_r.R.
script_dir = dirname(normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE),
  value = TRUE)[1L])))
source(file.path(script_dir, "blog_datatable.R"))

# The same with the usual data.table tuning: integer batch numbers and a
# factor built directly, so split() does not sort the batch numbers as text.
datatable_batches_tuned = function(stratum, min_samples_per_stratum, permutation) {
  dt = data.table(row = permutation, stratum = stratum[permutation])
  dt[, `:=`(i = seq_len(.N), n_s = .N), by = stratum]
  n_batches = max(1L, as.integer(min(dt[, .N, by = stratum]$N) %/% min_samples_per_stratum))
  dt[, batch := as.integer((i * as.double(n_batches) + n_s - 1) %/% n_s)]
  groups = structure(dt$batch, levels = as.character(seq_len(n_batches)), class = "factor")
  unname(split(dt$row, groups))
}

median_seconds = function(expr_fn) {
  times = vapply(seq_len(runs), function(run) {
    gc(verbose = FALSE)
    system.time(expr_fn())[["elapsed"]]
  }, numeric(1L))
  median(times)
}

scenarios = list(
  list(name = "2 classes (10% minority), character, m = 10",
    make = function() sample(c("pos", "neg"), n, replace = TRUE, prob = c(0.1, 0.9)), m = 10L),
  list(name = "10 classes, integer, m = 5",
    make = function() sample.int(10L, n, replace = TRUE, prob = seq(1, 10)), m = 5L),
  list(name = "2 columns (3 x 4 combinations), data.frame, m = 20",
    make = function() data.frame(
      y = sample(c("a", "b", "c"), n, replace = TRUE, prob = c(0.2, 0.3, 0.5)),
      site = sample.int(4L, n, replace = TRUE)
    ), m = 20L)
)

cat(sprintf("pystratum %s, data.table %s, %s, N = %s, median of %d runs\n\n",
  packageVersion("pystratum"), packageVersion("data.table"), R.version.string,
  format(n, big.mark = ","), runs))
cat(sprintf("%-52s %7s %9s %9s %9s %9s %9s\n", "scenario", "shuffle", "pystratum", "dt", "dt/ours",
  "dt tuned", "tuned/ours"))

set.seed(1)
for (scenario in scenarios) {
  strata = scenario$make()
  # data.table groups by one column: paste several columns into a key, as a
  # data.table user would (by = c(...) would also work; the key is cheaper).
  key = if (is.data.frame(strata)) do.call(paste, c(strata, sep = "/")) else strata
  for (shuffle in c(TRUE, FALSE)) {
    seed = if (shuffle) 42L else NULL
    ours = function() stratified_batches(strata, scenario$m, seed = seed, shuffle = shuffle)
    permutation_for = function() {
      if (shuffle) {
        set.seed(42L)
        sample(n)
      } else {
        seq_len(n)
      }
    }
    theirs = function() datatable_batches(key, scenario$m, permutation_for())
    tuned = function() datatable_batches_tuned(key, scenario$m, permutation_for())
    expected = ours()
    same = identical(expected, theirs()) && identical(expected, tuned())
    t_ours = median_seconds(ours)
    t_theirs = median_seconds(theirs)
    t_tuned = median_seconds(tuned)
    cat(sprintf("%-52s %7s %8.3fs %8.3fs %8.2fx %8.3fs %8.2fx%s\n", scenario$name, shuffle, t_ours,
      t_theirs, t_theirs / t_ours, t_tuned, t_tuned / t_ours,
      if (same) "" else "  (batches differ!)"))
  }
}

# The allocation alone, given the permutation, without validation/encoding.
cat("\nAllocation only (codes and permutation given):\n")
strata = sample(c("pos", "neg"), n, replace = TRUE, prob = c(0.1, 0.9))
codes = match(strata, c("neg", "pos"))
permutation = sample(n)
counts = pystratum:::batch_counts(tabulate(codes, 2L), 10L)
t_alloc = median_seconds(function() pystratum:::allocate_batches(codes, counts, permutation))
t_dt = median_seconds(function() datatable_batches(strata, 10L, permutation))
t_tuned = median_seconds(function() datatable_batches_tuned(strata, 10L, permutation))
cat(sprintf("%-52s %7s %8.3fs %8.3fs %8.2fx %8.3fs %8.2fx\n", "2 classes, m = 10", "given",
  t_alloc, t_dt, t_dt / t_alloc, t_tuned, t_tuned / t_alloc))
