# Golden vectors of generated negatives, shared by the R and Python test suites.
#
# Regenerate from the repository root, after installing the R package:
#   R CMD INSTALL r && Rscript tests/vectors/generate_negative_pairs.R
# which rewrites tests/vectors/negative_pairs.json. The expected batches are
# what pystratum::negative_pair_batches() returns; the Python suite compares
# pystratum.negatives.NegativePairSampler(..., rng="R").batch(epoch, b)
# with them (positive + 1, NA for generated rows), the R suite
# (r/tests/testthat/test_negatives.R) re-runs every case.

if (!requireNamespace("jsonlite", quietly = TRUE)) {
  stop("generate_negative_pairs.R needs the jsonlite package: install.packages(\"jsonlite\")")
}
library(pystratum)

output = file.path("tests", "vectors", "negative_pairs.json")
if (!dir.exists(dirname(output))) {
  stop("Run this script from the repository root: Rscript tests/vectors/generate_negative_pairs.R")
}

# Arguments of negative_pair_batches() a case may set (NULL: the default).
ARGUMENTS = c("users", "items", "num_items", "negatives", "batch_size", "seed", "num_users",
  "epoch", "reject_observed", "pair_with", "item_weights", "duplicates", "max_rounds")

run_case = function(id, comment, ...) {
  input = list(...)
  stopifnot(all(names(input) %in% ARGUMENTS))
  result = tryCatch(do.call(negative_pair_batches, input), pystratum_error = function(e) e)
  # I() keeps length-one vectors as JSON arrays.
  json_input = input
  for (name in c("users", "items", "item_weights")) {
    if (!is.null(json_input[[name]])) json_input[[name]] = I(as.vector(input[[name]]))
  }
  case = list(id = id, comment = comment, input = json_input)
  if (inherits(result, "error")) {
    case$expected_error = list(class = sub("^pystratum_", "", class(result)[1L]),
      argument = result$argument, message = conditionMessage(result))
  } else {
    case$expected = list(batches = lapply(result, function(batch) {
      list(positive = I(batch$positive), user = I(batch$user), item = I(batch$item),
        label = I(batch$label), log_q = I(batch$log_q), weight = I(batch$weight))
    }))
  }
  case
}

# A small implicit-feedback data set: user u observed a few items, some users many.
toy = function(n_users, n_items, per_user, seed) {
  set.seed(seed)
  pairs = do.call(rbind, lapply(seq_len(n_users) - 1, function(u) {
    n = min(n_items - 1, per_user[(u %% length(per_user)) + 1])
    data.frame(user = u, item = sort(sample.int(n_items, n) - 1))
  }))
  pairs[sample.int(nrow(pairs)), ]
}

small = toy(6, 10, c(2, 3, 5, 8), 11)
medium = toy(40, 60, c(1, 4, 9, 30, 55), 12)
weights_small = c(5, 1, 0, 2, 8, 1, 1, 0.5, 3, 2)
weights_medium = (seq_len(60))^-0.75

