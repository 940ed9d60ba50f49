# The golden vectors in the repository's tests/vectors/batches.json, which
# the Python suite reads too. Found via PYSTRATUM_VECTORS_DIR, or by walking
# up from the working directory of a source checkout. When they cannot be
# found the test skips with the reason, unless PYSTRATUM_REQUIRE_VECTORS=true
# (set by CI), where a missing file is a failure.

vectors_required = function() {
  identical(tolower(Sys.getenv("PYSTRATUM_REQUIRE_VECTORS")), "true")
}

skip_or_fail = function(reason) {
  if (vectors_required()) {
    fail(paste(reason, "(PYSTRATUM_REQUIRE_VECTORS=true, so this is a failure)"))
  }
  skip(reason)
}

find_vectors_file = function() {
  dir = Sys.getenv("PYSTRATUM_VECTORS_DIR")
  if (nzchar(dir)) {
    return(file.path(dir, "batches.json"))
  }
  dir = normalizePath(getwd(), mustWork = FALSE)
  repeat {
    candidate = file.path(dir, "tests", "vectors", "batches.json")
    if (file.exists(candidate)) {
      return(candidate)
    }
    parent = dirname(dir)
    if (identical(parent, dir)) {
      return(NULL)
    }
    dir = parent
  }
}

# The inverse of the generator's strata_spec() (tests/vectors/generate_batches.R).
strata_from_spec = function(spec) {
  columns = lapply(spec$columns, function(column) {
    values = unlist(lapply(column$values, function(v) if (is.null(v)) NA else v))
    switch(column$type,
      integer = as.integer(values),
      double = as.double(values),
      character = as.character(values),
      logical = as.logical(values),
      factor = factor(as.character(values), levels = unlist(column$levels)),
      stop("unknown column type ", column$type)
    )
  })
  names(columns) = vapply(spec$columns, function(column) column$name, "")
  if (length(columns) == 1L) columns[[1L]] else as.data.frame(columns, stringsAsFactors = FALSE)
}

# JSON null is R's NULL; the inputs are passed on exactly as stored.
run_vector_case = function(case) {
  input = case$input
  warned = FALSE
  result = tryCatch(
    withCallingHandlers(
      stratified_batches(strata_from_spec(input$strata),
        policy_from_params(input$policy$name, input$policy$params),
        seed = input$seed, rng = input$rng, epoch = input$epoch, shuffle = input$shuffle),
      pystratum_stratum_too_small = function(w) {
        warned <<- TRUE
        invokeRestart("muffleWarning")
      }
    ),
    pystratum_error = function(e) e
  )
  list(result = result, warned = warned)
}

test_that("golden vectors: R reproduces every case of tests/vectors/batches.json", {
  path = find_vectors_file()
  if (is.null(path) || !file.exists(path)) {
    skip_or_fail(paste0(
      "golden vectors not found: tests/vectors/batches.json is not above the working ",
      "directory (", getwd(), "); set PYSTRATUM_VECTORS_DIR to the repository's tests/vectors"))
  }
  if (!requireNamespace("jsonlite", quietly = TRUE)) {
    skip_or_fail("golden vectors need the jsonlite package")
  }
  vectors = jsonlite::fromJSON(path, simplifyVector = FALSE)
  expect_identical(vectors$index_base, 1L)
  expect_gte(length(vectors$cases), 40L)
  for (case in vectors$cases) {
    run = run_vector_case(case)
    if (!is.null(case$expected_error)) {
      expect_s3_class(run$result, paste0("pystratum_", case$expected_error$class))
      expect_identical(run$result$argument, case$expected_error$argument, label = case$id)
      next
    }
    expect_false(inherits(run$result, "error"), label = case$id)
    expected = lapply(case$expected$batches, function(batch) as.integer(unlist(batch)))
    expect_identical(unclass(unname(run$result))[seq_along(run$result)], expected,
      label = case$id)
    weights = attr(run$result, "weights")
    if (is.null(case$expected$weights)) {
      expect_null(weights, label = case$id)
    } else {
      expect_equal(weights, lapply(case$expected$weights, function(w) as.double(unlist(w))),
        tolerance = 1e-13, label = case$id)  # JSON keeps 15 digits
    }
    expect_identical(run$warned, identical(case$warning, "stratum_too_small"), label = case$id)
  }
})

test_that("golden vectors: the header says how they were made", {
  path = find_vectors_file()
  skip_if(is.null(path) || !file.exists(path) || !requireNamespace("jsonlite", quietly = TRUE),
    "golden vectors or jsonlite not available (checked by the previous test)")
  vectors = jsonlite::fromJSON(path, simplifyVector = FALSE)
  for (field in c("description", "generator", "r_version", "regenerate", "rng")) {
    expect_true(is.character(vectors[[field]]) && nzchar(vectors[[field]]), label = field)
  }
  ids = vapply(vectors$cases, function(case) case$id, "")
  expect_false(anyDuplicated(ids) > 0)
  expect_lt(file.size(path), 1e6)
})
