test_that("label_matrix reads 0/1 matrices and data.frames with their names", {
  m = label_matrix(data.frame(cat = c(1, 0, 1), dog = c(FALSE, FALSE, TRUE)))
  expect_identical(m, matrix(c(TRUE, FALSE, TRUE, FALSE, FALSE, TRUE), 3,
    dimnames = list(NULL, c("cat", "dog"))))
  unnamed = label_matrix(matrix(c(1L, 0L, 0L, 1L), 2))
  expect_identical(colnames(unnamed), c("0", "1"))
})

test_that("label_matrix refuses missing cells first, then other values, by row then column", {
  expect_error(label_matrix(matrix(c(2, 0, 1, NA), 2)),
    "missing value \\(NA\\) at row 2 \\(1-based\\) in label '1'", class = "pystratum_value_error")
  expect_error(label_matrix(matrix(c(0, 0.5, 1, 3), 2)),
    "got 0.5 at row 2 \\(1-based\\) in label '0'", class = "pystratum_value_error")
  expect_error(label_matrix(matrix(c(0, 0, 1, -1), 2)),
    "got -1 at row 2 \\(1-based\\) in label '1'", class = "pystratum_value_error")
  expect_error(label_matrix(data.frame(a = c(0, 1), b = c("1", "0"))),
    "got the text '1' at row 1", class = "pystratum_type_error")
  err = tryCatch(label_matrix(matrix(c(0, Inf), 1)), error = identity)
  expect_identical(err$argument, "labels")
  expect_match(conditionMessage(err), "got Inf at row 1")
})

test_that("label_matrix refuses shapes that are not rows x labels", {
  expect_error(label_matrix(c(0, 1)), "must be 2-D \\(rows x labels\\).*\\(1-D\\)",
    class = "pystratum_value_error")
  expect_error(label_matrix(matrix(numeric(0), 0, 2)), "has 0 rows", class = "pystratum_value_error")
  expect_error(label_matrix(matrix(numeric(0), 2, 0)), "has 0 columns",
    class = "pystratum_value_error")
  expect_error(label_matrix(array(0, c(2, 2, 2))), "must be 2-D", class = "pystratum_value_error")
  expect_error(label_matrix(NULL), "must be a label matrix", class = "pystratum_type_error")
  expect_error(label_matrix(list(a = 1)), "must be a label matrix", class = "pystratum_type_error")
})

test_that("label_matrix_from_sets builds the matrix with labels sorted by text", {
  m = label_matrix_from_sets(list(c("b", "a", "b"), character(0), character(0), "C"))
  expect_identical(colnames(m), c("C", "a", "b"))
  expect_identical(unname(m[1, ]), c(FALSE, TRUE, TRUE))
  expect_false(any(m[2:3, ]))
  given = label_matrix_from_sets(list("b", c("c", "b")), labels = c("c", "b", "x"))
  expect_identical(colnames(given), c("c", "b", "x"))
  expect_identical(unname(given[2, ]), c(TRUE, TRUE, FALSE))
  expect_error(label_matrix_from_sets(list("b", c("z", "q")), labels = "b"),
    "label 'q' at row 2 \\(1-based\\), which labels does not list", class = "pystratum_value_error")
  expect_error(label_matrix_from_sets(list(character(0))), "holds no label",
    class = "pystratum_value_error")
  expect_error(label_matrix_from_sets(list("a", NULL)), "got NULL at row 2 \\(1-based\\)",
    class = "pystratum_type_error")
  expect_error(label_matrix_from_sets(list(c("a", NA))), "missing label \\(NA\\) at row 1",
    class = "pystratum_value_error")
  expect_error(label_matrix_from_sets(list()), "has 0 rows", class = "pystratum_value_error")
  expect_error(label_matrix_from_sets("a"), "must be a list", class = "pystratum_type_error")
  expect_error(label_matrix_from_sets(list(list("a"))), "one vector of labels per row",
    class = "pystratum_type_error")
})

test_that("label_matrix_from_sets compares labels as Python does (1 is not '1', TRUE is 1)", {
  blame = function(expr) tryCatch({expr; "ok"}, pystratum_value_error = function(e) {
    c(e$argument, conditionMessage(e))
  })
  expect_identical(blame(label_matrix_from_sets(list(1, "1"))), c("label_sets",
    "label_sets holds two labels with the text '1'; label names must be distinct."))
  expect_identical(blame(label_matrix_from_sets(list(TRUE, "TRUE")))[[2L]],
    "label_sets holds two labels with the text 'TRUE'; label names must be distinct.")
  expect_match(blame(label_matrix_from_sets(list(TRUE, 1)))[[2L]],
    "equal in Python but read 'TRUE' and '1'", fixed = TRUE)
  expect_match(blame(label_matrix_from_sets(list(0, FALSE)))[[2L]],
    "equal in Python but read '0' and 'FALSE'", fixed = TRUE)
  expect_match(blame(label_matrix_from_sets(list(1, 2), c("1", "2")))[[2L]],
    "has the label '1' at row 1 (1-based), which labels does not list", fixed = TRUE)
  expect_identical(colnames(label_matrix_from_sets(list(1, 1L, 2))), c("1", "2"))
  expect_identical(colnames(label_matrix_from_sets(list(1, 2), c(1, 2))), c("1", "2"))
})

