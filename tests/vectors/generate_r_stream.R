# Golden vectors of R's default random stream, for pystratum's RStream.
#
# From the repository root:
#   Rscript tests/vectors/generate_r_stream.R
#     rewrites tests/vectors/r_stream.json from the cases below;
#   Rscript tests/vectors/generate_r_stream.R --run CASES.json RESULTS.json
#     runs the cases of CASES.json (same layout, without "expected") and writes
#     them with R's results: tests/streams/test_rstream.py uses this for its live checks.
#
# Only base R and jsonlite (Debian: r-cran-jsonlite). The stream is R's
# default since 3.6: RNGkind("Mersenne-Twister", "Inversion", "Rejection").

if (!requireNamespace("jsonlite", quietly = TRUE)) {
  stop("generate_r_stream.R needs jsonlite: apt-get install r-cran-jsonlite (or install.packages(\"jsonlite\"))")
}

RNGkind("Mersenne-Twister", "Inversion", "Rejection")

# Vectors longer than this are stored as a digest: length, first values, md5.
FULL_MAX = 1100L
HEAD = 10L

# --- exact JSON for numbers ------------------------------------------------------------
# jsonlite prints at most 15 significant digits; doubles need 17 to round-trip
# (runif values, sample values above 2^31), so numbers are written here.

json_number = function(x) {
  if (is.integer(x)) return(as.character(x))
  out = sprintf("%.17g", x)
  whole = is.finite(x) & x == round(x) & abs(x) < 2^53
  out[whole] = sprintf("%.0f", x[whole])
  out
}

json_vector = function(x) {
  structure(paste0("[", paste(json_number(x), collapse = ","), "]"), class = "json")
}

json_scalar = function(x) structure(json_number(x), class = "json")

md5_of = function(x) {
  # md5 of the values as little-endian float64, what Python computes with
  # hashlib.md5(numpy.asarray(x, dtype="<f8").tobytes()).hexdigest()
  path = tempfile()
  on.exit(unlink(path))
  con = file(path, "wb")
  writeBin(as.double(x), con, size = 8L, endian = "little")
  close(con)
  unname(tools::md5sum(path))
}

stored = function(x, store) {
  if (identical(store, "full") || (is.null(store) && length(x) <= FULL_MAX)) {
    return(json_vector(x))
  }
  list(length = length(x), head = json_vector(utils::head(x, HEAD)), md5 = md5_of(x))
}

# --- running cases --------------------------------------------------------------------

run_call = function(call) {
  value = tryCatch(
    switch(call$fn,
      sample = {
        replace = isTRUE(call$replace)
        if (is.null(call$size)) sample.int(call$n, replace = replace)
        else sample.int(call$n, call$size, replace = replace)
      },
      runif = runif(call$n),
      random_seed = get(".Random.seed", envir = globalenv()),
      stop("unknown fn ", call$fn)
    ),
    error = function(e) e
  )
  if (inherits(value, "error")) {
    call$expected = list(error = conditionMessage(value))
  } else {
    call$expected = stored(value, call$store)
  }
  call$store = NULL
  # Arguments back as exact numbers (n can exceed 2^31).
  for (name in intersect(c("n", "size"), names(call))) {
    if (!is.null(call[[name]])) call[[name]] = json_scalar(call[[name]])
  }
  call
}

run_case = function(case) {
  if (!is.null(case$seed)) {
    status = tryCatch(suppressWarnings(set.seed(case$seed)), error = function(e) e)
    case$seed = json_scalar(case$seed)
    if (inherits(status, "error")) {
      case$seed_error = conditionMessage(status)
      case$calls = list()
      return(case)
    }
  } else {
    assign(".Random.seed", as.integer(unlist(case$start_random_seed)), envir = globalenv())
    case$start_random_seed = json_vector(as.integer(unlist(case$start_random_seed)))
  }
  case$calls = lapply(case$calls, run_call)
  case
}

compact = function(x) {
  as.character(jsonlite::toJSON(x, auto_unbox = TRUE, null = "null", json_verbatim = TRUE))
}

# One line per header field and per call, so diffs stay readable.
write_document = function(document, path) {
  header = document[setdiff(names(document), "cases")]
  lines = "{"
  for (name in names(header)) {
    lines = c(lines, paste0("  ", compact(name), ": ", compact(header[[name]]), ","))
  }
  lines = c(lines, '  "cases": [')
  n_cases = length(document$cases)
  for (i in seq_len(n_cases)) {
    case = document$cases[[i]]
    fields = case[setdiff(names(case), "calls")]
    opening = sub("}$", "", compact(fields))
    calls = vapply(case$calls, compact, "")
    body = if (length(calls)) {
      c(paste0(opening, ', "calls": ['), paste0("      ", calls, c(rep(",", length(calls) - 1L), "")), "    ]}")
    } else {
      paste0(opening, ', "calls": []}')
    }
    body[1L] = paste0("    ", body[1L])
    if (i < n_cases) body[length(body)] = paste0(body[length(body)], ",")
    lines = c(lines, body)
  }
  writeLines(c(lines, "  ]", "}"), path)
}

