# Label matrices: rows x labels of 0/1, the input of multi-label policies.
# The twin of pystratum/strata/_label_matrix.py: the same checks in the same
# order (missing cells first, then other values; the first by row, then by
# column) and the same words, rows 1-based here.

LABEL_FIX_VALUE = "Recode it first: 1 where the row has the label, 0 where it does not."
LABEL_FIX_MISSING = paste0("A label matrix holds 0 or 1 in every cell: fill it (0 where the ",
  "row does not have the label) or drop the row.")

#' Read a label matrix
#'
#' Turns multi-label input into a logical matrix, rows x labels, `TRUE` where
#' the row has the label. Every cell must be 0 or 1 (or `TRUE`/`FALSE`): a
#' missing value or any other value is an error naming the argument, the
#' value, the first such cell (lowest row, then lowest column; rows 1-based)
#' and the fix, worded as in the Python package (rows 0-based there).
#'
#' @param labels (`matrix` | `data.frame`)\cr A logical, integer or double
#'   matrix, or a data.frame of logical, integer or double columns, holding
#'   only 0 and 1. Label names come from the column names; unnamed columns
#'   are named by their 0-based position as text (`"0"`, `"1"`, ...), as the
#'   Python package names them, so both languages give the same names.
#' @return A logical matrix with one column per label and the label names as
#'   column names.
#' @examples
#' label_matrix(data.frame(cat = c(1, 0, 1), dog = c(0, 0, 1)))
#' @export
label_matrix = function(labels) {
  read_label_matrix(labels, "labels")
}

# The one label-matrix reader: label_matrix() and policy_multi_label()'s
# stratified_batches() (errors blaming "strata") both read through it, as
# every Python face reads through pystratum.label_matrix().
read_label_matrix = function(labels, name) {
  if (is.data.frame(labels)) {
    check_label_shape(dim(labels), name)
    names = names(labels)
    columns = as.list(labels)
    factors = vapply(columns, is.factor, logical(1L))
    columns[factors] = lapply(columns[factors], as.character)
  } else if (is.matrix(labels) || is.array(labels)) {
    check_label_shape(dim(labels), name)
    names = colnames(labels)
    # A logical or numeric matrix is checked whole (plain_label_cells()); other
    # types column by column, as a data.frame.
    columns = if (is_plain_label_vector(labels)) NULL else
      lapply(seq_len(ncol(labels)), function(k) labels[, k])
  } else if (is.atomic(labels) && !is.null(labels)) {
    check_label_shape(length(labels), name)
  } else {
    abort_type(name, sprintf(paste0("%s must be a label matrix (a matrix or data.frame of 0/1 ",
      "or TRUE/FALSE), got an object of class %s. For label sets per row use ",
      "label_matrix_from_sets()."), name, class(labels)[[1L]]))
  }
  if (is.null(names)) {
    names = as.character(seq_len(if (is.null(columns)) ncol(labels) else length(columns)) - 1L)
  }
  names = as.character(names)
  duplicated_name = anyDuplicated(names)
  if (duplicated_name > 0L) {
    first = match(names[[duplicated_name]], names)
    abort_value(name, sprintf(paste0("%s has two columns named '%s' (positions %d and %d, ",
      "1-based); label names must be distinct."), name, names[[duplicated_name]], first,
      duplicated_name))
  }
  if (is.null(columns)) {
    checked = plain_label_cells(labels, nrow(labels), function(k) labels[, k], names, name)
    attributes(checked) = list(dim = dim(labels), dimnames = list(NULL, names))
    return(checked)
  }
  checked = check_label_columns(columns, names, name)
  matrix(checked, nrow = length(columns[[1L]]), dimnames = list(NULL, names))
}

# Logical, integer or double, without a class (a class may give `==` its own meaning,
# e.g. bit64's integer64): such cells are checked in whole-vector passes.
is_plain_label_vector = function(x) {
  typeof(x) %in% c("logical", "integer", "double") && !is.object(x)
}

