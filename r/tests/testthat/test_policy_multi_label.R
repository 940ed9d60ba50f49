# policy_multi_label(): the golden vectors (shared with Python), invariants, errors.

impossible = matrix(c(1, 1, 0, 0, 1, 1, 1, 0, 1), 3, 3, byrow = TRUE,
  dimnames = list(NULL, c("a", "b", "c")))

test_that("the golden vectors give the same batches and label counts", {
  vectors = read_vectors("multi_label.json")
  for (case in vectors$cases) {
    given = case$input
    labels = do.call(rbind, lapply(given$labels, function(row) as.integer(unlist(row))))
    colnames(labels) = unlist(given$names)
    policy = pystratum:::policy_from_params("multi_label", given$policy$params)
    run = function() stratified_batches(labels, policy, seed = given$seed, rng = given$rng,
      epoch = given$epoch, shuffle = given$shuffle,
      allow_single_batch = given$allow_single_batch)
    if (!is.null(case$expected_error)) {
      error = tryCatch(run(), pystratum_error = function(e) e)
      expect_s3_class(error, paste0("pystratum_", case$expected_error$class))
      expect_identical(error$argument, case$expected_error$argument, info = case$id)
      next
    }
    # Some cases fall short on purpose (their label counts say where): the warning is
    # tested below, the batches here.
    batches = withCallingHandlers(run(), pystratum_label_shortfall_warning = function(w)
      invokeRestart("muffleWarning"))
    expect_identical(lapply(unclass(batches), as.integer),
      lapply(case$expected$batches, function(b) as.integer(unlist(b))), info = case$id)
    counts = do.call(rbind, lapply(case$expected$label_counts, function(r) as.integer(unlist(r))))
    expect_identical(unname(attr(batches, "label_counts")), counts, info = case$id)
  }
})

test_that("every row once, sizes floor/ceiling, counts true, guaranteed labels in every batch", {
  set.seed(1)
  for (trial in 1:20) {
    n = sample(20:200, 1)
    labels = matrix(rbinom(n * 5, 1, c(0.05, 0.1, 0.2, 0.4, 0.6)), n, 5, byrow = TRUE)
    b = sample(2:10, 1)
    batches = stratified_batches(labels, policy_multi_label(num_batches = b), seed = trial)
    expect_identical(sort(unlist(batches)), seq_len(n))
    expect_true(all(lengths(batches) %in% c(n %/% b, ceiling(n / b))))
    counts = t(vapply(batches, function(rows) as.integer(colSums(labels[rows, , drop = FALSE])),
      integer(5)))
    expect_identical(unname(attr(batches, "label_counts")), counts)
    guaranteed = colSums(labels) >= b
    expect_true(all(counts[, guaranteed] >= 1))
  }
})

test_that("a data.frame of 0/1 or logical columns is read as labels, with its names", {
  frame = data.frame(a = c(TRUE, FALSE, TRUE), b = c(1L, 1L, 0L), c = c(0, 1, 1))
  expect_warning(  # the impossible example: a shortfall
    batches <- stratified_batches(frame, policy_multi_label(num_batches = 2), seed = 1),
    class = "pystratum_label_shortfall_warning")
  expect_identical(colnames(attr(batches, "label_counts")), c("a", "b", "c"))
  # Other policies keep reading it as stratum columns: here every combination is one row,
  # so the plan is a single batch, refused with the pointer to the multi-label policy.
  expect_error(stratified_batches(frame, 1, seed = 1), "policy_multi_label", class = "pystratum_single_batch")
  expect_length(stratified_batches(frame, 1, seed = 1, allow_single_batch = TRUE), 1L)
})

test_that("the impossible example reports its shortfall and strict names the label", {
  expect_warning(
    batches <- stratified_batches(impossible, policy_multi_label(num_batches = 2), seed = 1),
    "^min_per_label=1 is not met in epoch 0: .* label\\(s\\) 'b' in 1 of 2 batches",
    class = "pystratum_label_shortfall_warning")
  expect_identical(min(attr(batches, "label_counts")), 0L)
  error = tryCatch(stratified_batches(impossible,
    policy_multi_label(num_batches = 2, strict = TRUE), seed = 1), pystratum_error = function(e) e)
  expect_s3_class(error, "pystratum_label_shortfall")
  expect_s3_class(error, "pystratum_value_error")
  expect_identical(error$argument, "min_per_label")
  expect_match(conditionMessage(error), "^min_per_label=1 is not met for label\\(s\\) 'b'")
})

