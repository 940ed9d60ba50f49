# Turn whatever the user calls "strata" into one integer code per row.
#
# Every distinct combination of column values is one stratum; only values
# that occur are strata (unused factor levels are not). Only the partition of
# the rows matters to the allocation, so renaming or reordering labels never
# changes the batches. Codes are numbered in sorted label order (factor level
# order for factors, C-locale order for strings, lexicographic over columns
# for several columns) so that "the first smallest stratum" named in warnings
# is the same stratum the Python core names.

# An integer column whose value range is at most this many times the row
# count is coded by offset (linear time) instead of by sorting its values.
DENSE_RANGE_FACTOR = 4

encode_strata = function(strata, name = "strata") {
  columns = strata_columns(strata, name)
  n_rows = length(columns[[1L]])
  if (n_rows == 0L) {
    abort_value(name, sprintf(
      "%s is empty (0 rows); pass one stratum label per row of the data set.", name))
  }
  check_missing(columns, name)
  coded = lapply(columns, encode_column)
  codes = coded[[1L]]$codes
  n_codes = coded[[1L]]$n_codes
  for (k in seq_along(coded)[-1L]) {
    combined = combine_codes(codes, n_codes, coded[[k]]$codes, coded[[k]]$n_codes)
    codes = combined$codes
    n_codes = combined$n_codes
  }
  sizes = tabulate(codes, n_codes)
  list(codes = codes, sizes = sizes, n_rows = n_rows, columns = columns)
}

# The columns of `strata` as a named list of plain atomic vectors (or
# factors) of equal length. The accepted forms, as in the Python core:
# an atomic vector or factor (one column), a data.frame / data.table, a
# matrix (rows x variables), or a list of equal-length atomic vectors (the
# columns). Anything else, and anything whose rows cannot be told apart
# (matrix or list columns, unequal lengths, arrays of 3 or more
# dimensions, tables of counts), is a classed error: never NA positions.
strata_columns = function(strata, name) {
  check_strata_container(strata, name)
  if (is.matrix(strata)) {
    strata = as.data.frame(strata, stringsAsFactors = FALSE)
  }
  if (is.data.frame(strata) || (is.list(strata) && !inherits(strata, "POSIXlt"))) {
    columns = as.list(strata)
    if (length(columns) == 0L) {
      abort_value(name, sprintf(
        "%s is a %s with zero columns; pass at least one stratum column.", name,
        if (is.data.frame(strata)) "data.frame" else "list"))
    }
    labels = names(columns)
    if (is.null(labels)) labels = rep("", length(columns))
    names(columns) = ifelse(nzchar(labels) & !is.na(labels),
      sprintf("%s$%s", name, labels), sprintf("%s[[%d]]", name, seq_along(columns)))
    for (k in seq_along(columns)) {
      column = columns[[k]]
      if (length(dim(column)) >= 2L) {
        abort_type(name, sprintf(paste0(
          "%s is a %s with %d columns inside the %s, so its rows cannot be told apart from ",
          "its values. Pass each stratum variable as its own column (e.g. cbind its columns ",
          "into the data.frame, or as.data.frame() it first)."), names(columns)[[k]],
          if (is.data.frame(column)) "data.frame" else "matrix", NCOL(column),
          if (is.data.frame(strata)) "data.frame" else "list"))
      }
      columns[k] = list(as_label_vector(column, names(columns)[[k]], name))
    }
    lengths = lengths(columns)
    n_rows = if (is.data.frame(strata)) nrow(strata) else lengths[[1L]]
    if (any(lengths != n_rows)) {
      abort_value(name, sprintf(paste0(
        "%s columns must all have the same length (one label per row), got %s. ",
        "Pass columns of equal length, e.g. data.frame(...), which checks this."), name,
        paste(sprintf("%s: %d", names(columns), lengths), collapse = ", ")))
    }
    return(columns)
  }
  columns = list(as_label_vector(strata, name, name))
  names(columns) = name
  columns
}

