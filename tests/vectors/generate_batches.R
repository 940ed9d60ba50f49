# Golden batch vectors, shared by the R and Python test suites.
#
# Regenerate from the repository root, after installing the R package:
#   R CMD INSTALL r && Rscript tests/vectors/generate_batches.R
# which rewrites tests/vectors/batches.json. The expected batches are what
# pystratum::stratified_batches() returns (1-based row positions); the
# Python suite compares pystratum.stratified_batches(..., rng="R") + 1 with
# them, the R suite (r/tests/testthat/test_vectors.R) re-runs every case.

if (!requireNamespace("jsonlite", quietly = TRUE)) {
  stop("generate_batches.R needs the jsonlite package: install.packages(\"jsonlite\")")
}
library(pystratum)

output = file.path("tests", "vectors", "batches.json")
if (!dir.exists(dirname(output))) {
  stop("Run this script from the repository root: Rscript tests/vectors/generate_batches.R")
}

# --- strata as JSON columns and back -------------------------------------------------------

column_spec = function(name, x) {
  if (is.factor(x)) {
    return(list(name = name, type = "factor", values = I(as.character(x)), levels = I(levels(x))))
  }
  type = switch(typeof(x), integer = "integer", double = "double", character = "character",
    logical = "logical", stop("unsupported column type ", typeof(x)))
  list(name = name, type = type, values = I(x))
}

strata_spec = function(strata) {
  if (is.data.frame(strata)) {
    columns = Map(column_spec, names(strata), strata)
  } else {
    columns = list(column_spec("strata", strata))
  }
  list(columns = unname(columns))
}

# The inverse of strata_spec() on the parsed JSON; test_vectors.R has the same.
strata_from_spec = function(spec) {
  columns = lapply(spec$columns, function(column) {
    values = lapply(column$values, function(v) if (is.null(v)) NA else v)
    values = unlist(values)
    switch(column$type,
      integer = as.integer(values),
      double = as.double(values),
      character = as.character(values),
      logical = as.logical(values),
      factor = factor(as.character(values), levels = unlist(column$levels))
    )
  })
  names(columns) = vapply(spec$columns, function(column) column$name, "")
  if (length(columns) == 1L) columns[[1L]] else as.data.frame(columns, stringsAsFactors = FALSE)
}

# --- running a case ------------------------------------------------------------------------

# `policy`: a number (shorthand for policy_min_per_stratum, stored as such so
# bad numbers are stored as given) or list(name = , params = list(...)).
run_case = function(id, comment, strata, policy, seed = NULL, epoch = 0L,
  shuffle = TRUE, rng = "R", allow_single_batch = FALSE) {
  if (!is.list(policy)) {
    policy = list(name = "min_per_stratum", params = list(m = policy))
  }
  spec = strata_spec(strata)
  # Run on the round-tripped input, so the file reproduces what is stored.
  parsed = jsonlite::fromJSON(jsonlite::toJSON(spec, auto_unbox = TRUE, digits = NA,
    na = "null"), simplifyVector = FALSE)
  input_strata = strata_from_spec(parsed)
  warned = FALSE
  result = tryCatch(
    withCallingHandlers(
      stratified_batches(input_strata,
        pystratum:::policy_from_params(policy$name, policy$params), seed = seed, rng = rng,
        epoch = epoch, shuffle = shuffle, allow_single_batch = allow_single_batch),
      pystratum_stratum_too_small = function(w) {
        warned <<- TRUE
        invokeRestart("muffleWarning")
      }
    ),
    pystratum_error = function(e) e
  )
  case = list(
    id = id,
    comment = comment,
    input = list(
      strata = spec,
      policy = policy,
      seed = seed,
      rng = rng,
      epoch = epoch,
      shuffle = shuffle,
      allow_single_batch = allow_single_batch
    )
  )
  if (inherits(result, "pystratum_error")) {
    kind = sub("^pystratum_", "", class(result)[[1L]])
    case$expected_error = list(class = kind, argument = result$argument)
  } else {
    case$expected = list(batches = lapply(unclass(result), I))
    if (!is.null(attr(result, "weights"))) {
      case$expected$weights = lapply(attr(result, "weights"), I)
    }
    if (warned) case$warning = "stratum_too_small"
  }
  case
}

