# Golden vectors of the shard-blocked order (docs/SHARDS.md), shared by the R
# and Python test suites.
#
# Regenerate from the repository root, after installing the R package:
#   R CMD INSTALL r && Rscript tests/vectors/generate_shards.R
# which rewrites tests/vectors/shards.json. The expected batches are what
# pystratum::stratified_batches(..., shards = , window = ) returns (1-based
# row positions); the Python suite (tests/engine/test_vectors_shards.py)
# compares pystratum.plan_batches(..., rng="R", shards=, window=) + 1 with
# them, the R suite (r/tests/testthat/test_shards.R) re-runs every case.

if (!requireNamespace("jsonlite", quietly = TRUE)) {
  stop("generate_shards.R needs the jsonlite package: install.packages(\"jsonlite\")")
}
suppressPackageStartupMessages(library(pystratum))

output = file.path("tests", "vectors", "shards.json")
if (!dir.exists(dirname(output))) {
  stop("Run this script from the repository root: Rscript tests/vectors/generate_shards.R")
}

# A vector as a typed JSON column (as batches.json stores strata columns), so
# that both languages rebuild the value exactly, wrong types included.
column_spec = function(x) {
  type = switch(typeof(x), integer = "integer", double = "double", character = "character",
    logical = "logical", stop("unsupported column type ", typeof(x)))
  list(type = type, values = I(x))
}

# The inverse of column_spec() on the parsed JSON (test_shards.R has the same).
column_from_spec = function(spec) {
  values = unlist(lapply(spec$values, function(v) if (is.null(v)) NA else v))
  if (is.null(values)) values = logical(0)
  switch(spec$type, integer = as.integer(values), double = as.double(values),
    character = as.character(values), logical = as.logical(values))
}

# shards as stored: list(ids = column), list(sizes = column) or NULL (none).
shards_from_spec = function(spec) {
  if (is.null(spec)) return(NULL)
  if (!is.null(spec$sizes)) shard_sizes(column_from_spec(spec$sizes)) else
    column_from_spec(spec$ids)
}

# What JSON stores for `x`: R's own special values as jsonlite writes them.
round_trip = function(x) {
  jsonlite::fromJSON(jsonlite::toJSON(x, auto_unbox = TRUE, digits = NA, na = "string"),
    simplifyVector = FALSE)
}

# A case: `strata` a character vector (one stratum column) or, for
# policy_multi_label(), a 0/1 label matrix; `shards` list(ids = ) or
# list(sizes = ) of a vector; `policy` a policy object.
run_case = function(id, comment, strata, policy, shards, window = 1, seed = NULL, epoch = 0L,
  shuffle = TRUE, rng = "R") {
  shards_spec = if (!is.null(shards)) round_trip(lapply(shards, column_spec))
  input = list()
  if (is.matrix(strata)) {
    input$labels = lapply(seq_len(nrow(strata)), function(i) I(unname(strata[i, ])))
  } else {
    input$strata = list(columns = list(c(list(name = "strata"), column_spec(strata))))
  }
  input = c(input, list(policy = list(name = policy$name, params = policy$params),
    shards = shards_spec, window = window, seed = seed, rng = rng, epoch = epoch,
    shuffle = shuffle))
  # Run on what the file stores, so the file reproduces what is stored.
  result = tryCatch(
    stratified_batches(strata, policy, seed = seed, rng = rng, epoch = epoch, shuffle = shuffle,
      shards = shards_from_spec(shards_spec), window = window),
    pystratum_error = function(e) e)
  if (inherits(result, "pystratum_error")) {
    return(list(id = id, comment = comment, input = input, expected_error = list(
      class = sub("^pystratum_", "", class(result)[[1L]]), argument = result$argument)))
  }
  expected = list(batches = lapply(unclass(result), function(b) I(as.integer(b))))
  if (!is.null(attr(result, "weights"))) {
    expected$weights = lapply(attr(result, "weights"), I)
  }
  list(id = id, comment = comment, input = input, expected = expected)
}