# The cells of a logical or numeric label matrix (`cells`: the matrix, or its columns
# unlisted), checked in whole-matrix passes instead of a loop over columns: the same
# checks in the same order, and the same words, as check_label_columns() (the first
# bad cell by row, then column: the first row holding one, then its first column).
# `column(k)` is label k's column as given, which the messages quote. Logical cells
# are never bad (unlisted with numbers they become 0/1). Returns the cells == 1.
plain_label_cells = function(cells, n_rows, column, names, name) {
  if (is.null(dim(cells))) dim(cells) = c(n_rows, length(cells) %/% n_rows)
  if (anyNA(cells)) {
    missing = is.na(cells)
    row = which.max(rowSums(missing) > 0)
    k = which.max(missing[row, ])
    abort_value(name, sprintf("%s has a missing value (%s) at row %d (1-based) in label '%s'. %s",
      name, label_value_text(column(k)[[row]]), row, names[[k]], LABEL_FIX_MISSING))
  }
  ones = cells == 1
  valid = if (is.logical(cells)) {
    TRUE
  } else if (is.integer(cells)) {
    limits = range(cells)  # whole numbers from 0 to 1 are 0 or 1: one pass, no copy
    limits[[1L]] >= 0L && limits[[2L]] <= 1L
  } else {
    sum(ones) + sum(cells == 0) == length(cells)
  }
  if (!valid) {
    zeros = cells == 0
    row = which.max(rowSums(ones) + rowSums(zeros) < ncol(cells))
    k = which.max(!(ones[row, ] | zeros[row, ]))
    abort_value(name, sprintf(paste0("%s must hold only 0 and 1 (or booleans), got %s at row %d ",
      "(1-based) in label '%s'. %s"), name, label_value_text(column(k)[[row]]), row, names[[k]],
      LABEL_FIX_VALUE))
  }
  attributes(ones) = NULL
  ones
}

check_label_shape = function(shape, name) {
  if (length(shape) != 2L) {
    shown = paste(shape, collapse = ", ")
    if (length(shape) == 1L) {
      abort_value(name, sprintf(paste0("%s must be 2-D (rows x labels), got a vector of length ",
        "%s (1-D). For one label pass it as one column (matrix(%s, ncol = 1)); for one label per ",
        "row as a class, use a single-label policy; for label sets per row use ",
        "label_matrix_from_sets()."), name, shown, name))
    }
    abort_value(name, sprintf(paste0("%s must be 2-D (rows x labels), got an array of shape ",
      "(%s). Reshape it to one row per data row and one column per label."), name, shown))
  }
  if (shape[[1L]] == 0L) {
    abort_value(name, sprintf("%s has 0 rows; pass one row per data row, one column per label.",
      name))
  }
  if (shape[[2L]] == 0L) {
    abort_value(name, sprintf("%s has 0 columns; pass at least one label column.", name))
  }
}

# A cell's value as both languages print it (C's "%.15g" for doubles).
label_value_text = function(value) {
  if (is.logical(value)) {
    return(if (is.na(value)) "NA" else if (value) "TRUE" else "FALSE")
  }
  if (is.double(value)) {
    if (is.nan(value)) return("NaN")
    if (is.na(value)) return("NA")
    if (is.infinite(value)) return(if (value > 0) "Inf" else "-Inf")
    return(sprintf("%.15g", value))
  }
  if (is.na(value)) "NA" else as.character(value)
}

# The first (row, column) of a list of per-column logical masks, by row then column.
first_label_cell = function(masks) {
  flagged = vapply(masks, any, logical(1L))
  if (!any(flagged)) {
    return(NULL)
  }
  rows = rep(NA_integer_, length(masks))
  rows[flagged] = vapply(masks[flagged], which.max, integer(1L))
  col = which(rows == min(rows, na.rm = TRUE))[[1L]]
  c(rows[[col]], col)
}

check_label_columns = function(columns, names, name) {
  n_rows = length(columns[[1L]])
  # Builtins over the columns (no R closure per column): with 10^4 label columns a
  # per-column closure would cost more than the cells' passes.
  plain = vapply(columns, typeof, "") %in% c("logical", "integer", "double") &
    !vapply(columns, is.object, logical(1L)) & lengths(lapply(columns, dim)) == 0L &
    lengths(columns) == n_rows
  if (all(plain)) {
    # Plain vectors of one length: one unlisted vector, checked in whole passes.
    return(plain_label_cells(unlist(columns, use.names = FALSE), n_rows,
                             function(k) columns[[k]], names, name))
  }
  cell = first_label_cell(lapply(columns, is.na))
  if (!is.null(cell)) {
    value = columns[[cell[[2L]]]][[cell[[1L]]]]
    abort_value(name, sprintf("%s has a missing value (%s) at row %d (1-based) in label '%s'. %s",
      name, label_value_text(value), cell[[1L]], names[[cell[[2L]]]], LABEL_FIX_MISSING))
  }
  kinds = unname(c(logical = "logical", character = "text", integer = "number",
                   double = "number")[vapply(columns, typeof, "")])
  kinds[is.na(kinds)] = "other"
  other = which(kinds == "other")
  if (length(other)) {
    k = other[[1L]]
    abort_type(name, sprintf(paste0("%s must hold 0/1 numbers or booleans, got a column of ",
      "type %s in label '%s'. %s"), name, class(columns[[k]])[[1L]], names[[k]], LABEL_FIX_VALUE))
  }
  bad = lapply(seq_along(columns), function(k) {
    column = columns[[k]]
    switch(kinds[[k]], logical = rep(FALSE, length(column)), text = rep(TRUE, length(column)),
      number = column != 0 & column != 1)
  })
  cell = first_label_cell(bad)
  if (!is.null(cell)) {
    row = cell[[1L]]
    k = cell[[2L]]
    value = columns[[k]][[row]]
    if (kinds[[k]] == "text") {
      abort_type(name, sprintf(paste0("%s must hold 0/1 numbers or booleans, got the text '%s' ",
        "at row %d (1-based) in label '%s'. Convert the column to numbers first."), name, value,
        row, names[[k]]))
    }
    abort_value(name, sprintf(paste0("%s must hold only 0 and 1 (or booleans), got %s at row %d ",
      "(1-based) in label '%s'. %s"), name, label_value_text(value), row, names[[k]],
      LABEL_FIX_VALUE))
  }
  unlist(lapply(columns, function(column) column == 1), use.names = FALSE)
}