# Refusals that need the whole object, with the fix for each.
check_strata_container = function(strata, name) {
  if (inherits(strata, "Task")) {
    abort_type(name, sprintf(paste0(
      "%s is an mlr3 Task (class %s); stratified_batches() needs the stratum labels. Pass ",
      "%s = task$data(cols = task$col_roles$stratum) (positions then follow task$row_ids), ",
      "or use batch_sampler_stratified() with the task's stratum column role for mlr3torch."),
      name, paste(class(strata), collapse = "/"), name))
  }
  if (inherits(strata, "table")) {
    abort_type(name, sprintf(paste0(
      "%s is a table of counts (class 'table'), not one label per row. Pass the labels that ",
      "were tabulated (e.g. the column given to table()), one per row of the data set."),
      name))
  }
  if (length(dim(strata)) > 2L) {
    abort_value(name, sprintf(paste0(
      "%s must be 1-D (one label per row) or 2-D (one column per stratum variable), got an ",
      "array with dim c(%s). Pass a vector, a matrix or a data.frame."), name,
      paste(dim(strata), collapse = ", ")))
  }
  if (is.null(strata) || (!is.atomic(strata) && !is.list(strata))) {
    abort_type(name, sprintf(paste0(
      "%s must be an atomic vector or factor with one label per row, a data.frame, a ",
      "matrix, or a list of equal-length vectors (one per stratum variable), got an object ",
      "of type %s."), name, type_name(strata)))
  }
  invisible(NULL)
}

# Factors, logicals, integers, doubles (including Date, POSIXct and difftime,
# compared by their numeric value), complex numbers and strings are labels;
# POSIXlt becomes POSIXct (same instants); bit64::integer64 is read by value.
# Anything else is an error.
as_label_vector = function(x, name, argument) {
  if (is.factor(x)) {
    return(x)
  }
  if (inherits(x, "POSIXlt")) {
    x = as.POSIXct(x)
  }
  if (inherits(x, "integer64")) {
    return(integer64_labels(x, name, argument))
  }
  if (!is.atomic(x) || is.null(x) ||
    !(typeof(x) %in% c("logical", "integer", "double", "complex", "character"))) {
    abort_type(argument, sprintf(paste0(
      "%s has labels of type %s, which cannot be stratum labels; use integers, doubles, ",
      "strings, logicals or factors (one label per row)."), name, type_name(x)))
  }
  if (is.object(x) || !is.null(dim(x)) || !is.null(attributes(x))) {
    # Dates, times and durations are compared by value; messages still print them as
    # dates (stratum_label() restores the class from "shown_as").
    shown = if (inherits(x, c("Date", "POSIXct", "difftime"))) {
      list(class = oldClass(x), tzone = attr(x, "tzone"), units = attr(x, "units"))
    }
    x = as.vector(unclass(x))
    if (!is.null(shown)) attr(x, "shown_as") = shown
  }
  x
}

# bit64::integer64 stores 64-bit integers in the bits of doubles, so the
# doubles themselves must never be compared. Read the values: exactly as
# doubles when every value is below 2^53 in magnitude, otherwise as their
# decimal text (equal text if and only if equal value). NA stays NA.
integer64_labels = function(x, name, argument) {
  if (!requireNamespace("bit64", quietly = TRUE)) {
    abort_type(argument, sprintf(paste0(
      "%s holds bit64::integer64 labels, but the bit64 package is not installed to read ",
      "them. Install bit64, or convert the labels first: as.character(x), or as.numeric(x) ",
      "when every value is below 2^53 in magnitude."), name))
  }
  text = as.character(x)
  values = as.double(text)
  exact = is.na(values) | abs(values) < 2^53
  if (all(exact)) values else text
}

