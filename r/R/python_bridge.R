# The R side of the Python bindings (pystratum.r, through rpy2).
#
# Internal: nothing here is exported; Python reaches these functions in the
# package namespace (pystratum:::bridge_*). They exist so that the R code the
# bindings need is R code in the package, linted and tested as R, rather
# than text inside Python. Their contract with Python:
#
# * Calls never signal: bridge_call_capturing() returns
#   list(value, error, warnings) and Python re-raises with its own classes
#   (pystratum_single_batch -> SingleBatchError, pystratum_type_error ->
#   TypeError, pystratum_value_error -> ValueError,
#   pystratum_stratum_too_small -> StratumTooSmallWarning, others -> RError /
#   RWarning). Conditions travel as bridge_condition_info() lists.
# * Lists of batches travel as one flat integer vector plus the batch
#   lengths: one transfer, however many batches there are.
# * Python builds factors and data.frames from plain vectors with
#   bridge_factor() / bridge_data_frame(), so R (not Python) sets the
#   attributes and the objects are ordinary S3 objects.

# A condition as plain data: its classes, message and the argument it blames.
bridge_condition_info = function(cond) {
  argument = cond[["argument"]]
  list(
    class = class(cond),
    message = conditionMessage(cond),
    argument = if (is.character(argument) && length(argument) == 1L) argument else NA_character_
  )
}

# Run fun(args) and return list(value, error, warnings) instead of signalling.
bridge_call_capturing = function(fun, args) {
  caught = list()
  outcome = tryCatch(
    list(value = withCallingHandlers(
      do.call(fun, args),
      warning = function(w) {
        caught[[length(caught) + 1L]] <<- bridge_condition_info(w)
        invokeRestart("muffleWarning")
      }
    ), error = NULL),
    error = function(e) list(value = NULL, error = bridge_condition_info(e))
  )
  outcome[["warnings"]] = caught
  outcome
}

# stratified_batches(...) with the batches flattened: `flat` (all positions,
# 1-based), `sizes` (batch lengths), `is_list`, `all_integer` and `r_type`
# let Python check the result's shape without walking an R list. A policy's
# importance weights (attr(, "weights")) travel the same way: `has_weights`,
# `weights_flat` and `weights_aligned` (one weight per row of every batch).
bridge_stratified_batches = function(...) {
  outcome = bridge_call_capturing(stratified_batches, list(...))
  if (is.null(outcome[["error"]])) {
    value = outcome[["value"]]
    outcome[["value"]] = NULL
    outcome[["is_list"]] = is.list(value)
    outcome[["r_type"]] = paste(class(value), collapse = "/")
    if (is.list(value)) {
      outcome[["flat"]] = unlist(value, use.names = FALSE)
      outcome[["sizes"]] = lengths(value)
      outcome[["all_integer"]] = all(vapply(value, is.integer, logical(1L)))
      weights = attr(value, "weights")
      outcome[["has_weights"]] = !is.null(weights)
      if (!is.null(weights)) {
        outcome[["weights_aligned"]] = is.list(weights) &&
          identical(lengths(weights), lengths(value))
        outcome[["weights_flat"]] = as.double(unlist(weights, use.names = FALSE))
      }
    }
  }
  outcome
}

# rng = "torch" from Python: the same call in a fresh Rscript. R's torch
# bundles its own libtorch, which cannot share a process with PyTorch's
# (official R torch 0.16.3 builds carry libtorch 2.7.1; next to PyTorch 2.13,
# `import torch` fails on an undefined libstdc++ symbol), so embedded R never
# loads it. The child sees the same libraries (.libPaths() as R_LIBS) and
# runs bridge_stratified_batches(); the arguments and its outcome travel as
# RDS files, so Python reads the same outcome as from the in-process call.
bridge_stratified_batches_in_subprocess = function(...) {
  folder = tempfile("pystratum-torch-")
  dir.create(folder)
  on.exit(unlink(folder, recursive = TRUE), add = TRUE)
  arguments = file.path(folder, "arguments.rds")
  outcome = file.path(folder, "outcome.rds")
  saveRDS(list(...), arguments)
  rscript = file.path(R.home("bin"), "Rscript")
  code = "pystratum:::bridge_subprocess_main(commandArgs(trailingOnly = TRUE))"
  libraries = paste(.libPaths(), collapse = .Platform$path.sep)
  output = suppressWarnings(system2(rscript,
    c("-e", shQuote(code), shQuote(arguments), shQuote(outcome)),
    stdout = TRUE, stderr = TRUE, env = paste0("R_LIBS=", shQuote(libraries))))
  if (file.exists(outcome)) {
    return(readRDS(outcome))
  }
  status = attr(output, "status")
  list(value = NULL, warnings = list(), error = list(
    class = c("pystratum_subprocess_error", "error", "condition"),
    message = sprintf(paste0(
      "stratified_batches(rng = \"torch\") runs in a separate Rscript (R's torch ",
      "cannot share a process with PyTorch), which stopped (exit status %s) without ",
      "a result; its last output:\n%s"),
      if (is.null(status)) "0" else status, paste(utils::tail(output, 20L), collapse = "\n")),
    argument = NA_character_))
}