#' Build a label matrix from each row's labels
#'
#' @param label_sets (`list`)\cr One entry per row: a character (or numeric,
#'   logical, factor) vector of the row's labels; `character(0)` is a row
#'   without labels (`NULL`, a missing row, is an error, as Python's None);
#'   a label listed twice in a row counts once.
#' @param labels (`character` | `NULL`)\cr The label columns, in order;
#'   `NULL` means every label that occurs, sorted by its text (code point
#'   order, in every locale, as Python sorts).
#' @return A logical matrix, rows x labels, `TRUE` exactly where the row's
#'   set holds the label; the column names are the labels as text.
#'   `pystratum.label_matrix_from_sets()` in Python gives the same names in
#'   the same order.
#' @examples
#' label_matrix_from_sets(list(c("b", "a"), character(0), "c"))
#' @export
label_matrix_from_sets = function(label_sets, labels = NULL) {
  name = "label_sets"
  if (!is.list(label_sets) || is.data.frame(label_sets)) {
    abort_type(name, sprintf(paste0("%s must be a list with one set of labels per row, got an ",
      "object of class %s. Pass a list, e.g. list(c(\"a\", \"b\"), character(0), \"b\")."), name,
      class(label_sets)[[1L]]))
  }
  if (length(label_sets) == 0L) {
    abort_value(name, sprintf("%s has 0 rows; pass one set of labels per data row.", name))
  }
  sets = vector("list", length(label_sets))
  kinds = character(length(label_sets))
  for (row in seq_along(label_sets)) {
    entry = label_sets[[row]]
    if (is.null(entry)) {
      # A missing row, as Python's None: refused, not read as a row without labels.
      abort_type(name, sprintf(paste0("%s must hold one vector of labels per row, got NULL at ",
        "row %d (1-based). Pass character(0) for a row without labels."), name, row))
    }
    if (!is.atomic(entry)) {
      abort_type(name, sprintf(paste0("%s must hold one vector of labels per row, got an object ",
        "of class %s at row %d (1-based). Pass a character vector (character(0) for a row ",
        "without labels)."), name, class(entry)[[1L]], row))
    }
    text = if (is.factor(entry)) as.character(entry) else if (is.logical(entry))
      ifelse(entry, "TRUE", "FALSE") else as.character(entry)
    if (anyNA(entry)) {
      missing = entry[is.na(entry)][[1L]]
      abort_value(name, sprintf(paste0("%s has a missing label (%s) at row %d (1-based). Leave it ",
        "out of the row's set (an empty set is a row without labels)."), name,
        label_value_text(missing), row))
    }
    sets[[row]] = unique(text)
    kinds[[row]] = label_kind(entry)
  }
  check_label_spellings(sets, kinds, name, by_text = is.null(labels))
  if (is.null(labels)) {
    columns = sort(unique(unlist(sets, use.names = FALSE)), method = "radix")
    if (length(columns) == 0L) {
      abort_value(name, sprintf(paste0("%s holds no label in any of its %d rows; pass labels to ",
        "name the label columns (each then all 0)."), name, length(sets)))
    }
  } else {
    if (!is.atomic(labels) || anyNA(labels)) {
      abort_type("labels", "labels must be a character vector of label names, without NA.")
    }
    columns = as.character(labels)
    # Labels match the sets' labels by value, as in Python (1 is not "1", TRUE is 1).
    column_keys = label_keys(columns, label_kind(labels))
    if (length(columns) == 0L) {
      abort_value("labels", paste0("labels is empty; pass at least one label, or labels = NULL ",
        "for every label that occurs."))
    }
    twice = anyDuplicated(columns)
    if (twice > 0L) {
      abort_value("labels", sprintf(paste0("labels holds two labels with the text '%s'; label ",
        "names must be distinct."), columns[[twice]]))
    }
  }
  check_label_cells(length(sets), length(columns), sum(lengths(sets)), name, "label sets")
  out = matrix(FALSE, nrow = length(sets), ncol = length(columns),
    dimnames = list(NULL, columns))
  for (row in seq_along(sets)) {
    position = if (is.null(labels)) match(sets[[row]], columns) else
      match(label_keys(sets[[row]], kinds[[row]]), column_keys)
    unknown = which(is.na(position))
    if (length(unknown)) {
      # The first unknown by text: a set has no order of its own (Python says the same one).
      abort_value(name, sprintf(paste0("%s has the label '%s' at row %d (1-based), which labels ",
        "does not list. Add it to labels, or drop it from the row."), name,
        sort(sets[[row]][unknown], method = "radix")[[1L]], row))
    }
    out[row, position] = TRUE
  }
  out
}