# --- the golden cases -----------------------------------------------------------------

smp = function(n, size = NULL, replace = FALSE, store = NULL) {
  call = list(fn = "sample", n = n, size = size, replace = replace)
  if (!is.null(store)) call$store = store
  call
}
unif = function(n, store = NULL) {
  call = list(fn = "runif", n = n)
  if (!is.null(store)) call$store = store
  call
}
state = function(store = "digest") list(fn = "random_seed", store = store)

# sample(n) then the state, for each n.
each_then_state = function(ns, store = "digest") {
  unlist(lapply(ns, function(n) list(smp(n), state(store))), recursive = FALSE)
}

case = function(id, comment, calls, seed = NULL, start_random_seed = NULL) {
  out = list(id = id, comment = comment, seed = seed)
  if (!is.null(start_random_seed)) out$start_random_seed = start_random_seed
  out$calls = calls
  out
}

golden_cases = function() {
  boundaries = c(1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 127, 128, 129, 255, 256, 257,
    1023, 1024, 1025, 4095, 4096, 4097, 32767, 32768, 32769, 65535, 65536, 65537)
  cases = list()
  for (seed in c(-2147483647, -1, 0, 1, 42, 2147483647, 20050, 987654321)) {
    cases[[length(cases) + 1L]] = case(
      sprintf("sample10_seed_%s", format(seed, scientific = FALSE)),
      "set.seed(seed); sample(10), then the whole .Random.seed.",
      list(smp(10), state("full")), seed = seed)
  }
  for (seed in c(2147483648, 3e9, 4294967295, 4294967296, -2147483648, -3e9)) {
    cases[[length(cases) + 1L]] = case(
      sprintf("seed_out_of_range_%s", format(seed, scientific = FALSE)),
      "set.seed() converts with as.integer(): NA (with a warning), then stops. No wrapping.",
      list(), seed = seed)
  }
  cases[[length(cases) + 1L]] = case("bit_width_boundaries_consecutive",
    "One stream: sample(n) for n at and around powers of two (each bit count of R_unif_index, 1 and 2 words per draw), the state after each.",
    each_then_state(boundaries), seed = 42)
  cases[[length(cases) + 1L]] = case("bit_width_boundaries_fresh_65537",
    "Fresh stream, n = 2^16 + 1: 17 bits, two words per draw from the first draw.",
    list(smp(65537), state("full")), seed = 65537)
  cases[[length(cases) + 1L]] = case("bit_width_boundaries_fresh_65536",
    "Fresh stream, n = 2^16: 16 bits, still two words per draw.",
    list(smp(65536), state("digest")), seed = 65536)
  cases[[length(cases) + 1L]] = case("n_20050_seed_7",
    "The n of the REFERENCE torch example, seed 7; two epochs in a row.",
    list(smp(20050), state(), smp(20050), state("full")), seed = 7)
  cases[[length(cases) + 1L]] = case("n_20050_seed_1",
    "sample(20050) with seed 1.",
    list(smp(20050), state()), seed = 1)
  cases[[length(cases) + 1L]] = case("n_1e6",
    "sample(1e6): 20 bits.",
    list(smp(1e6), state("full")), seed = 2024)
  cases[[length(cases) + 1L]] = case("n_1e7_plus_5",
    "sample(1e7 + 5): a full permutation never takes the hash path.",
    list(smp(1e7 + 5), state("full")), seed = 123456789)
  cases[[length(cases) + 1L]] = case("partial_samples",
    "sample(n, k) without replacement, consecutive on one stream (k = 0 and k = 1 draw nothing / one index).",
    list(smp(100, 10), state(), smp(1e6, 5), state(), smp(20050, 10000, store = "digest"), state(),
      smp(65537, 32768, store = "digest"), state(), smp(7, 0), state(), smp(2147483647, 1), state(),
      smp(10, 9), state(), smp(1e7, 3), state("full")), seed = 99)
  cases[[length(cases) + 1L]] = case("with_replacement",
    "replace = TRUE, n up to 4.5e15 (R's limit; above 2^31 the values are doubles and a draw takes 3 or 4 words).",
    list(smp(10, 20, TRUE), state(), smp(1, 5, TRUE), state(), smp(2, 1000, TRUE), state(),
      smp(65537, 3000, TRUE, store = "digest"), state(), smp(2147483647, 100, TRUE), state(),
      smp(3e9, 50, TRUE), state(), smp(2^48, 20, TRUE), state(), smp(4.5e15, 10, TRUE), state("full")),
    seed = -5)
  cases[[length(cases) + 1L]] = case("replace_many_draws",
    "replace = TRUE with more draws than one batch of words (2.5e6 draws of 2 words).",
    list(smp(70000, 2500000, TRUE, store = "digest"), state("full")), seed = 2718)
  cases[[length(cases) + 1L]] = case("populations_near_2_31",
    "n around 2^30 and 2^31 (31-32 bits, 2-3 words per draw), with replacement and by the hash path.",
    list(smp(2^30 + 1, 50, TRUE), state(), smp(2^31, 50, TRUE), state(), smp(1.5e9, 50), state(),
      smp(2^31 + 1, 50), state("full")), seed = 1073741825)
  cases[[length(cases) + 1L]] = case("hash_path",
    "n > 1e7 and size <= n / 2 without replacement: R_unif_index(n) + 1 repeated, repeats redrawn.",
    list(smp(1e7 + 1, 10), state(), smp(1e8, 1000), state(), smp(5e9, 20), state(),
      smp(10000001, 5000000, store = "digest"), state("full")), seed = 31)
  cases[[length(cases) + 1L]] = case("runif",
    "runif(n) between samples.",
    list(unif(5), state(), smp(10), unif(1000, store = "digest"), state(), unif(0), smp(3), state("full")),
    seed = 11)
  cases[[length(cases) + 1L]] = case("errors",
    "R's errors leave the stream untouched.",
    list(smp(3, 5), smp(0, 1), smp(0, 1, TRUE), smp(4.6e15, 1, TRUE), state(), smp(0), smp(5, 0), state(),
      smp(3), state("full")), seed = 8)
  # A state whose next word is 0: pos = 1, mt[2] = 0 (temper(0) == 0). unif_rand()
  # then returns 0.5 * 2.328306437080797e-10, and rbits sees 0.
  set.seed(1)
  zero_next = .Random.seed
  zero_next[2] = 1L
  zero_next[4] = 0L
  cases[[length(cases) + 1L]] = case("zero_word_runif",
    "Resume from a .Random.seed whose next word is 0: runif's zero special case.",
    list(unif(3), state("full")), start_random_seed = zero_next)
  cases[[length(cases) + 1L]] = case("zero_word_sample",
    "Same state, sample(5): rbits reads the zero word as 0.",
    list(smp(5), state("full")), start_random_seed = zero_next)
  mid = zero_next
  set.seed(77)
  invisible(sample(1000))
  cases[[length(cases) + 1L]] = case("resume_mid_block",
    "Resume from R's .Random.seed saved after set.seed(77); sample(1000): position mid-block.",
    list(smp(50), state(), smp(70000, store = "digest"), state("full")),
    start_random_seed = .Random.seed)
  cases
}