# The child's side of bridge_stratified_batches_in_subprocess().
bridge_subprocess_main = function(paths) {
  arguments = readRDS(paths[[1L]])
  if (is.null(arguments[["seed"]]) && !isFALSE(arguments[["shuffle"]]) &&
      requireNamespace("torch", quietly = TRUE)) {
    # A new process starts torch's global generator at libtorch's fixed
    # default seed: without this every seed = NULL call would give the same
    # batches. R's own stream is seeded from the time and process id.
    torch::torch_manual_seed(sample.int(.Machine$integer.max, 1L))
  }
  saveRDS(do.call(bridge_stratified_batches, arguments), paths[[2L]])
}

bridge_batch_sampler_stratified = function(...) {
  bridge_call_capturing(batch_sampler_stratified, list(...))
}

# A data.frame from equal-length columns (Python has checked the lengths).
bridge_data_frame = function(columns, names, nrow) {
  structure(columns, names = names, row.names = .set_row_names(nrow), class = "data.frame")
}

# A factor from 1-based codes and its levels, in that order.
bridge_factor = function(codes, levels, ordered) {
  structure(codes, levels = levels, class = if (ordered) c("ordered", "factor") else "factor")
}

# The stratum columns of an mlr3 Task in task$row_ids order: position k
# (0-based in Python) is the row with id task$row_ids[k + 1]. Each column is
# described as list(kind, class, first_na, levels, ordered, values), where
# kind is "factor", "Date" (values: days since 1970-01-01), "POSIXct"
# (values: seconds since 1970-01-01 UTC), "other" (values: NULL; Python
# refuses it naming the class) or the column's typeof().
bridge_task_strata = function(task) {
  columns = task$col_roles$stratum
  row_ids = task$row_ids
  if (length(columns) == 0L) {
    return(list(error = "empty", task_class = paste(class(task), collapse = "/")))
  }
  data = task$data(rows = row_ids, cols = columns)
  data = as.list(data)[columns]
  list(error = NULL, columns = columns, info = lapply(data, bridge_column_info),
    n_rows = length(row_ids), n_data = length(data[[1L]]))
}

bridge_column_info = function(x) {
  kind = if (is.factor(x)) {
    "factor"
  } else if (inherits(x, "Date")) {
    "Date"
  } else if (inherits(x, "POSIXct")) {
    "POSIXct"
  } else if (is.object(x) || !is.null(dim(x)) || !is.atomic(x)) {
    "other"
  } else {
    typeof(x)
  }
  values = switch(kind,
    factor = as.integer(x),
    Date = ,
    POSIXct = as.double(unclass(x)),
    other = NULL,
    x)
  list(
    kind = kind,
    class = paste(class(x), collapse = "/"),
    first_na = if (kind != "other" && anyNA(x)) which.max(is.na(x)) else 0L,
    levels = if (is.factor(x)) levels(x) else NULL,
    ordered = is.ordered(x),
    values = values
  )
}

bridge_task_strata_captured = function(task) {
  bridge_call_capturing(bridge_task_strata, list(task))
}

# batch_count_table() for Python: batches arrive as `flat` 1-based positions
# and batch `sizes`; positions outside the strata are refused in the Python
# face's 0-based terms before R's own (1-based) check could word them.
# The counts travel as one integer vector (row-major) plus the labels.
bridge_batch_count_table = function(strata, flat, sizes) {
  bridge_call_capturing(function() {
    n_rows = encode_strata(strata)$n_rows
    if (length(flat) && (min(flat) < 1L || max(flat) > n_rows)) {
      abort_value("batches", sprintf(paste0(
        "batches must hold row positions in 0..%d (0-based, as pystratum returns them), ",
        "got values from %d to %d."), n_rows - 1L, min(flat) - 1L, max(flat) - 1L))
    }
    batches = unname(split(flat, factor(rep.int(seq_along(sizes), sizes),
      levels = seq_along(sizes))))
    counts = batch_count_table(strata, batches)
    list(counts = as.integer(t(unclass(counts))), labels = colnames(counts),
      n_batches = nrow(counts))
  }, list())
}

# negative_pair_batches() for Python: every column of every batch
# concatenated, plus the batch sizes (one transfer for the whole epoch).
bridge_negative_pair_batches = function(...) {
  outcome = bridge_call_capturing(negative_pair_batches, list(...))
  batches = outcome[["value"]]
  if (is.null(outcome[["error"]])) {
    outcome[["value"]] = NULL
    column = function(name) unlist(lapply(batches, `[[`, name), use.names = FALSE)
    outcome[["sizes"]] = vapply(batches, nrow, integer(1L))
    for (name in c("positive", "user", "item", "label", "log_q", "weight")) {
      outcome[[name]] = column(name)
    }
  }
  outcome
}