label_kind = function(x) {
  if (is.logical(x)) "logical" else
    if ((is.integer(x) || is.double(x)) && !is.factor(x)) "number" else "text"
}

# Labels as Python compares them: a key per label from its text and kind, equal
# exactly when Python's == says so (TRUE is 1, FALSE is 0, 1 is not "1").
label_keys = function(text, kind) {
  kind = rep_len(kind, length(text))
  ifelse(kind == "text", paste0("t:", text), ifelse(kind == "logical",
    ifelse(text == "TRUE", "n:1", "n:0"), paste0("n:", text)))
}

# A label matrix built from label sets may have at most max(2^28, 16 x the labels
# listed) cells, checked before it is allocated (Python's check_label_cells(), the
# same words; the estimate is one byte a cell, as Python's bool matrix).
LABEL_CELLS_MAX = 2^28
LABEL_GROWTH_MAX = 16

check_label_cells = function(n_rows, n_labels, listed, name, what) {
  cells = as.double(n_rows) * n_labels
  limit = max(LABEL_CELLS_MAX, LABEL_GROWTH_MAX * listed)
  if (cells <= limit) {
    return(invisible(NULL))
  }
  count = function(x) format(x, big.mark = ",", scientific = FALSE, trim = TRUE)
  abort_value(name, sprintf(paste0("%s makes a label matrix of %s rows x %s labels from %s ",
    "listing %s labels: %s cells, about %s GiB at one byte a cell. A label matrix built from ",
    "label sets or a sparse matrix may have at most max(2**28, 16 x the labels listed) = %s ",
    "cells. Keep the labels that matter (e.g. the frequent ones, labels=[...]) or merge rare ",
    "ones; a label every row has alone is an id, not a label."), name, count(n_rows),
    count(n_labels), what, count(listed), count(cells),
    formatC(cells / 2^30, format = "f", digits = 1, big.mark = ","), count(limit)))
}

# Labels are compared as Python compares them, so that both languages refuse
# the same label sets: 1 and "1" (TRUE and "TRUE") are two labels Python cannot
# name apart, and TRUE and 1 (FALSE and 0) one label written two ways. `kinds`:
# per row "logical", "number" or "text" (a row is one atomic vector). As in
# Python, the label that stands for equal labels is the first one seen, the
# columns' texts are checked first (when they come from the sets, `by_text`),
# then every label against the first spelling of its value.
check_label_spellings = function(sets, kinds, name, by_text) {
  text = unlist(sets, use.names = FALSE)
  value = label_keys(text, rep(kinds, lengths(sets)))
  first = match(value, value)
  if (by_text) {
    shown = text[unique(first)]
    twice = shown[duplicated(shown)]
    if (length(twice)) {
      abort_value(name, sprintf(paste0("%s holds two labels with the text '%s'; label names ",
        "must be distinct."), name, sort(unique(twice), method = "radix")[[1L]]))
    }
  }
  respelled = which(text != text[first])
  if (length(respelled)) {
    at = respelled[[1L]]
    abort_value(name, sprintf(paste0("%s holds labels that are equal in Python but read '%s' ",
      "and '%s' (e.g. 0 and False); use one spelling for each label."), name,
      text[[first[[at]]]], text[[at]]))
  }
}