# shard_sizes() itself refuses bad sizes before stratified_batches() runs:
# the case's error is that refusal (the generator passes it through).
run_sizes_error = function(id, comment, strata, sizes) {
  error = tryCatch(shard_sizes(sizes), pystratum_error = function(e) e)
  stopifnot(inherits(error, "pystratum_error"))
  list(id = id, comment = comment, input = list(
    strata = list(columns = list(c(list(name = "strata"), column_spec(strata)))),
    policy = list(name = "min_per_stratum", params = list(m = 1L)),
    shards = round_trip(list(sizes = column_spec(sizes))), window = 1, seed = 1L, rng = "R",
    epoch = 0L, shuffle = TRUE),
    expected_error = list(class = sub("^pystratum_", "", class(error)[[1L]]),
      argument = error$argument))
}

# --- data ---------------------------------------------------------------------------------

# 60 rows of three strata (9, 21, 30 rows) interleaved; "b" appears first.
set.seed(20261129)
strata = sample(rep(c("b", "c", "a"), c(21L, 30L, 9L)))
strata = c("b", "a", "c", strata[-match(c("b", "a", "c"), strata)])
# Ids per row, not contiguous and not in storage order: 8 shards.
shard_ids = sample(c(40L, 7L, 13L, 2L, 99L, 58L, 21L, 5L), 60L, replace = TRUE)
# Rows stored shard after shard: 10 shards, two of them empty.
sizes = c(8L, 0L, 7L, 9L, 6L, 0L, 8L, 7L, 8L, 7L)
# A 0/1 label matrix of 60 rows and three labels (prevalences about 0.15, 0.4, 0.6).
labels = cbind(rare = as.integer(seq_len(60) %% 7L == 0L),
  mid = as.integer(seq_len(60) %% 5L < 2L), common = as.integer(seq_len(60) %% 5L >= 2L))

families = list(
  min_per_stratum = policy_min_per_stratum(2),
  fixed_size = policy_fixed_size(12),
  targets = policy_targets(c(a = 0.4, b = 0.3, c = 0.3), 10),
  downsample = policy_downsample(c(c = 0.5), policy_min_per_stratum(2)),
  classes_per_batch = policy_classes_per_batch(2, 4),
  multi_label = policy_multi_label(num_batches = 4)
)
family_notes = c(
  min_per_stratum = "rank cuts: the permutation of the rows sorted by block",
  fixed_size = "rank cuts: the permutation of the rows sorted by block",
  targets = "sampling, a recycled: pass 0 by its rows, every extra pass by the pool rows",
  downsample = "sampling with a pool: each stratum's partial draw sorted by block, weights kept",
  classes_per_batch = "slots: the permutation and every refill sorted, the layout left alone",
  multi_label = "labels: the permutation of the rows sorted, the batches' draw left alone"
)

