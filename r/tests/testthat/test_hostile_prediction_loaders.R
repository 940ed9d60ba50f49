# Prediction loaders at odd sizes: one row, one stratum, a batch larger than
# the data, every policy. Whatever the training epoch serves (recycled or
# left-out rows), prediction serves every row once, in row order.

odd_task = function(y) {
  data = data.frame(y = y, x = seq_along(y) + 0.5, stringsAsFactors = FALSE)
  fake_task(data, row_ids = rev(seq_along(y)) * 3L, stratum = "y")
}

odd_policies = function(y) {
  labels = unique(y)
  keep = stats::setNames(0.01, labels[[1L]])
  list(
    min_per_stratum = 1L,
    fixed_size_small = policy_fixed_size(1L),
    fixed_size_large = policy_fixed_size(length(y) + 7L),
    targets_small = policy_targets("balanced", length(labels)),
    targets_large = policy_targets("balanced", 4L * length(y) + 3L),
    targets_smallest = policy_targets("balanced", length(labels), epoch = "smallest"),
    downsample_near_0 = policy_downsample(keep, 1L),
    downsample_near_1 = policy_downsample(stats::setNames(0.99, labels[[1L]]),
      policy_fixed_size(length(y) + 1L))
  )
}

test_that("prediction loaders serve every row once, in order, at odd sizes", {
  cases = list(
    one_row = "a",
    two_rows_one_stratum = c("a", "a"),
    one_stratum = rep("a", 9L),
    stratum_of_one_row = c("a", "b", "b", "b", "b"),
    odd_imbalance = c(rep("neg", 12L), "pos", "mid", "mid")
  )
  for (case_name in names(cases)) {
    y = cases[[case_name]]
    task = odd_task(y)
    for (policy_name in names(odd_policies(y))) {
      policy = odd_policies(y)[[policy_name]]
      label = paste(case_name, policy_name)
      # One batch is allowed here (odd sizes make it); the guard's loaders: below.
      expected = tryCatch(stratified_batches(y, policy, seed = 5, allow_single_batch = TRUE),
        pystratum_value_error = function(e) NULL)
      if (is.null(expected)) {
        # Infeasible for these sizes (e.g. FixedSize(1) with a stratum of one
        # row): the loader refuses it as the plan does.
        expect_error(fake_learner(fake_sampler_class(policy, seed = 5, allow_single_batch = TRUE))$predict_loader(
          fake_task_dataset(task)), class = "pystratum_value_error")
        next
      }
      attr(expected, "weights") = NULL
      loader = fake_learner(fake_sampler_class(policy, seed = 5, allow_single_batch = TRUE))$predict_loader(
        fake_task_dataset(task))
      batches = run_epoch(loader)
      expect_identical(unlist(batches), seq_along(y), label = label)
      expect_true(all(lengths(batches) >= 1L), label = label)
      expect_identical(loader$batch_sampler$.length(), length(batches), label = label)
      # Training loaders of the same sampler still serve the policy's epochs.
      train = fake_learner(fake_sampler_class(policy, seed = 5, allow_single_batch = TRUE))$train_loader(
        fake_task_dataset(task))
      expect_identical(run_epoch(train), unclass(expected), label = label)
      # Whatever the learner's shuffle, and on both mlr3torch versions (the
      # development version predicts without the sampler, in batches of
      # batch_size): training keeps the policy, prediction the row order.
      for (version in c("0.3.3", "dev")) {
        learner = fake_learner(fake_sampler_class(policy, seed = 5, allow_single_batch = TRUE), version = version,
          shuffle = FALSE, batch_size = 3L)
        served = suppressWarnings(learner$train(fake_task_dataset(task), epochs = 1L,
          valid_dataset = fake_task_dataset(task)), classes = "pystratum_learner_shuffle_ignored")
        expect_identical(served$train[[1L]], unclass(expected), label = paste(label, version))
        expect_identical(unlist(served$valid[[1L]]), seq_along(y), label = paste(label, version))
        predicted = loader_batches(learner$predict_loader(fake_task_dataset(task)))
        expect_identical(unlist(predicted), seq_along(y), label = paste(label, version))
      }
    }
  }
})

test_that("a one-batch plan refuses the training loader, never a prediction loader", {
  y = c(rep("neg", 12L), "pos", "mid", "mid")
  task = odd_task(y)
  for (version in c("0.3.3", "dev")) {
    learner = fake_learner(fake_sampler_class(1L, seed = 5), version = version)
    # Prediction and validation loaders: every row once, in order, not stratified.
    predicted = loader_batches(learner$predict_loader(fake_task_dataset(task)))
    expect_identical(unlist(predicted), seq_along(y))
    # The training loader is refused when mlr3torch builds it, as stratified_batches().
    expect_pystratum_error(learner$train_loader(fake_task_dataset(task)), "single_batch",
      "policy", "^policy=policy_min_per_stratum\\(m = 1\\) gives a single batch holding all 15 rows")
    expect_pystratum_error(learner$train(fake_task_dataset(task), epochs = 1L,
      valid_dataset = fake_task_dataset(task)), "single_batch", "policy")
  }
  allowed = fake_learner(fake_sampler_class(1L, seed = 5, allow_single_batch = TRUE))
  expect_identical(run_epoch(allowed$train_loader(fake_task_dataset(task))),
    unclass(stratified_batches(y, 1L, seed = 5, allow_single_batch = TRUE)))
})

test_that("prediction_batch_sizes covers every row once for any training batch sizes", {
  for (n_rows in c(1L, 2L, 7L, 100L)) {
    for (sizes in list(1L, c(3L, 3L), n_rows + 5L, c(2L, 5L, 1L), rep(1L, 2L * n_rows))) {
      got = prediction_batch_sizes(n_rows, sizes)
      expect_identical(sum(got), n_rows)
      expect_true(all(got >= 1L))
      expect_true(is.integer(got))
    }
  }
})