check_missing = function(columns, name) {
  first_rows = vapply(columns, function(column) {
    if (anyNA(column)) which.max(is.na(column)) else NA_integer_
  }, integer(1L))
  if (all(is.na(first_rows))) {
    return(invisible(NULL))
  }
  k = which.min(first_rows)
  row = first_rows[[k]]
  value = columns[[k]][[row]]
  shown = if (is.double(value) && is.nan(value)) "NaN" else "NA"
  abort_value(name, sprintf(paste0(
    "%s has a missing value at row %d (1-based): %s. Every row needs a stratum: fill the ",
    "missing labels (e.g. with their own 'missing' level) or drop those rows before batching."),
    names(columns)[[k]], row, shown))
}

# list(codes = integer 1..n_codes in sorted label order, n_codes); every code
# in 1..n_codes occurs.
encode_column = function(x) {
  if (is.factor(x)) {
    return(compact_codes(as.integer(x), nlevels(x)))
  }
  if (is.logical(x)) {
    return(compact_codes(as.integer(x) + 1L, 2L))
  }
  n = length(x)
  if (is.complex(x)) {
    # Equal complex numbers are equal real and imaginary parts: two columns.
    re = encode_column(Re(x))
    im = encode_column(Im(x))
    return(combine_codes(re$codes, re$n_codes, im$codes, im$n_codes))
  }
  if (is.numeric(x)) {
    lo = min(x)
    span = as.double(max(x)) - lo + 1
    # span is NaN when every value is Inf (Inf - Inf): then not dense.
    dense = is.finite(span) && span <= DENSE_RANGE_FACTOR * n + 1024 &&
      (is.integer(x) || all(x == trunc(x)))
    if (dense) {
      return(compact_codes(as.integer(x - lo) + 1L, as.integer(span)))
    }
  }
  # Strings sort in C-locale (byte) order, the same order Python sorts them.
  values = sort(unique(x), method = "radix")
  list(codes = match(x, values), n_codes = length(values))
}

compact_codes = function(codes, n_codes) {
  present = tabulate(codes, n_codes) > 0L
  if (all(present)) {
    return(list(codes = codes, n_codes = n_codes))
  }
  new_code = cumsum(present)
  list(codes = new_code[codes], n_codes = sum(present))
}

# Codes of every distinct (a, b) pair, in lexicographic (a, b) order.
combine_codes = function(a, n_a, b, n_b) {
  n = length(a)
  n_pairs = as.double(n_a) * n_b
  if (n_pairs <= min(DENSE_RANGE_FACTOR * n + 1024, .Machine$integer.max)) {
    return(compact_codes((a - 1L) * n_b + b, as.integer(n_pairs)))
  }
  # Too many possible pairs for a table: sort rows by (a, b), number the runs.
  o = order(a, b, method = "radix")
  a_sorted = a[o]
  b_sorted = b[o]
  starts = c(TRUE, a_sorted[-1L] != a_sorted[-n] | b_sorted[-1L] != b_sorted[-n])
  codes = integer(n)
  codes[o] = cumsum(starts)
  list(codes = codes, n_codes = sum(starts))
}

# The label of stratum `code`, for messages: 'a' for strings and factors,
# numbers and TRUE/FALSE as they print, ('a', 1) for several columns.
stratum_label = function(encoded, code) {
  row = match(code, encoded$codes)
  parts = vapply(encoded$columns, function(column) {
    value = column[[row]]
    shown = attr(column, "shown_as")
    if (!is.null(shown)) {
      value = format(structure(value, class = shown$class, tzone = shown$tzone,
        units = shown$units))
      return(sprintf("'%s'", value))
    }
    if (is.factor(column)) value = as.character(value)
    if (is.character(value)) sprintf("'%s'", value) else format(value, digits = 15L)
  }, character(1L))
  parts = unname(parts)
  if (length(parts) == 1L) parts else sprintf("(%s)", paste(parts, collapse = ", "))
}

first_appearance_turn = function(encoded) {
  order(match(seq_along(encoded$sizes), encoded$codes))
}
