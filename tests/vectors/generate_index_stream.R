# Golden vectors of the random-access stream (rng = "index"): keyed
# bijections and the lazy plan's batches, read by pytest and testthat alike.
#
# From the repository root, with the R package installed:
#   Rscript tests/vectors/generate_index_stream.R
#     rewrites tests/vectors/index_stream.json from the cases below.
#
# Needs the R package (pystratum) and jsonlite (Debian: r-cran-jsonlite).

if (!requireNamespace("jsonlite", quietly = TRUE)) {
  stop("generate_index_stream.R needs jsonlite: apt-get install r-cran-jsonlite")
}
suppressPackageStartupMessages(library(pystratum))

# Whole numbers up to 2^52 need 16 digits; jsonlite writes 15 at most.
json_number = function(x) sprintf("%.0f", x)
json_vector = function(x) {
  structure(paste0("[", paste(json_number(x), collapse = ","), "]"), class = "json")
}
json_scalar = function(x) structure(json_number(x), class = "json")
# Weights are fractions (30/17): 17 significant digits read back as the same double.
json_doubles = function(x) {
  structure(paste0("[", paste(sprintf("%.17g", x), collapse = ","), "]"), class = "json")
}

permutation_case = function(id, n, seed, epoch, stream, ranks = NULL, comment = "") {
  values = pystratum:::index_permutation(n, seed, epoch, stream, ranks)
  list(id = id, comment = comment, n = json_scalar(n), seed = json_scalar(seed),
    epoch = json_scalar(epoch), stream = json_scalar(stream),
    ranks = if (is.null(ranks)) NULL else json_vector(ranks + 1),
    expected = json_vector(values + 1))
}

keys_case = function(id, seed, epoch, streams) {
  keys = pystratum:::index_round_keys(seed, epoch, streams)
  list(id = id, comment = "round keys, one column per stream number (rows = rounds)",
    seed = json_scalar(seed), epoch = json_scalar(epoch), streams = json_vector(streams),
    expected = lapply(seq_len(ncol(keys)), function(j) json_vector(keys[, j])))
}

batches_case = function(id, strata, policy, seed, epoch, comment = "") {
  batches = stratified_batches(strata, policy, seed = seed, rng = "index", epoch = epoch)
  case = list(id = id, comment = comment, strata = strata,
    policy = list(name = policy$name, params = policy$params),
    seed = json_scalar(seed), epoch = json_scalar(epoch),
    expected = lapply(batches, json_vector))
  weights = attr(batches, "weights")
  if (!is.null(weights)) case$expected_weights = lapply(weights, json_doubles)
  case
}

set.seed(20251123)
labels = function(sizes, names) sample(rep(names, sizes))
permutations = list(
  permutation_case("tiny-1", 1, 0, 0, 0, comment = "one value"),
  permutation_case("tiny-2", 2, 5, 1, 0),
  permutation_case("tiny-6", 6, 42, 3, 2, comment = "small domain: ranked by the 52-bit network"),
  permutation_case("small-64", 64, 7, 0, 1, comment = "largest small domain"),
  permutation_case("feistel-65", 65, 7, 0, 1, comment = "smallest Feistel domain"),
  permutation_case("feistel-100", 100, 123456789, 2, 3),
  permutation_case("feistel-1000", 1000, 2^52 - 1, 2^40, 77, comment = "largest seed"),
  permutation_case("feistel-4097", 4097, 9, 11, 0, comment = "just above a power of two"),
  permutation_case("big-ranks", 2^52 - 12345, 3, 1, 2^40,
    ranks = c(0, 1, 2, 2^51, 2^52 - 12346), comment = "near 2^52: every intermediate exact"),
  permutation_case("million-ranks", 1e6, 31, 0, 0, ranks = c(0, 999999, 123456, 5))
)
keys = list(
  keys_case("keys-0", 0, 0, c(0, 1, 2)),
  keys_case("keys-big", 2^52 - 1, 2^52 - 1, c(0, 2^51))
)
batches = list(
  batches_case("min-two", labels(c(90, 12), c("neg", "pos")), policy_min_per_stratum(2), 1, 0),
  batches_case("min-three-epoch", labels(c(40, 25, 70), c("a", "b", "c")),
    policy_min_per_stratum(3), 2^31, 5),
  batches_case("fixed", labels(c(150, 9, 41), c("x", "y", "z")), policy_fixed_size(25), 8, 2),
  batches_case("targets-recycled", labels(c(60, 8), c(0L, 1L)),
    policy_targets("balanced", 10), 4, 1, comment = "the small stratum recycled: extra passes"),
  batches_case("downsample-weights", labels(c(120, 15), c("n", "p")),
    policy_downsample(list(n = 0.25), policy_min_per_stratum(3)), 6, 0,
    comment = "pooled stratum and importance weights"),
  batches_case("many-strata", labels(rep(c(3, 70), c(10, 2)), as.character(1:12)),
    policy_min_per_stratum(1), 10, 3, comment = "more than eight strata, small domains")
)

document = list(
  description = paste(
    "Golden vectors of rng='index': keyed Feistel bijections with cycle-walking (small domains",
    "ranked by the 52-bit network) and the lazy plan's batches. 'permutations': expected =",
    "perm(ranks) + 1 (all of 0..n-1 when ranks is absent; ranks are 1-based too). 'keys': the",
    "round keys. 'batches': stratified_batches(strata, policy, seed, rng = 'index', epoch)."),
  generator = "tests/vectors/generate_index_stream.R (the R package + jsonlite)",
  r_version = R.version.string,
  regenerate = "Rscript tests/vectors/generate_index_stream.R  (from the repository root)",
  index_base = 1L,
  groups = list(
    list(name = "permutations", cases = permutations),
    list(name = "keys", cases = keys),
    list(name = "batches", cases = batches)
  )
)
json = jsonlite::toJSON(document, auto_unbox = TRUE, null = "null", digits = NA, pretty = TRUE,
  json_verbatim = TRUE)
writeLines(json, file.path("tests", "vectors", "index_stream.json"))
