# R CMD check's "no visible global function definition for 'runif'" NOTE,
# checked without codetools: every function of R's default packages that the
# package's code calls by its bare name must be imported in NAMESPACE
# (calls written pkg::fun are fine as they are).

called_functions = function(expr) {
  if (is.function(expr)) {
    return(c(called_functions(formals(expr)), called_functions(body(expr))))
  }
  if (is.call(expr)) {
    head = if (is.symbol(expr[[1L]])) as.character(expr[[1L]]) else character()
    return(unique(c(head, unlist(lapply(as.list(expr), called_functions)))))
  }
  if (is.pairlist(expr) || is.list(expr)) {
    return(unique(unlist(lapply(as.list(expr), called_functions))))
  }
  character()
}

test_that("every function of R's default packages called by its bare name is imported", {
  ns = asNamespace("pystratum")
  functions = Filter(is.function, mget(ls(ns, all.names = TRUE), envir = ns))
  called = unique(unlist(lapply(functions, called_functions)))
  visible = function(name) {
    exists(name, envir = ns, inherits = FALSE) ||
      exists(name, envir = parent.env(ns), inherits = FALSE) ||
      exists(name, envir = .BaseNamespaceEnv, inherits = FALSE)
  }
  defaults = c("stats", "utils", "graphics", "grDevices", "methods", "tools")
  unimported = Filter(function(name) {
    !visible(name) && any(vapply(defaults, function(pkg) {
      name %in% getNamespaceExports(pkg)
    }, logical(1L)))
  }, called)
  expect_identical(unimported, character(0))
})
