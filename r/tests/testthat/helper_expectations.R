# Shared expectations and a deliberately plain reference implementation.

# The allocation as the blog describes it, one row at a time, with exact
# integer arithmetic: the reference the vectorised code is compared with.
reference_batches = function(key, permutation, m) {
  key = as.character(key)
  sizes = table(key)
  n_batches = max(1, min(sizes) %/% m)
  seen = setNames(integer(length(sizes)), names(sizes))
  batch = integer(length(permutation))
  for (j in seq_along(permutation)) {
    s = key[[permutation[[j]]]]
    seen[[s]] = seen[[s]] + 1L
    n_s = as.double(sizes[[s]])
    batch[[j]] = (seen[[s]] * n_batches + n_s - 1) %/% n_s
  }
  unname(split(permutation, factor(batch, levels = seq_len(n_batches))))
}

# A row key identifying strata, for single columns and data.frames alike.
strata_key = function(strata) {
  if (is.data.frame(strata)) {
    do.call(paste, c(lapply(strata, as.character), sep = "\r"))
  } else {
    as.character(strata)
  }
}

# Every row once; when N_min >= m, >= m rows of every stratum per batch and
# per-stratum counts differing by at most one across batches.
expect_stratified_batches = function(batches, strata, m) {
  key = strata_key(strata)
  n = length(key)
  rows = unlist(batches)
  expect_type(rows, "integer")
  expect_setequal(rows, seq_len(n))
  expect_length(rows, n)
  sizes = table(key)
  expected_batches = max(1, min(sizes) %/% m)
  expect_length(batches, expected_batches)
  counts = vapply(batches, function(b) as.vector(table(factor(key[b], levels = names(sizes)))),
    numeric(length(sizes)))
  counts = matrix(counts, nrow = length(sizes))
  spread = apply(counts, 1L, function(x) max(x) - min(x))
  expect_true(all(spread <= 1))
  if (min(sizes) >= m) {
    expect_true(all(counts >= m))
  }
  invisible(batches)
}

# A pystratum condition of the given kind naming `argument`, whose message
# matches `message` (a regular expression). Kind "single_batch" is a value
# error of its own class (R/single_batch.R).
expect_pystratum_error = function(expr, kind, argument, message = NULL) {
  error = expect_error(expr, class = paste0("pystratum_", kind))
  classes = paste0("pystratum_", if (kind == "single_batch") c(kind, "value_error") else kind)
  expect_s3_class(error, c(classes, "pystratum_error", "error", "condition"), exact = TRUE)
  expect_identical(error$argument, argument)
  if (!is.null(message)) {
    expect_match(conditionMessage(error), message)
  }
  invisible(error)
}

# Runs `code` with the session's .Random.seed removed, then puts it back.
with_no_random_seed = function(code) {
  env = globalenv()
  had = exists(".Random.seed", envir = env, inherits = FALSE)
  if (had) saved = get(".Random.seed", envir = env)
  on.exit(if (had) assign(".Random.seed", saved, envir = env))
  if (had) rm(".Random.seed", envir = env)
  force(code)
}