cases = list(
  run_case("small_user_uniform", "pair_with='user', uniform items, rejection on, epoch 0.",
    users = small$user, items = small$item, num_items = 10, negatives = 3, batch_size = 4,
    seed = 1),
  run_case("small_user_uniform_epoch2", "Same data, epoch 2 (third sample(P) of the stream).",
    users = small$user, items = small$item, num_items = 10, negatives = 3, batch_size = 4,
    seed = 1, epoch = 2),
  run_case("small_user_no_rejection", "Rejection off: q is the raw proposal 1/num_items.",
    users = small$user, items = small$item, num_items = 10, negatives = 2, batch_size = 5,
    seed = -5, reject_observed = FALSE),
  run_case("small_random_uniform", "pair_with='random': users and items drawn, rejection on.",
    users = small$user, items = small$item, num_items = 10, negatives = 2, batch_size = 3,
    seed = 2147483647, pair_with = "random"),
  run_case("small_random_more_users", "pair_with='random' with num_users above max(users) + 1.",
    users = small$user, items = small$item, num_items = 10, negatives = 1, batch_size = 7,
    seed = 3, num_users = 9, pair_with = "random", epoch = 1),
  run_case("small_user_weighted", "Weighted items (zero weights never drawn), rejection on.",
    users = small$user, items = small$item, num_items = 10, negatives = 4, batch_size = 4,
    seed = 9, item_weights = weights_small, max_rounds = 300),
  run_case("small_random_weighted_no_rejection", "Weighted items, random users, no rejection.",
    users = small$user, items = small$item, num_items = 10, negatives = 2, batch_size = 6,
    seed = 10, item_weights = weights_small, pair_with = "random", reject_observed = FALSE),
  run_case("medium_user_uniform_k5", "40 users, some observed 55 of 60 items: many redraws.",
    users = medium$user, items = medium$item, num_items = 60, negatives = 5, batch_size = 32,
    seed = 20250906, max_rounds = 400),
  run_case("medium_user_weighted_epoch1", "Popularity^-0.75 weights, epoch 1.",
    users = medium$user, items = medium$item, num_items = 60, negatives = 2, batch_size = 50,
    seed = 77, epoch = 1, item_weights = weights_medium, max_rounds = 600),
  run_case("duplicates_dropped", "Pairs listed twice: the first occurrence is kept.",
    users = c(0, 1, 0, 2, 1, 0), items = c(3, 1, 3, 0, 1, 2), num_items = 5, negatives = 2,
    batch_size = 2, seed = 4, duplicates = "drop"),
  run_case("one_pair", "A single observed pair, one batch.",
    users = 0, items = 0, num_items = 2, negatives = 3, batch_size = 8, seed = 0),
  run_case("error_duplicates", "Duplicate pairs without duplicates='drop'.",
    users = c(0, 1, 0), items = c(3, 1, 3), num_items = 5, negatives = 2, batch_size = 2,
    seed = 4),
  run_case("error_k0", "negatives = 0.",
    users = c(0, 1), items = c(0, 1), num_items = 2, negatives = 0, batch_size = 2, seed = 1),
  run_case("error_item_out_of_range", "An item id equal to num_items.",
    users = c(0, 1), items = c(0, 5), num_items = 5, negatives = 1, batch_size = 2, seed = 1),
  run_case("error_negative_user", "A negative user id.",
    users = c(0, -1), items = c(0, 1), num_items = 5, negatives = 1, batch_size = 2, seed = 1),
  run_case("error_fractional_item", "A non-integer item id.",
    users = c(0, 1), items = c(0, 1.5), num_items = 5, negatives = 1, batch_size = 2, seed = 1),
  run_case("error_nan_user", "NaN among the users.",
    users = c(0, NaN), items = c(0, 1), num_items = 5, negatives = 1, batch_size = 2, seed = 1),
  run_case("error_lengths", "users and items of different lengths.",
    users = c(0, 1, 2), items = c(0, 1), num_items = 5, negatives = 1, batch_size = 2, seed = 1),
  run_case("error_user_saw_everything", "User 1 observed all 3 items: nothing to reject into.",
    users = c(0, 1, 1, 1), items = c(0, 0, 1, 2), num_items = 3, negatives = 1, batch_size = 2,
    seed = 1),
  run_case("error_rounds", "User 0 observed 19 of 20 items: 5 rounds are not enough.",
    users = rep(0, 19), items = 0:18, num_items = 20, negatives = 2, batch_size = 4, seed = 1,
    max_rounds = 5),
  run_case("error_weights_negative", "A negative item weight.",
    users = c(0, 1), items = c(0, 1), num_items = 3, negatives = 1, batch_size = 2, seed = 1,
    item_weights = c(1, -1, 1)),
  run_case("error_weights_zero", "All item weights zero.",
    users = c(0, 1), items = c(0, 1), num_items = 3, negatives = 1, batch_size = 2, seed = 1,
    item_weights = c(0, 0, 0)),
  run_case("error_weights_length", "item_weights of the wrong length.",
    users = c(0, 1), items = c(0, 1), num_items = 3, negatives = 1, batch_size = 2, seed = 1,
    item_weights = c(1, 1))
)

vectors = list(
  description = paste(
    "Golden batches of generated negatives: each batch holds its observed (user, item) pairs",
    "(in the epoch's permuted order) followed by k generated pairs per observed pair, with",
    "log_q (log sampling probability after rejection) and weight = 1/(k q). Each case gives",
    "the input (0-based ids) and either the expected batches (positive: 1-based position of",
    "the observed pair, null on generated rows) or the expected error (pystratum_<class> in R,",
    "TypeError/ValueError in Python) and the argument it names."),
  generator = sprintf("pystratum (R package) %s, tests/vectors/generate_negative_pairs.R",
    as.character(utils::packageVersion("pystratum"))),
  r_version = R.version.string,
  regenerate = paste("R CMD INSTALL r && Rscript tests/vectors/generate_negative_pairs.R",
    " (from the repository root)"),
  index_base = 1L,
  rng = paste(
    "'R': the permutation of epoch e is the (e+1)-th sample(P) after set.seed(seed);",
    "batch b's negatives come from set.seed(batch_seed(seed, e, b)) with",
    "x = seed %% M, x = (x * 2^21 + e) %% M, batch_seed = (x * 2^21 + b) %% M, M = 2^31 - 1:",
    "sample.int(num_users, m, TRUE) - 1 (pair_with 'random') then sample.int(num_items, m,",
    "TRUE) - 1 or, weighted, findInterval(runif(m) * sum, cumsum(item_weights)), redrawing",
    "the rejected slots in slot order."),
  cases = cases
)

jsonlite::write_json(vectors, output, auto_unbox = TRUE, pretty = TRUE, digits = NA,
  null = "null", na = "null")
cat("wrote", output, "with", length(cases), "cases\n")
