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