# --- the cases -----------------------------------------------------------------------------

blog = rep(c("M", "R"), c(111L, 12L))
defect = rep(c("minority", "majority"), c(3L, 187L))
small = rep(c("pos", "neg"), c(7L, 20L))
three = rep(c(1L, 0L, 2L), c(7L, 60L, 20L))
interleaved = c("b", "a", "c", "a", "b", "a", "c", "a", "a", "b", "a", "a", "c", "b", "a")
mixed = data.frame(
  y = rep(c("yes", "no"), length.out = 40L),
  site = rep(c(1L, 2L, 2L, 3L), each = 10L),
  stringsAsFactors = FALSE
)
ten = rep(sprintf("class_%02d", 1:10), c(5L, 9L, 12L, 30L, 7L, 5L, 11L, 40L, 6L, 25L))
set.seed(20250906)
shuffled_ten = sample(ten)
# Seven classes for the P x K cases, interleaved (first appearance differs from label order).
# Three 0/1 indicator columns: 20 rows cycling through (0,0,1), (0,1,0), (1,0,0), (1,1,0),
# (0,1,1) four times each, then one row (1, 1, 1).
indicators = data.frame(
  a = c(rep(c(0L, 0L, 1L, 1L, 0L), 4L), 1L),
  b = c(rep(c(0L, 1L, 0L, 1L, 1L), 4L), 1L),
  c = c(rep(c(1L, 0L, 0L, 0L, 1L), 4L), 1L)
)
pk_classes = rep(sprintf("id_%d", c(7L, 3L, 5L, 1L, 6L, 2L, 4L)),
  c(9L, 4L, 13L, 7L, 22L, 5L, 16L))[c(seq(1L, 76L, by = 3L), seq(2L, 76L, by = 3L),
  seq(3L, 76L, by = 3L))]
# ClassesPerBatch(3, 4, classes = "uniform"), with num_batches when given.
pk_uniform = function(num_batches = NULL) {
  list(name = "classes_per_batch", params = c(list(classes_per_batch = 3L, per_class = 4L,
    classes = "uniform", small = "error"), if (!is.null(num_batches)) list(
      num_batches = num_batches)))
}

