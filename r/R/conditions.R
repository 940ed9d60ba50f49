# Classed conditions shared by every entry point.
#
# Messages follow the Python core's shape, "<name> must be <what>, got
# <name>=<value>. <fix>", so users of both languages read the same text and
# handlers can rely on the classes:
#   pystratum_type_error / pystratum_value_error  (both inherit pystratum_error)
#   pystratum_single_batch                        (a pystratum_value_error: a plan of
#                                                  one batch; Python's SingleBatchError)
#   pystratum_stratum_too_small                   (a warning)
#   pystratum_small_strata                        (a warning: strata left out)
# Errors carry the offending argument's name in `argument`.

abort_type = function(argument, message) {
  abort_pystratum("type_error", argument, message)
}

abort_value = function(argument, message) {
  abort_pystratum("value_error", argument, message)
}

# A plan of one batch holding every row (r/R/single_batch.R): a value error
# with its own class, as Python's SingleBatchError subclasses ValueError.
abort_single_batch = function(argument, message) {
  abort_pystratum(c("single_batch", "value_error"), argument, message)
}

abort_pystratum = function(kind, argument, message) {
  condition = structure(
    class = c(paste0("pystratum_", kind), "pystratum_error", "error", "condition"),
    list(message = message, call = NULL, argument = argument)
  )
  stop(condition)
}

# A missing suggested package is neither a wrong type nor a wrong value: it
# gets its own class so callers (and tests) can tell it apart.
abort_missing_package = function(package, needed_for, argument = NA_character_) {
  condition = structure(
    class = c("pystratum_missing_package", "pystratum_error", "error", "condition"),
    list(
      message = sprintf(
        "%s needs the %s package, which is not installed: install.packages(\"%s\")%s.",
        needed_for, package, package,
        if (package == "torch") " (then torch::install_torch() to download libtorch)" else ""
      ),
      call = NULL, argument = argument, package = package
    )
  )
  stop(condition)
}

# Strata left out of every batch (policy_classes_per_batch(small = "drop"));
# Python's SmallStrataWarning. Classed so that epochs after the first, which
# would repeat it, can leave it out (allocate_epoch(warn = FALSE)).
warn_small_strata = function(message) {
  warning(structure(class = c("pystratum_small_strata", "warning", "condition"),
    list(message = message, call = NULL)))
}

warn_stratum_too_small = function(message, label, size, min_samples_per_stratum) {
  condition = structure(
    class = c("pystratum_stratum_too_small", "warning", "condition"),
    list(message = message, call = NULL, stratum = label, size = size,
      min_samples_per_stratum = min_samples_per_stratum)
  )
  warning(condition)
}

# How a value is quoted in messages: like deparse(), shortened, with whole
# doubles shown without exponent (seed=3000000000, not 3e+09).
show_value = function(x) {
  if (is.null(x)) {
    return("NULL")
  }
  if (is.integer(x) && !is.object(x) && is.null(dim(x)) && length(x) == 1L && !is.na(x)) {
    return(as.character(x))
  }
  if (is.character(x) && length(x) == 1L && !is.na(x)) {
    return(sprintf("'%s'", x))
  }
  # Classed doubles (Date, POSIXct, difftime) are deparsed: abs() and format()
  # mean other things for them (abs() of a Date is an error).
  if (is.double(x) && !is.object(x) && is.null(dim(x)) && length(x) == 1L && !is.na(x) && is.finite(x) &&
    x == trunc(x) && abs(x) < 1e15) {
    return(format(x, scientific = FALSE))
  }
  text = paste(deparse(x, width.cutoff = 80L, nlines = 2L), collapse = " ")
  if (nchar(text) > 80L) paste0(substr(text, 1L, 77L), "...") else text
}

type_name = function(x) {
  if (is.factor(x)) "factor" else if (is.data.frame(x)) "data.frame" else typeof(x)
}