test_that("label_matrix_from_sets sizes the matrix before allocating it", {
  error = tryCatch(label_matrix_from_sets(as.list(paste0("id", seq_len(20000)))),
    pystratum_value_error = identity)
  expect_identical(error$argument, "label_sets")
  expect_match(conditionMessage(error), paste0("^label_sets makes a label matrix of 20,000 rows ",
    "x 20,000 labels from label sets listing 20,000 labels: 400,000,000 cells, about 0.4 GiB"))
})

# The first bad cell as the reader must name it: missing cells first, then other values,
# each time the lowest row, then the lowest column (written plainly, cell by cell).
expected_label_refusal = function(columns) {
  cells = function(bad) {
    for (row in seq_along(columns[[1L]])) for (k in seq_along(columns)) {
      if (bad(columns[[k]], row)) return(c(row, k))
    }
    NULL
  }
  text = function(v) if (is.na(v) && !is.nan(v)) "NA" else if (is.nan(v)) "NaN" else
    if (is.logical(v)) as.character(v) else sprintf("%.15g", v)
  missing = cells(function(column, row) is.na(column[[row]]))
  if (!is.null(missing)) {
    return(sprintf("labels has a missing value (%s) at row %d (1-based) in label '%s'. %s",
      text(columns[[missing[[2L]]]][[missing[[1L]]]]), missing[[1L]],
      names(columns)[[missing[[2L]]]], pystratum:::LABEL_FIX_MISSING))
  }
  other = cells(function(column, row) is.character(column) || !column[[row]] %in% c(0, 1))
  if (is.null(other)) return(NULL)
  value = columns[[other[[2L]]]][[other[[1L]]]]
  if (is.character(value)) {
    return(sprintf(paste0("labels must hold 0/1 numbers or booleans, got the text '%s' at ",
      "row %d (1-based) in label '%s'. Convert the column to numbers first."), value,
      other[[1L]], names(columns)[[other[[2L]]]]))
  }
  sprintf(paste0("labels must hold only 0 and 1 (or booleans), got %s at row %d (1-based) ",
    "in label '%s'. %s"), text(value), other[[1L]], names(columns)[[other[[2L]]]],
    pystratum:::LABEL_FIX_VALUE)
}

test_that("mixed and wide label columns are read, or refused at the first bad cell alike", {
  set.seed(11)
  makers = list(function(n) stats::runif(n) < 0.5,
                function(n) as.integer(stats::runif(n) < 0.5),
                function(n) as.numeric(stats::runif(n) < 0.5),
                function(n) c("0", "1")[1L + (stats::runif(n) < 0.5)])
  hostile = list(NA, NaN, 2, -1, 0.5, Inf, -Inf, 1e300, NA_integer_, 3L, TRUE, 0L)
  for (trial in 1:300) {
    n_rows = sample(1:5, 1L)
    n_columns = sample(c(1:6, 40L), 1L)
    columns = lapply(seq_len(n_columns), function(k) {
      makers[[sample(c(1:3, 1:3, 1:3, 4L), 1L)]](n_rows)  # a text column one time in ten
    })
    for (hit in seq_len(sample(0:2, 1L))) {
      k = sample(n_columns, 1L)
      columns[[k]][[sample(n_rows, 1L)]] = hostile[[sample(length(hostile), 1L)]]
    }
    names(columns) = paste0("label", seq_len(n_columns))
    expected = expected_label_refusal(columns)
    frame = as.data.frame(columns, optional = TRUE, stringsAsFactors = FALSE)
    inputs = list(frame)
    if (length(unique(vapply(columns, typeof, ""))) == 1L) {
      inputs = c(inputs, list(matrix(unlist(columns), n_rows,
                                     dimnames = list(NULL, names(columns)))))
    }
    for (input in inputs) {
      outcome = tryCatch(label_matrix(input), pystratum_value_error = identity,
                         pystratum_type_error = identity)
      if (is.null(expected)) {
        expect_identical(outcome, matrix(unlist(lapply(columns, function(column) column == 1)),
          n_rows, dimnames = list(NULL, names(columns))))
      } else {
        expect_identical(conditionMessage(outcome), expected)
        expect_identical(outcome$argument, "labels")
      }
    }
  }
})
