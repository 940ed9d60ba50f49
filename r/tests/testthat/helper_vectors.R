# The shared golden vectors (tests/vectors/*.json), which the Python suite
# reads too. Found via PYSTRATUM_VECTORS_DIR, or by walking up from the
# working directory of a source checkout. When a file or jsonlite is missing
# the test skips with the reason, unless PYSTRATUM_REQUIRE_VECTORS=true (set
# by CI), where it is a failure.

skip_or_fail = function(reason) {
  if (identical(tolower(Sys.getenv("PYSTRATUM_REQUIRE_VECTORS")), "true")) {
    fail(paste(reason, "(PYSTRATUM_REQUIRE_VECTORS=true, so this is a failure)"))
  }
  skip(reason)
}

find_vectors_file = function(name) {
  dir = Sys.getenv("PYSTRATUM_VECTORS_DIR")
  if (nzchar(dir)) {
    return(file.path(dir, name))
  }
  dir = normalizePath(getwd(), mustWork = FALSE)
  repeat {
    candidate = file.path(dir, "tests", "vectors", name)
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

# The parsed tests/vectors/<name> (its file in attr(, "path")); skips or fails (see above)
# when it cannot be read.
read_vectors = function(name) {
  path = find_vectors_file(name)
  if (is.null(path) || !file.exists(path)) {
    skip_or_fail(sprintf(paste0("golden vectors not found: tests/vectors/%s is not above the ",
      "working directory (%s); set PYSTRATUM_VECTORS_DIR to the repository's tests/vectors"),
      name, getwd()))
  }
  if (!requireNamespace("jsonlite", quietly = TRUE)) {
    skip_or_fail("golden vectors need the jsonlite package")
  }
  structure(jsonlite::fromJSON(path, simplifyVector = FALSE), path = path)
}