test_that("hostile parameters and label matrices are errors naming the argument", {
  blame = function(expr) tryCatch(expr, pystratum_error = function(e) e$argument)
  expect_identical(blame(policy_multi_label()), "batch_size")
  expect_identical(blame(policy_multi_label(4, num_batches = 2)), "batch_size")
  expect_identical(blame(policy_multi_label(0)), "batch_size")
  expect_identical(blame(policy_multi_label(num_batches = 2.5)), "num_batches")
  expect_identical(blame(policy_multi_label(4, min_per_label = 0)), "min_per_label")
  expect_identical(blame(policy_multi_label(4, strict = NA)), "strict")
  p = policy_multi_label(num_batches = 2)
  expect_identical(blame(stratified_batches(matrix(c(0, 2, 1, 0), 2), p, seed = 1)), "strata")
  expect_identical(blame(stratified_batches(matrix(c(0, NA, 1, 0), 2), p, seed = 1)), "strata")
  expect_identical(blame(stratified_batches(matrix(0, 3, 0), p, seed = 1)), "strata")
  expect_identical(blame(stratified_batches(matrix(0, 0, 3), p, seed = 1)), "strata")
  expect_identical(blame(stratified_batches(c(0, 1, 1), p, seed = 1)), "strata")
  expect_identical(blame(stratified_batches(data.frame(a = c("x", "y")), p, seed = 1)), "strata")
  expect_identical(blame(stratified_batches(impossible, policy_multi_label(num_batches = 4),
    seed = 1)), "num_batches")
  expect_identical(blame(stratified_batches(impossible, p, seed = 1, rng = "index")), "rng")
  message = tryCatch(stratified_batches(matrix(c(0, 2, 1, 0), 2), p, seed = 1),
    pystratum_error = conditionMessage)
  expect_match(message, paste0("^strata must hold only 0 and 1 \\(or booleans\\), got 2 at row 2 ",
    "\\(1-based\\) in label '0'"))
})

test_that("the policy is known, rebuilt from its parameters, and refuses an allocation", {
  expect_true("multi_label" %in% names(pystratum:::known_policies()))
  p = policy_multi_label(num_batches = 3, min_per_label = 2)
  expect_identical(pystratum:::policy_from_params("multi_label", p$params), p)
  expect_error(pystratum:::policy_allocate(p, NULL, 0), class = "pystratum_type_error")
})

test_that("each epoch is a new shuffle, the same seed the same batches", {
  set.seed(3)
  labels = matrix(rbinom(400, 1, 0.3), 100, 4)
  p = policy_multi_label(batch_size = 10)
  e0 = stratified_batches(labels, p, seed = 5, epoch = 0)
  e1 = stratified_batches(labels, p, seed = 5, epoch = 1)
  expect_false(identical(unclass(e0), unclass(e1)))
  expect_identical(e1, stratified_batches(labels, p, seed = 5, epoch = 1))
})

test_that("a single batch (num_batches = 1, batch_size >= rows) is refused unless allowed", {
  for (policy in list(policy_multi_label(num_batches = 1), policy_multi_label(batch_size = 3))) {
    error = tryCatch(stratified_batches(impossible, policy, seed = 2),
      pystratum_error = function(e) e)
    expect_s3_class(error, "pystratum_single_batch")
    expect_identical(error$argument, "policy")
    expect_match(conditionMessage(error), paste0("single batch holding all 3 rows of the ",
      "label matrix (3 labels)"), fixed = TRUE)
    expect_match(conditionMessage(error), paste0("The rarest labels: 'a' in 2 rows, 'b' in 2 ",
      "rows, 'c' in 2 rows. Fix: pass batch_size below 3 or num_batches from 2 to 3"),
      fixed = TRUE)
    expect_match(conditionMessage(error), "allow_single_batch = TRUE", fixed = TRUE)
    expect_length(stratified_batches(impossible, policy, seed = 2, allow_single_batch = TRUE), 1L)
  }
})

