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

# The columns of `strata` as a named list of plain atomic vectors.
strata_columns = function(strata, name) {
  if (is.matrix(strata)) {
    strata = as.data.frame(strata, stringsAsFactors = FALSE)
  }
  if (is.data.frame(strata)) {
    if (length(strata) == 0L) {
      abort_value(name, sprintf(
        "%s is a data.frame with zero columns; pass at least one stratum column.", name))
    }
    columns = as.list(strata)
    labels = names(strata)
    if (is.null(labels)) labels = rep("", length(columns))
    names(columns) = ifelse(nzchar(labels) & !is.na(labels),
      sprintf("%s$%s", name, labels), sprintf("%s[[%d]]", name, seq_along(columns)))
    for (column_name in names(columns)) {
      columns[[column_name]] = as_label_vector(columns[[column_name]], column_name, name)
    }
    return(columns)
  }
  if (is.null(strata) || is.list(strata)) {
    abort_type(name, sprintf(paste0(
      "%s must be an atomic vector or factor with one label per row, or a data.frame with ",
      "one column per stratum variable, got an object of type %s. ",
      "For several columns use data.frame(...)."), name, type_name(strata)))
  }
  columns = list(as_label_vector(strata, name, name))
  names(columns) = name
  columns
}

# Factors, logicals, integers, doubles (including Date/POSIXct, compared by
# their numeric value) and strings are labels; anything else is an error.
as_label_vector = function(x, name, argument) {
  if (is.factor(x)) {
    return(x)
  }
  if (!is.atomic(x) || !(typeof(x) %in% c("logical", "integer", "double", "character"))) {
    abort_type(argument, sprintf(paste0(
      "%s has labels of type %s, which cannot be stratum labels; ",
      "use integers, doubles, strings, logicals or factors."), name, type_name(x)))
  }
  if (is.object(x) || !is.null(dim(x))) {
    x = as.vector(unclass(x))
  }
  x
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
  if (is.numeric(x)) {
    lo = min(x)
    span = as.double(max(x)) - lo + 1
    dense = span <= DENSE_RANGE_FACTOR * n + 1024 && (is.integer(x) || all(x == trunc(x)))
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
    if (is.factor(column)) value = as.character(value)
    if (is.character(value)) sprintf("'%s'", value) else format(value, digits = 15L)
  }, character(1L))
  parts = unname(parts)
  if (length(parts) == 1L) parts else sprintf("(%s)", paste(parts, collapse = ", "))
}
