# The golden vectors tests/vectors/batches.json (read by pytest too; see
# helper_vectors.R for where they are found).

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
        seed = input$seed, rng = input$rng, epoch = input$epoch, shuffle = input$shuffle,
        allow_single_batch = input$allow_single_batch),
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
  vectors = read_vectors("batches.json")
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
  vectors = read_vectors("batches.json")
  for (field in c("description", "generator", "r_version", "regenerate", "rng")) {
    expect_true(is.character(vectors[[field]]) && nzchar(vectors[[field]]), label = field)
  }
  ids = vapply(vectors$cases, function(case) case$id, "")
  expect_false(anyDuplicated(ids) > 0)
  expect_lt(file.size(attr(vectors, "path")), 1e6)
})
