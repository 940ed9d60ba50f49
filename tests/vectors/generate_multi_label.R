# Golden vectors of policy_multi_label() (pystratum.policies.MultiLabel), read
# by pytest and testthat alike.
#
# From the repository root, with the R package installed:
#   Rscript tests/vectors/generate_multi_label.R
#     rewrites tests/vectors/multi_label.json from the cases below.
#
# Each case: a 0/1 label matrix (rows as lists), the policy's parameters,
# seed, epoch, shuffle, allow_single_batch; expected the batches (1-based row positions) and the
# per-label counts (batches x labels), or the error's class and argument.

if (!requireNamespace("jsonlite", quietly = TRUE)) {
  stop("generate_multi_label.R needs jsonlite: apt-get install r-cran-jsonlite")
}
suppressPackageStartupMessages(library(pystratum))
output = file.path("tests", "vectors", "multi_label.json")
if (!dir.exists(dirname(output))) {
  stop("Run this script from the repository root: Rscript tests/vectors/generate_multi_label.R")
}

# Correlated labels: two latent scores, label k on when a mix of them plus
# noise passes its prevalence's quantile (drawn here once, stored in the file).
correlated = function(n, prevalence, seed) {
  set.seed(seed)
  latent = matrix(rnorm(2 * n), n, 2)
  labels = vapply(seq_along(prevalence), function(k) {
    score = latent %*% rnorm(2) + rnorm(n, sd = 0.7)
    as.integer(score > quantile(score, 1 - prevalence[[k]], names = FALSE))
  }, integer(n))
  matrix(labels, n, length(prevalence), dimnames = list(NULL, sprintf("l%d", seq_along(prevalence))))
}

run_case = function(id, comment, labels, params, seed = NULL, epoch = 0L, shuffle = TRUE,
  rng = "R", allow_single_batch = FALSE) {
  policy = do.call(policy_multi_label, params)
  result = tryCatch(stratified_batches(labels, policy, seed = seed, rng = rng, epoch = epoch,
    shuffle = shuffle, allow_single_batch = allow_single_batch),
    pystratum_error = function(e) e)
  case = list(id = id, comment = comment,
    input = list(labels = lapply(seq_len(nrow(labels)), function(i) I(unname(labels[i, ]))),
      names = I(colnames(labels)), policy = list(name = "multi_label", params = params),
      seed = seed, rng = rng, epoch = epoch, shuffle = shuffle,
      allow_single_batch = allow_single_batch))
  if (inherits(result, "pystratum_error")) {
    case$expected_error = list(class = sub("^pystratum_", "", class(result)[[1L]]),
      argument = result$argument)
  } else {
    counts = attr(result, "label_counts")
    case$expected = list(batches = lapply(unclass(result), function(b) I(as.integer(b))),
      label_counts = lapply(seq_len(nrow(counts)), function(i) I(unname(counts[i, ]))))
  }
  case
}

impossible = matrix(c(1L, 1L, 0L, 0L, 1L, 1L, 1L, 0L, 1L), 3, 3, byrow = TRUE,
  dimnames = list(NULL, c("a", "b", "c")))
single = matrix(0L, 40, 3, dimnames = list(NULL, c("x", "y", "z")))
single[cbind(1:40, rep(1:3, length.out = 40))] = 1L
single[37:40, ] = 0L
wide = correlated(300, c(0.02, 0.05, 0.1, 0.2, 0.35, 0.5), 11)
rare = correlated(500, seq(0.01, 0.3, length.out = 12), 12)

cases = list(
  run_case("impossible_two_batches", "Rows {a,b}, {b,c}, {a,c} into 2 batches: a label short.",
    impossible, list(num_batches = 2), seed = 1L),
  run_case("impossible_strict", "The same with strict = TRUE: the label_shortfall error.",
    impossible, list(num_batches = 2, strict = TRUE), seed = 1L),
  run_case("impossible_no_shuffle", "The impossible example in row order.", impossible,
    list(num_batches = 2), shuffle = FALSE),
  run_case("single_label_rows", "One label per row and 4 rows without any, 4 batches.", single,
    list(num_batches = 4), seed = 7L),
  run_case("correlated_300_seed_3", "300 rows, 6 correlated labels, batches of 16.", wide,
    list(batch_size = 16), seed = 3L),
  run_case("correlated_300_epoch_2", "The same, epoch 2 (third group of draws).", wide,
    list(batch_size = 16), seed = 3L, epoch = 2L),
  run_case("correlated_300_split_safe", "batch_order = 'split_safe' (placing labels interleaved).",
    wide, list(batch_size = 16, batch_order = "split_safe"), seed = 3L),
  run_case("correlated_300_min_2", "min_per_label = 2, batches of 24.", wide,
    list(batch_size = 24, min_per_label = 2), seed = -5L),
  run_case("rare_500_seed_2024", "500 rows, 12 labels (1% to 30%), batches of 32.", rare,
    list(batch_size = 32), seed = 2024L),
  run_case("rare_500_many_batches", "500 rows into 125 batches of 4 (repair at work).", rare,
    list(num_batches = 125), seed = 9L),
  run_case("one_batch", "batch_size larger than N: one batch, allowed.", wide[1:20, ],
    list(batch_size = 64), seed = 1L, allow_single_batch = TRUE),
  run_case("one_batch_refused", "The same without allow_single_batch: the single_batch error.",
    wide[1:20, ], list(batch_size = 64), seed = 1L),
  run_case("num_batches_one_refused", "num_batches = 1: the single_batch error.", impossible,
    list(num_batches = 1), seed = 1L),
  run_case("batches_over_rows", "num_batches > N: a value error naming num_batches.",
    impossible, list(num_batches = 4), seed = 1L),
  run_case("index_refused", "rng = 'index' is refused for this policy.", impossible,
    list(num_batches = 2), seed = 1L, rng = "index")
)

document = list(
  description = paste(
    "Golden vectors of policy_multi_label() / pystratum.policies.MultiLabel: stratified_batches(",
    "labels, policy, seed, rng, epoch, shuffle, allow_single_batch) with a 0/1 label matrix; batches 1-based,",
    "label_counts batches x labels."),
  generator = "tests/vectors/generate_multi_label.R (the R package + jsonlite)",
  r_version = R.version.string,
  regenerate = "Rscript tests/vectors/generate_multi_label.R  (from the repository root)",
  index_base = 1L,
  cases = cases)
writeLines(jsonlite::toJSON(document, auto_unbox = TRUE, pretty = TRUE, null = "null",
  digits = NA), output)
cat(sprintf("wrote %d cases to %s\n", length(cases), output))