test_that("batch_order = 'split_safe' reorders rows inside batches by placing label", {
  set.seed(11)
  labels = cbind(rare = rbinom(240, 1, 0.05), mid = rbinom(240, 1, 0.2),
    common = rbinom(240, 1, 0.5))
  assembled = stratified_batches(labels, policy_multi_label(batch_size = 24), seed = 4)
  split = stratified_batches(labels, policy_multi_label(batch_size = 24,
    batch_order = "split_safe"), seed = 4)
  expect_identical(attr(split, "label_counts"), attr(assembled, "label_counts"))
  expect_identical(lapply(split, sort), lapply(assembled, sort))
  expect_false(identical(unclass(split), unclass(assembled)))
  steps = pystratum:::multi_label_placing_steps(labels == 1)
  # 24 = 2 * 2 * 2 * 3: halves, quarters, eighths and 24ths hold floor/ceil of every step.
  for (batch in split) {
    for (g in c(2, 4, 8, 24)) {
      chunks = split(batch, rep(seq_len(g), each = length(batch) / g))
      for (step in 0:3) {
        total = sum(steps[batch] == step)
        got = vapply(chunks, function(rows) sum(steps[rows] == step), numeric(1))
        expect_true(all(got >= total %/% g & got <= ceiling(total / g)))
      }
    }
  }
  expect_identical(policy_multi_label(batch_size = 24)$params$batch_order, NULL)
  expect_error(policy_multi_label(batch_size = 24, batch_order = "sorted"),
    class = "pystratum_value_error")
})

test_that("stratified_batches() reads labels with label_matrix()'s reader: same names, same words", {
  p = policy_multi_label(num_batches = 2)
  unnamed = matrix(c(1, 0, 1, 0, 0, 1, 1, 1), ncol = 2)
  batches = stratified_batches(unnamed, p, seed = 1)
  expect_identical(colnames(attr(batches, "label_counts")), colnames(label_matrix(unnamed)))
  expect_identical(colnames(attr(batches, "label_counts")), c("0", "1"))
  bad = data.frame(a = c(1, 0, NA, 1), b = c(0, 1, 1, 0))
  from_plan = tryCatch(stratified_batches(bad, p, seed = 1), pystratum_error = identity)
  from_reader = tryCatch(label_matrix(bad), pystratum_error = identity)
  expect_identical(from_plan$argument, "strata")
  expect_identical(conditionMessage(from_plan),
    sub("^labels", "strata", conditionMessage(from_reader)))
})

test_that("placement walks only the steps that place rows, not one step per label", {
  # 10 rows over 2,000 labels: 10 steps place rows, 1,990 labels are counted at once. The
  # loop ran once per label (10 x 10^6 labels took minutes); counted, not timed: each
  # walked step tabulates the rows placed before it.
  counter = new.env()
  counter$n = 0L
  suppressMessages(trace("tabulate", tracer = function() counter$n = counter$n + 1L,
    print = FALSE, where = baseenv()))
  withr::defer(suppressMessages(untrace("tabulate", where = baseenv())))
  one_label_a_row = diag(TRUE, 10, 2000)
  all_ones = matrix(TRUE, 10, 2000)
  for (labels in list(one_label_a_row, all_ones)) {
    counter$n = 0L
    batches = stratified_batches(labels, policy_multi_label(batch_size = 5), seed = 1)
    expect_lte(counter$n, 30L)
    expect_identical(sort(unlist(batches)), 1:10)
    counts = attr(batches, "label_counts")
    expect_identical(dim(counts), c(2L, 2000L))
    # The counts of the labels no step walked are the positives in each batch.
    expect_identical(counts, t(vapply(batches, function(rows) as.integer(colSums(
      labels[rows, , drop = FALSE])), integer(2000))), ignore_attr = TRUE)
  }
})