cases = list(
  run_case("blog_no_shuffle_m1",
    "Blog example: 111 rows of class M then 12 of class R, m = 1, row order. First batch is rows 1:9 and 112.",
    blog, 1L, shuffle = FALSE),
  run_case("blog_no_shuffle_m2", "Blog example with m = 2: 6 batches.", blog, 2L, shuffle = FALSE),
  run_case("blog_seed_1_m1", "Blog example shuffled with set.seed(1).", blog, 1L, seed = 1L),
  run_case("blog_seed_2025_m3", "Blog example, m = 3, seed 2025.", blog, 3L, seed = 2025L),
  run_case("float_defect_no_shuffle",
    "3 minority rows then 187 majority rows, m = 1: exactly 3 batches, each with one minority row (the float formula gives a 4th batch).",
    defect, 1L, shuffle = FALSE),
  run_case("float_defect_seed_7", "The float-defect strata shuffled: still 3 batches.", defect, 1L,
    seed = 7L),
  run_case("float_defect_reversed", "187 majority rows then 3 minority rows, m = 1, row order.",
    rev(defect), 1L, shuffle = FALSE),
  run_case("seed_0", "Seed 0.", small, 2L, seed = 0L),
  run_case("seed_1", "Seed 1.", small, 2L, seed = 1L),
  run_case("seed_42", "Seed 42.", small, 2L, seed = 42L),
  run_case("seed_minus_1", "Negative seed -1.", small, 2L, seed = -1L),
  run_case("seed_minus_123456789", "Negative seed -123456789.", small, 2L, seed = -123456789L),
  run_case("seed_int_max", "Largest seed set.seed() takes: 2147483647.", small, 2L,
    seed = 2147483647L),
  run_case("seed_minus_int_max", "Smallest seed set.seed() takes: -2147483647.", small, 2L,
    seed = -2147483647L),
  run_case("seed_123456_m1", "Seed 123456, m = 1 (7 batches).", small, 1L, seed = 123456L),
  run_case("epoch_0", "Three strata (7, 60, 20 rows), seed 2024, epoch 0: first sample(87).",
    three, 2L, seed = 2024L, epoch = 0L),
  run_case("epoch_1", "Same, epoch 1: the 2nd sample(87) after set.seed(2024).", three, 2L,
    seed = 2024L, epoch = 1L),
  run_case("epoch_2", "Same, epoch 2: the 3rd sample(87).", three, 2L, seed = 2024L, epoch = 2L),
  run_case("epoch_3", "Same, epoch 3: the 4th sample(87).", three, 2L, seed = 2024L, epoch = 3L),
  run_case("epoch_3_no_shuffle", "epoch = 3 with shuffle = FALSE: an error, the epoch would have no effect.",
    three, 2L, epoch = 3L, shuffle = FALSE),
  run_case("interleaved_no_shuffle",
    "Interleaved strata, row order: ranks count appearances, batches keep row order.",
    interleaved, 1L, shuffle = FALSE),
  run_case("interleaved_seed_99", "Interleaved strata, seed 99.", interleaved, 1L, seed = 99L),
  run_case("multi_column_no_shuffle",
    "Two columns (y, site): every combination that occurs is a stratum (6 strata).",
    mixed, 1L, shuffle = FALSE),
  run_case("multi_column_seed_5", "Two columns, seed 5, m = 2.", mixed, 2L, seed = 5L),
  run_case("multi_column_logical_factor",
    "A logical and a factor column with an unused level.",
    data.frame(
      flag = rep(c(TRUE, FALSE, FALSE), length.out = 30L),
      colour = factor(rep(c("red", "blue"), each = 15L), levels = c("red", "green", "blue"))
    ), 2L, seed = 11L),
  run_case("factor_unused_levels",
    "Factor with levels z, unused, y, x: unused levels are not strata.",
    factor(rep(c("x", "y", "z"), c(4L, 6L, 8L))[c(18:1)], levels = c("z", "unused", "y", "x")),
    2L, seed = 3L),
  run_case("logical", "Logical strata.", rep(c(FALSE, TRUE, FALSE), c(10L, 4L, 11L)), 2L,
    seed = 8L),
  run_case("integer_negative", "Integer labels including negatives.",
    rep(c(-5L, 0L, 17L), c(6L, 9L, 12L)), 3L, seed = 13L),
  run_case("double_labels", "Double labels with fractions.",
    rep(c(0.5, -3.75, 1.25), c(5L, 10L, 8L)), 2L, seed = 21L),
  run_case("double_large_whole", "Large whole-number double labels (sorted, not tabled).",
    rep(c(1e15, -1e15, 3), c(4L, 4L, 4L)), 2L, seed = 1L),
  run_case("unicode_labels", "Non-ASCII string labels.",
    rep(c("\u00e9t\u00e9", "hiver", "\u00fc"), c(6L, 6L, 3L)), 1L, seed = 4L),
  run_case("single_stratum", "One stratum of 10 rows, m = 3: 3 batches of 3, 3, 4 rows.",
    rep("only", 10L), 3L, seed = 6L),
  run_case("uneven_counts", "Smallest stratum 10, m = 3: 3 batches; per-batch counts differ by at most 1.",
    rep(c("a", "b"), c(10L, 23L)), 3L, seed = 17L),
  run_case("ten_strata_seed_99", "Ten strata of 5 to 40 rows in shuffled order, m = 1.",
    shuffled_ten, 1L, seed = 99L),
  run_case("ten_strata_no_shuffle", "Ten strata, row order, m = 2.", shuffled_ten, 2L,
    shuffle = FALSE),
  # A plan of one batch is an error naming the policy (or the strata, for 0/1 indicator
  # columns) unless allow_single_batch = TRUE.
  run_case("error_single_batch_n_1", "A single row: one batch, refused (argument policy).",
    "a", 1L, seed = 7L),
  run_case("n_1", "A single row, allow_single_batch = TRUE: one batch.", "a", 1L, seed = 7L,
    allow_single_batch = TRUE),
  run_case("n_1_no_shuffle", "A single row, row order, allowed.", 5L, 1L, shuffle = FALSE,
    allow_single_batch = TRUE),
  run_case("error_single_batch_n_2_one_each", "Two rows of two strata: one batch, refused.",
    c("a", "b"), 1L, seed = 2L),
  run_case("n_2_one_each", "Two rows of two strata, allowed: one batch.", c("a", "b"), 1L,
    seed = 2L, allow_single_batch = TRUE),
  run_case("error_single_batch_stratum_too_small",
    "Smallest stratum (3 rows) below m = 5: one batch, refused (no warning then).",
    rep(c("M", "R"), c(10L, 3L)), 5L, seed = 3L),
  run_case("stratum_too_small_warning",
    "Smallest stratum (3 rows) below m = 5, allowed: one batch with every row, and a warning.",
    rep(c("M", "R"), c(10L, 3L)), 5L, seed = 3L, allow_single_batch = TRUE),
  run_case("stratum_too_small_no_shuffle", "Smallest stratum below m, row order, allowed.",
    rep(c("M", "R"), c(10L, 3L)), 4L, shuffle = FALSE, allow_single_batch = TRUE),
  run_case("error_single_batch_one_row_stratum",
    "50, 30 and 1 rows, m = 1: N_min %/% m = 1 batch (no warning today), refused.",
    rep(c(0L, 1L, 2L), c(50L, 30L, 1L)), 1L, seed = 11L),
  run_case("error_single_batch_row_order", "The same, row order: refused too.",
    rep(c(0L, 1L, 2L), c(50L, 30L, 1L)), 1L, shuffle = FALSE),
  run_case("single_batch_allowed", "The same, allowed: one batch of 81 rows.",
    rep(c(0L, 1L, 2L), c(50L, 30L, 1L)), 1L, seed = 11L, allow_single_batch = TRUE),
  run_case("error_single_batch_indicator_columns",
    "Three 0/1 columns (multi-label indicators) whose combination (1, 1, 1) has one row: refused naming strata.",
    indicators, 1L, seed = 5L),
  run_case("error_single_batch_logical_columns", "The same columns as logicals: refused naming strata.",
    as.data.frame(lapply(indicators, as.logical)), 1L, seed = 5L),
  run_case("indicator_columns_allowed", "The same 0/1 columns, allowed: one batch.",
    indicators, 1L, seed = 5L, allow_single_batch = TRUE),
  run_case("error_single_batch_columns_not_indicators",
    "Two columns that are not 0/1 with a one-row combination: refused naming policy.",
    data.frame(y = c(rep(c("a", "b"), 10L), "a"), site = c(rep(1:2, each = 10L), 3L),
      stringsAsFactors = FALSE), 1L, seed = 5L),
  run_case("indicator_columns_two_batches",
    "The 0/1 columns without the one-row combination (smallest has 4 rows): 4 batches, no error.",
    indicators[-21L, ], 1L, seed = 5L),
  # Fixed batch sizes (policy_fixed_size / FixedSize), sizes = "balanced": round(N / batch_size)
  # batches of floor/ceiling size (the default before exact sizes; these cases keep their batches).
  run_case("fixed_size_blog_32", "Blog strata (111 M, 12 R), batch_size 32: 4 batches of 30-31 rows.",
    blog, list(name = "fixed_size", params = list(batch_size = 32L, min_per_stratum = 1L, sizes = "balanced")),
    seed = 1L),
  run_case("fixed_size_epoch_2", "Three strata (87 rows), batch_size 15 (6 batches), epoch 2: the extras rotate.",
    three, list(name = "fixed_size", params = list(batch_size = 15L, min_per_stratum = 1L, sizes = "balanced")),
    seed = 2024L, epoch = 2L),
  run_case("fixed_size_no_shuffle", "Ten strata, batch_size 50, min 1, row order.", shuffled_ten,
    list(name = "fixed_size", params = list(batch_size = 50L, min_per_stratum = 1L, sizes = "balanced")),
    shuffle = FALSE),
  run_case("fixed_size_multi_column", "Two columns, batch_size 8, min 1, seed 5.", mixed,
    list(name = "fixed_size", params = list(batch_size = 8L, min_per_stratum = 1L, sizes = "balanced")), seed = 5L),
  run_case("fixed_size_min_2", "Blog strata, batch_size 40, min_per_stratum 2, seed 9.", blog,
    list(name = "fixed_size", params = list(batch_size = 40L, min_per_stratum = 2L, sizes = "balanced")), seed = 9L),
  run_case("fixed_size_one_batch", "batch_size above the row count, allowed: one batch of every row.",
    small, list(name = "fixed_size", params = list(batch_size = 1000L, min_per_stratum = 1L, sizes = "balanced")),
    seed = 3L, allow_single_batch = TRUE),
  run_case("error_single_batch_fixed_size", "batch_size above the row count: one batch, refused.",
    small, list(name = "fixed_size", params = list(batch_size = 1000L, min_per_stratum = 1L, sizes = "balanced")),
    seed = 3L),
  run_case("error_fixed_size_infeasible",
    "batch_size 5 on 123 rows gives 25 batches, but stratum R has 12 rows: an error naming batch_size.",
    blog, list(name = "fixed_size", params = list(batch_size = 5L, min_per_stratum = 1L, sizes = "balanced")),
    seed = 1L),
  run_case("error_fixed_size_zero", "batch_size = 0.", small,
    list(name = "fixed_size", params = list(batch_size = 0L, min_per_stratum = 1L, sizes = "balanced")), seed = 1L),
  run_case("error_fixed_size_min_fraction", "min_per_stratum = 1.5.", small,
    list(name = "fixed_size", params = list(batch_size = 5L, min_per_stratum = 1.5, sizes = "balanced")), seed = 1L),
  # Exact sizes (the default): batches of batch_size rows but a shorter last one.
  run_case("fixed_size_exact_blog_32", "Blog strata (111 M, 12 R), batch_size 32: 3 batches of 32 and one of 27.",
    blog, list(name = "fixed_size", params = list(batch_size = 32L, min_per_stratum = 1L,
      sizes = "exact")), seed = 1L),
  run_case("fixed_size_exact_epoch_2", "Three strata (87 rows), batch_size 15, epoch 2: 5 batches of 15, one of 12.",
    three, list(name = "fixed_size", params = list(batch_size = 15L, min_per_stratum = 1L,
      sizes = "exact")), seed = 2024L, epoch = 2L),
  run_case("fixed_size_exact_divides", "27 rows, batch_size 9: three full batches, none short.",
    small, list(name = "fixed_size", params = list(batch_size = 9L, min_per_stratum = 1L,
      sizes = "exact")), seed = 4L, epoch = 1L),
  run_case("fixed_size_exact_no_shuffle", "Ten strata, batch_size 40, row order.", shuffled_ten,
    list(name = "fixed_size", params = list(batch_size = 40L, min_per_stratum = 1L,
      sizes = "exact")), shuffle = FALSE),
  run_case("fixed_size_exact_multi_column", "Two columns, batch_size 12 (3 of 12, one of 4), seed 5.",
    mixed, list(name = "fixed_size", params = list(batch_size = 12L, min_per_stratum = 1L,
      sizes = "exact")), seed = 5L),
  run_case("fixed_size_exact_min_2", "Blog strata, batch_size 40, min_per_stratum 2, seed 9.", blog,
    list(name = "fixed_size", params = list(batch_size = 40L, min_per_stratum = 2L,
      sizes = "exact")), seed = 9L),
  run_case("fixed_size_exact_one_batch", "batch_size above the row count, allowed: one (short) batch of every row.",
    small, list(name = "fixed_size", params = list(batch_size = 1000L, min_per_stratum = 1L,
      sizes = "exact")), seed = 3L, allow_single_batch = TRUE),
  run_case("error_single_batch_fixed_size_exact", "batch_size above the row count: one (short) batch, refused.",
    small, list(name = "fixed_size", params = list(batch_size = 1000L, min_per_stratum = 1L,
      sizes = "exact")), seed = 3L),
  run_case("error_fixed_size_exact_infeasible",
    "batch_size 5 on 123 rows gives 24 full batches, but stratum R has 12 rows: an error naming batch_size.",
    blog, list(name = "fixed_size", params = list(batch_size = 5L, min_per_stratum = 1L,
      sizes = "exact")), seed = 1L),
  run_case("error_fixed_size_exact_min_per_stratum",
    "min_per_stratum 13 above stratum R's 12 rows: an error naming min_per_stratum.",
    blog, list(name = "fixed_size", params = list(batch_size = 40L, min_per_stratum = 13L,
      sizes = "exact")), seed = 1L),
  # Formerly refused: rounding the last batch's shares in order of appearance gave a
  # stratum's only spare row to the last batch; now another stratum's ceiling takes it.
  run_case("fixed_size_exact_rounding_moved",
    "Strata x, y, y, z, batch_size 3: one full batch of x, y, z and a last batch of y.",
    c("x", "y", "y", "z"), list(name = "fixed_size", params = list(batch_size = 3L,
      min_per_stratum = 1L, sizes = "exact")), seed = 1L),
  run_case("fixed_size_exact_rounding_moved_min_4",
    "Strata of 5, 23, 5, 44 rows, batch_size 50, min_per_stratum 4: a full batch of 4/14/4/28.",
    rep(c("p", "q", "r", "s"), c(5L, 23L, 5L, 44L)), list(name = "fixed_size",
      params = list(batch_size = 50L, min_per_stratum = 4L, sizes = "exact")), seed = 6L),
  run_case("error_fixed_size_sizes", "sizes = \"nearest\" (not exact or balanced).", small,
    list(name = "fixed_size", params = list(batch_size = 5L, min_per_stratum = 1L,
      sizes = "nearest")), seed = 1L),
  # Sampling policies (policy_targets / Targets, policy_downsample / Downsample).
  run_case("targets_balanced_recycled", "Blog strata, balanced batches of 8: R recycled, fresh passes.",
    blog, list(name = "targets", params = list(shares = "balanced", batch_size = 8L,
      epoch = "largest")), seed = 11L, epoch = 1L),
  run_case("targets_shares_rotating", "Three strata, shares 0.5/0.3/0.2, batch_size 7: rotating extras.",
    three, list(name = "targets", params = list(shares = list(`1` = 0.5, `0` = 0.3, `2` = 0.2),
      batch_size = 7L, epoch = "largest")), seed = 4L, epoch = 3L),
  run_case("targets_smallest", "Blog strata, 1:1 shares, batch_size 4, epoch 'smallest': M undersampled.",
    blog, list(name = "targets", params = list(shares = list(M = 0.5, R = 0.5), batch_size = 4L,
      epoch = "smallest")), seed = 8L),
  run_case("targets_fixed_epoch_no_shuffle", "Three strata, balanced, 5 batches of 6, row order.",
    three, list(name = "targets", params = list(shares = "balanced", batch_size = 6L,
      epoch = 5L)), shuffle = FALSE),
  run_case("downsample_fixed_size", "Blog strata, keep 25% of M, batches of about 10; weights 111/28.",
    blog, list(name = "downsample", params = list(keep = list(M = 0.25),
      base = list(name = "fixed_size", params = list(batch_size = 10L, min_per_stratum = 1L,
        sizes = "balanced")))),
    seed = 3L, epoch = 2L),
  run_case("downsample_targets", "Three strata, keep 10% of 0, balanced batches of 6 (kept rows recycled).",
    three, list(name = "downsample", params = list(keep = list(`0` = 0.1),
      base = list(name = "targets", params = list(shares = "balanced", batch_size = 6L,
        epoch = "largest")))), seed = 6L, epoch = 1L),
  run_case("error_targets_shares_sum", "Shares adding up to 0.9.", blog,
    list(name = "targets", params = list(shares = list(M = 0.5, R = 0.4), batch_size = 4L,
      epoch = "largest")), seed = 1L),
  run_case("error_targets_unknown_stratum", "Shares naming a stratum not in the data.", blog,
    list(name = "targets", params = list(shares = list(M = 0.5, X = 0.5), batch_size = 4L,
      epoch = "largest")), seed = 1L),
  run_case("error_downsample_keep_zero", "keep = 0.", blog,
    list(name = "downsample", params = list(keep = list(M = 0),
      base = list(name = "min_per_stratum", params = list(m = 1L)))), seed = 1L),
  run_case("n_1000_epoch_1", "1000 rows, three strata (100, 300, 600), m = 5, seed 2025, epoch 1.",
    rep(c("low", "mid", "high"), c(100L, 300L, 600L))[c(seq(1L, 1000L, by = 2L), seq(2L, 1000L, by = 2L))],
    5L, seed = 2025L, epoch = 1L),
  # Errors: each case has exactly one problem.
  run_case("error_m_0", "min_samples_per_stratum = 0.", small, 0L),
  run_case("error_m_negative", "min_samples_per_stratum = -3.", small, -3L),
  run_case("error_m_fraction", "min_samples_per_stratum = 2.5 (not a whole number).", small, 2.5),
  run_case("error_m_logical", "min_samples_per_stratum = TRUE (a logical, not a number).", small,
    TRUE),
  run_case("error_m_string", "min_samples_per_stratum = \"2\".", small, "2"),
  run_case("error_na_character", "A missing label in a character column.",
    c("a", "b", NA, "a"), 1L),
  run_case("error_na_double", "NaN in a double column.", c(1, 2, NaN, 1), 1L),
  run_case("error_na_second_column", "A missing value in the second of two columns.",
    data.frame(y = c(1L, 2L, 3L), g = c("a", "b", NA), stringsAsFactors = FALSE), 1L),
  run_case("error_empty", "No rows.", character(0), 1L),
  run_case("error_rng", "rng = \"foo\".", small, 1L, rng = "foo"),
  run_case("error_epoch_negative", "epoch = -1.", small, 1L, seed = 1L, epoch = -1L),
  run_case("error_epoch_fraction", "epoch = 1.5.", small, 1L, seed = 1L, epoch = 1.5),
  run_case("error_seed_without_shuffle", "A seed with shuffle = FALSE has no effect: an error.",
    small, 1L, seed = 3L, shuffle = FALSE),
  run_case("error_seed_fraction", "seed = 1.5.", small, 1L, seed = 1.5),
  run_case("error_seed_logical", "seed = TRUE.", small, 1L, seed = TRUE),
  run_case("error_seed_out_of_range", "seed = 3000000000, beyond what set.seed() takes.", small,
    1L, seed = 3e9),
  run_case("error_shuffle_number", "shuffle = 1 (a number, not TRUE/FALSE).", small, 1L,
    shuffle = 1L),
  # P classes x K rows (policy_classes_per_batch / ClassesPerBatch).
  run_case("classes_per_batch_refills",
    "Seven classes (9, 4, 13, 7, 22, 5, 16 rows), 3 classes x 4 rows: partial slots refilled, B = 8.",
    pk_classes, list(name = "classes_per_batch", params = list(classes_per_batch = 3L,
      per_class = 4L, classes = "proportional", small = "error")), seed = 7L, epoch = 1L),
  run_case("classes_per_batch_extras",
    "Same classes, 4 x 3 rows: extra slots by water-filling, epoch 2.",
    pk_classes, list(name = "classes_per_batch", params = list(classes_per_batch = 4L,
      per_class = 3L, classes = "proportional", small = "error")), seed = 2026L, epoch = 2L),
  run_case("classes_per_batch_repeat", "Same classes, 2 x 6 rows, small = 'repeat' (4 and 5 rows repeat).",
    pk_classes, list(name = "classes_per_batch", params = list(classes_per_batch = 2L,
      per_class = 6L, classes = "proportional", small = "repeat")), seed = 3L),
  run_case("classes_per_batch_no_shuffle", "Same classes, 3 x 4 rows, row order.",
    pk_classes, list(name = "classes_per_batch", params = list(classes_per_batch = 3L,
      per_class = 4L, classes = "proportional", small = "error")), shuffle = FALSE),
  run_case("classes_per_batch_index", "Same classes, 3 x 4 rows, rng = 'index' (keyed draws), epoch 1.",
    pk_classes, list(name = "classes_per_batch", params = list(classes_per_batch = 3L,
      per_class = 4L, classes = "proportional", small = "error")), seed = 12L, epoch = 1L,
    rng = "index"),
  run_case("classes_per_batch_uniform_epoch_0",
    "Same classes, 3 x 4 rows, classes = 'uniform': B = 7, passes continue across epochs (epoch 0 of 0-2).",
    pk_classes, pk_uniform(), seed = 7L, epoch = 0L),
  run_case("classes_per_batch_uniform_epoch_1",
    "Same classes, 3 x 4 rows, classes = 'uniform': B = 7, passes continue across epochs (epoch 1 of 0-2).",
    pk_classes, pk_uniform(), seed = 7L, epoch = 1L),
  run_case("classes_per_batch_uniform_epoch_2",
    "Same classes, 3 x 4 rows, classes = 'uniform': B = 7, passes continue across epochs (epoch 2 of 0-2).",
    pk_classes, pk_uniform(), seed = 7L, epoch = 2L),
  run_case("classes_per_batch_uniform_index_epoch_1",
    "Same classes, 3 x 4 rows, classes = 'uniform', rng = 'index' (epoch 1 of 1-2).",
    pk_classes, pk_uniform(), seed = 12L, epoch = 1L, rng = "index"),
  run_case("classes_per_batch_uniform_index_epoch_2",
    "Same classes, 3 x 4 rows, classes = 'uniform', rng = 'index' (epoch 2 of 1-2).",
    pk_classes, pk_uniform(), seed = 12L, epoch = 2L, rng = "index"),
  run_case("classes_per_batch_uniform_length",
    "Same classes, 3 x 4 rows, classes = 'uniform', num_batches = 11 (longer than one pass), epoch 3.",
    pk_classes, pk_uniform(11L), seed = 5L, epoch = 3L),
  run_case("classes_per_batch_uniform_no_shuffle", "Same classes, 3 x 4 rows, classes = 'uniform', row order.",
    pk_classes, pk_uniform(), shuffle = FALSE),
  run_case("error_classes_per_batch_num_batches", "num_batches with classes = 'proportional': an error naming num_batches.",
    pk_classes, list(name = "classes_per_batch", params = list(classes_per_batch = 3L,
      per_class = 4L, classes = "proportional", small = "error", num_batches = 5L)), seed = 1L),
  run_case("error_classes_per_batch_small", "per_class = 6 with classes of 4 and 5 rows: an error naming per_class.",
    pk_classes, list(name = "classes_per_batch", params = list(classes_per_batch = 2L,
      per_class = 6L, classes = "proportional", small = "error")), seed = 1L),
  run_case("error_classes_per_batch_infeasible", "8 classes per batch of 7 classes: an error naming classes_per_batch.",
    pk_classes, list(name = "classes_per_batch", params = list(classes_per_batch = 8L,
      per_class = 2L, classes = "proportional", small = "error")), seed = 1L)
)