cases = list()
add = function(case) cases[[length(cases) + 1L]] <<- case
for (family in names(families)) {
  policy = families[[family]]
  data = if (family == "multi_label") labels else strata
  for (form in c("ids", "sizes")) {
    shards = if (form == "ids") list(ids = shard_ids) else list(sizes = sizes)
    n_shards = if (form == "ids") length(unique(shard_ids)) else length(sizes)
    for (window in c(1L, 2L, n_shards)) {
      for (epoch in c(0L, 2L)) {
        add(run_case(sprintf("%s_%s_w%d_epoch%d", family, form, window, epoch),
          sprintf(paste0("%s (%s); shards as %s (H = %d), W = %d, epoch %d (the %s group of ",
            "draws, each led by sample.int(H))."), family, family_notes[[family]],
            if (form == "ids") "8 non-contiguous ids per row" else
              "sizes with two empty shards", n_shards, window, epoch,
            if (epoch == 0L) "first" else "third"),
          data, policy, shards, window = window, seed = 31L, epoch = epoch))
      }
    }
  }
  add(run_case(sprintf("%s_ids_no_shuffle", family), sprintf(paste0("%s, shuffle = FALSE: ",
    "the identity shard order (ids ascending), each drawn sequence (row order) sorted by ",
    "block."), family), data, policy, list(ids = shard_ids), window = 2L, shuffle = FALSE))
}
# rng = "index" (docs/SHARDS.md, "Lazy plans"): keyed shard order and per-(stratum, block)
# bijections, any epoch computed directly. Policies without pools or recycled strata.
index_families = list(
  min_per_stratum = policy_min_per_stratum(2),
  fixed_size = policy_fixed_size(12),
  targets = policy_targets(c(a = 0.15, b = 0.35, c = 0.5), 20)
)
for (family in names(index_families)) {
  for (form in c("ids", "sizes")) {
    shards = if (form == "ids") list(ids = shard_ids) else list(sizes = sizes)
    n_shards = if (form == "ids") length(unique(shard_ids)) else length(sizes)
    for (window in c(1L, 2L, n_shards)) {
      for (epoch in c(0L, 2L)) {
        add(run_case(sprintf("index_%s_%s_w%d_epoch%d", family, form, window, epoch),
          sprintf(paste0("rng = 'index', %s (no stratum pooled or recycled); shards as %s ",
            "(H = %d), W = %d, epoch %d: the keyed shard order (stream 2^52 - 1), each ",
            "stratum's rows in shard order, ranks keyed within each block (streams from 2^51)."),
            family, if (form == "ids") "8 non-contiguous ids per row" else
              "sizes with two empty shards", n_shards, window, epoch),
          strata, index_families[[family]], shards, window = window, seed = 31L, epoch = epoch,
          rng = "index"))
      }
    }
  }
}
add(run_case("classes_per_batch_small_repeat", paste0("ClassesPerBatch(small = 'repeat') ",
  "with a stratum of 3 rows: its refills index the sorted pass 0."),
  c(strata[1:40], rep("d", 3L)), policy_classes_per_batch(2, 4, small = "repeat"),
  list(ids = c(shard_ids[1:40], 7L, 99L, 7L)), window = 1L, seed = 8L))

# --- errors -------------------------------------------------------------------------------

ten = rep(c("a", "b"), 5L)
add(run_case("error_ids_wrong_length", "9 ids for 10 rows.", ten, policy_min_per_stratum(1),
  list(ids = 0:8), seed = 1L))
add(run_case("error_ids_negative", "A negative id.", ten, policy_min_per_stratum(1),
  list(ids = c(0:8, -1L)), seed = 1L))
add(run_case("error_ids_fraction", "An id that is not a whole number.", ten,
  policy_min_per_stratum(1), list(ids = c(0, 1, 2, 3, 4, 5, 6, 7, 8, 1.5)), seed = 1L))
add(run_case("error_ids_nan", "A NaN id (no shard).", ten, policy_min_per_stratum(1),
  list(ids = c(0, 1, 2, 3, 4, 5, 6, 7, 8, NaN)), seed = 1L))
add(run_case("error_ids_strings", "Ids as strings.", ten, policy_min_per_stratum(1),
  list(ids = as.character(0:9)), seed = 1L))
add(run_case("error_ids_logical", "Ids as booleans.", ten, policy_min_per_stratum(1),
  list(ids = rep(c(TRUE, FALSE), 5L)), seed = 1L))
add(run_case("error_sizes_sum", "Sizes adding up to 9 for 10 rows.", ten,
  policy_min_per_stratum(1), list(sizes = c(4L, 0L, 5L)), seed = 1L))
add(run_sizes_error("error_sizes_negative", "A negative size.", ten, c(4L, -1L, 7L)))
add(run_sizes_error("error_sizes_empty", "No shard at all.", ten, integer(0)))
add(run_case("error_window_zero", "window = 0.", ten, policy_min_per_stratum(1),
  list(ids = 0:9), window = 0L, seed = 1L))