# --- main -----------------------------------------------------------------------------

args = commandArgs(trailingOnly = TRUE)
if (length(args) >= 1L && args[[1L]] == "--run") {
  if (length(args) != 3L) stop("usage: Rscript generate_r_stream.R --run CASES.json RESULTS.json")
  cases = jsonlite::fromJSON(args[[2L]], simplifyVector = FALSE)
  writeLines(compact(lapply(cases, run_case)), args[[3L]])
} else {
  output = file.path("tests", "vectors", "r_stream.json")
  if (!dir.exists(dirname(output))) {
    stop("Run this script from the repository root: Rscript tests/vectors/generate_r_stream.R")
  }
  document = list(
    description = paste(
      "Golden vectors of R's default random stream (Mersenne-Twister, Inversion, Rejection;",
      "R >= 3.6). Each case starts from set.seed(seed) (or from start_random_seed, assigned",
      "to .Random.seed) and runs its calls in order on that one stream: sample is",
      "sample.int(n, size, replace) (size null: the default, n), runif is runif(n),",
      "random_seed is .Random.seed at that point. 'expected' is the full vector, or",
      "{length, head, md5} for long ones, or {error} with R's message (seed_error when",
      "set.seed() itself fails)."),
    generator = "tests/vectors/generate_r_stream.R (base R + jsonlite)",
    r_version = R.version.string,
    jsonlite_version = as.character(utils::packageVersion("jsonlite")),
    regenerate = "Rscript tests/vectors/generate_r_stream.R  (from the repository root)",
    index_base = 1L,
    checksum = paste(
      "md5 is the md5 of the vector's values as little-endian float64: in R",
      "writeBin(as.double(x), con, size = 8, endian = 'little') then tools::md5sum();",
      "in Python hashlib.md5(numpy.asarray(x, dtype='<f8').tobytes()).hexdigest().",
      "head is the first 10 values."),
    cases = lapply(golden_cases(), run_case)
  )
  write_document(document, output)
  message("wrote ", output)
}