ids = vapply(cases, function(case) case$id, "")
stopifnot(!anyDuplicated(ids))

vectors = list(
  description = paste(
    "Golden batches of the batch policies (input$policy: name and params, as recorded by",
    "pystratum.policies / policy_from_params; min_per_stratum: every batch holds at least m",
    "rows of every stratum; fixed_size: batches of batch_size rows but a shorter last one",
    "(sizes 'exact') or of about batch_size rows (sizes 'balanced')). Each case gives the",
    "input and either the",
    "expected batches (1-based row positions, batches in order, rows in permuted order inside",
    "a batch) or the expected error (pystratum_<class> in R, TypeError/ValueError in Python)",
    "and the argument it names. 'warning': 'stratum_too_small' marks cases that warn.",
    "input$allow_single_batch false: a plan of one batch is the expected error (argument",
    "'policy', or 'strata' for several 0/1 columns)."
  ),
  generator = sprintf("pystratum (R package) %s, tests/vectors/generate_batches.R",
    as.character(utils::packageVersion("pystratum"))),
  r_version = R.version.string,
  regenerate = "R CMD INSTALL r && Rscript tests/vectors/generate_batches.R  (from the repository root)",
  index_base = 1L,
  rng = paste(
    "'R': the permutation of epoch k is the (k+1)-th sample(N) after",
    "set.seed(seed, kind = 'Mersenne-Twister', normal.kind = 'Inversion', sample.kind = 'Rejection'),",
    "i.e. R >= 3.6 defaults. shuffle = false means row order. Every case uses rng 'R';",
    "cases without a seed use shuffle = false."
  ),
  cases = cases
)

json = jsonlite::toJSON(vectors, auto_unbox = TRUE, digits = NA, na = "null", null = "null",
  pretty = TRUE)
writeLines(json, output, useBytes = TRUE)
cat(sprintf("Wrote %d cases to %s (%d bytes).\n", length(cases), output, file.size(output)))