add(run_case("error_window_fraction", "window = 1.5.", ten, policy_min_per_stratum(1),
  list(ids = 0:9), window = 1.5, seed = 1L))
add(run_case("error_window_without_shards_is_refused", paste0("window = 2 without shards: no ",
  "effect, refused."), ten, policy_min_per_stratum(1), NULL, window = 2L, seed = 1L))
add(run_case("error_rng_index_classes_per_batch", paste0("rng = 'index' with ClassesPerBatch: ",
  "keyed refills and layout have no shard-blocked form."), rep(c("a", "b"), 8L),
  policy_classes_per_batch(2, 2), list(ids = 0:15), seed = 1L, rng = "index"))
add(run_case("error_rng_index_downsample", paste0("rng = 'index' with a pool (Downsample): ",
  "a keyed pool cannot be sorted by block."), strata,
  policy_downsample(c(c = 0.5), policy_min_per_stratum(2)), list(ids = shard_ids), seed = 1L,
  rng = "index"))
add(run_case("error_rng_index_targets_recycled", paste0("rng = 'index' with a recycled ",
  "stratum (Targets, a served 4 times over)."), strata,
  policy_targets(c(a = 0.4, b = 0.3, c = 0.3), 10), list(ids = shard_ids), seed = 1L,
  rng = "index"))
add(run_case("error_rng_index_multi_label", paste0("rng = 'index' with MultiLabel: refused ",
  "naming rng, as without shards."), labels, policy_multi_label(num_batches = 4),
  list(ids = shard_ids), seed = 1L, rng = "index"))
add(run_case("error_classes_uniform", paste0("ClassesPerBatch(classes = 'uniform'): keyed pass ",
  "orders, nothing drawn to sort."), rep(c("a", "b"), 8L),
  policy_classes_per_batch(2, 2, classes = "uniform"), list(ids = 0:15), seed = 1L))

ids = vapply(cases, function(case) case$id, "")
stopifnot(!anyDuplicated(ids))

document = list(
  description = paste0(
    "Golden batches of the shard-blocked order (docs/SHARDS.md) for every policy family. ",
    "input$shards is {ids: column} (one shard id per row; ids are labels, shard h is the ",
    "h-th smallest distinct id) or {sizes: column} (shard_sizes(sizes): rows stored shard ",
    "after shard, empty shards allowed) or null (no shards), each column typed as in ",
    "batches.json; input$window is W. For policy multi_label, input$labels is the 0/1 label ",
    "matrix (rows as lists); otherwise input$strata is one stratum column. Each case gives the ",
    "expected batches (1-based row positions; weights when the policy has them) or the ",
    "expected error (pystratum_<class> in R, TypeError/ValueError in Python) and the argument ",
    "it names."),
  generator = sprintf("pystratum (R package) %s, tests/vectors/generate_shards.R",
    as.character(utils::packageVersion("pystratum"))),
  r_version = R.version.string,
  regenerate = paste0("R CMD INSTALL r && Rscript tests/vectors/generate_shards.R  ",
    "(from the repository root)"),
  index_base = 1L,
  rng = paste0("'R': epoch k is the (k+1)-th group of draws after set.seed(seed) (R >= 3.6 ",
    "defaults), each group led by sample.int(H), the shard permutation, then the policy's ",
    "draws. shuffle = false: the identity shard order, nothing drawn. 'index' (cases index_*): ",
    "the keyed orders of docs/SHARDS.md 'Lazy plans', nothing drawn."),
  cases = cases
)
writeLines(jsonlite::toJSON(document, auto_unbox = TRUE, pretty = TRUE, digits = NA,
  na = "string", null = "null"), output, useBytes = TRUE)
cat(sprintf("wrote %d cases to %s\n", length(cases), output))
