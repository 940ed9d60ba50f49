# The R side of benchmarks/report.py (which runs it; not meant to be run alone):
#   Rscript benchmarks/report_r.R SIZES_FILE REPEATS BATCH_SIZE SEED
# SIZES_FILE holds the stratum sizes, one per line. Prints one JSON line:
# per method the timed repeats (after one warm-up run), the guarantee read
# off the warm-up epoch and the growth of R's heap during it.
suppressPackageStartupMessages({
  library(pystratum)
  library(data.table)
  library(jsonlite)
})
script_dir = dirname(normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE),
  value = TRUE)[1L])))
source(file.path(script_dir, "blog_datatable.R"))
setDTthreads(1L)

args = commandArgs(trailingOnly = TRUE)
sizes = as.integer(readLines(args[[1L]]))
repeats = as.integer(args[[2L]])
batch_size = as.integer(args[[3L]])
seed = as.integer(args[[4L]])
n = sum(sizes)
set.seed(0L)
labels = sample(rep.int(seq_along(sizes), sizes))

cut_into_batches = function(order) unname(split(order, ceiling(seq_along(order) / batch_size)))

methods = list(
  "R-sample" = function() {
    set.seed(seed)
    cut_into_batches(sample(n))
  },
  "R-datatable-blog" = function() {
    set.seed(seed)
    datatable_batches(labels, 1L, sample(n))
  },
  "R-pystratum" = function() stratified_batches(labels, 1L, seed = seed)
)

heap_mb = function(g) sum(g[, ncol(g)])  # the "(Mb)" column of "max used"

results = lapply(methods, function(run) {
  invisible(gc(reset = TRUE))
  before = sum(gc()[, 2L])
  batches = run()
  peak = heap_mb(gc()) - before
  counts = unclass(batch_count_table(labels, batches))
  per_row = tabulate(unlist(batches, use.names = FALSE), n)
  record = list(batches = length(batches), mean_batch = n / length(batches),
    missing_share = mean(rowSums(counts == 0L) > 0L), min_count = min(counts),
    each_row_once = all(per_row == 1L), peak_mb = peak)
  rm(batches, counts)
  record$times = vapply(seq_len(repeats), function(k) {
    invisible(gc())
    system.time(run())[["elapsed"]]
  }, numeric(1L))
  record
})
cat(toJSON(results, auto_unbox = TRUE, digits = NA), "\n")
