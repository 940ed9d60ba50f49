# Ten rows with non-contiguous row ids; y has 3 "pos" and 7 "neg".
sampler_task = function(stratum = "y") {
  data = data.frame(
    y = c("neg", "pos", "neg", "neg", "pos", "neg", "neg", "pos", "neg", "neg"),
    x = c(1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5),
    g = c(1L, 1L, 1L, 1L, 1L, 2L, 2L, 2L, 2L, 2L),
    stringsAsFactors = FALSE
  )
  fake_task(data, row_ids = c(10L, 3L, 7L, 42L, 1L, 5L, 99L, 2L, 8L, 11L), stratum = stratum)
}

test_that("training loaders: .length() batches per epoch, a new shuffle each epoch", {
  task = sampler_task()
  learner = fake_learner(fake_sampler_class(1, seed = 2024))
  loader = learner$train_loader(fake_task_dataset(task))
  expect_false(loader$batch_sampler$plan$predicting)
  expect_identical(loader$batch_sampler$.length(), 3L)
  epochs = lapply(1:4, function(epoch) run_epoch(loader))
  y = task$data(cols = "y")$y
  for (k in seq_along(epochs)) {
    expect_stratified_batches(epochs[[k]], y, 1)
    # Epoch k is stratified_batches(..., epoch = k - 1) on the strata in row_ids order.
    expect_identical(epochs[[k]], stratified_batches(y, 1, seed = 2024, epoch = k - 1L))
  }
  expect_false(identical(epochs[[1L]], epochs[[2L]]))
})

test_that("batches are positions in task$row_ids order, not row ids", {
  task = sampler_task()
  dataset = fake_task_dataset(task)
  loader = fake_learner(fake_sampler_class(1, seed = 1))$train_loader(dataset)
  for (batch in run_epoch(loader)) {
    expect_true(all(batch %in% seq_len(task$nrow)))
    # task_dataset reads task$row_ids[index]: every batch has one "pos" row.
    expect_identical(sum(dataset$.getbatch(batch)$y == "pos"), 1L)
  }
})

test_that("prediction loaders (shuffle = FALSE in param_vals) serve every row once, in order", {
  task = sampler_task()
  learner = fake_learner(fake_sampler_class(1, seed = 2024))
  loader = learner$predict_loader(fake_task_dataset(task))
  expect_true(loader$batch_sampler$plan$predicting)
  expect_identical(loader$batch_sampler$.length(), 3L)
  for (epoch in 1:2) {
    batches = run_epoch(loader)
    expect_identical(unlist(batches), seq_len(task$nrow))
    expect_identical(lengths(batches), c(3L, 3L, 4L))
  }
})

test_that("training loaders take any policy: epochs equal stratified_batches() with it", {
  task = sampler_task()
  y = task$data(cols = "y")$y
  policies = list(policy_fixed_size(5), policy_targets("balanced", 4),
    policy_downsample(c(neg = 0.5), 1))
  for (policy in policies) {
    loader = fake_learner(fake_sampler_class(policy, seed = 7))$train_loader(fake_task_dataset(task))
    for (k in 1:3) {
      batches = run_epoch(loader)
      expected = stratified_batches(y, policy, seed = 7, epoch = k - 1L)
      attr(expected, "weights") = NULL
      expect_identical(batches, unclass(expected))
    }
  }
})

test_that("prediction loaders serve every row once, in order, under recycling and downsampling", {
  task = sampler_task()
  # Targets("balanced", 4) recycles the 3 "pos" rows (training epochs: 4
  # batches of 4); Downsample keeps 4 of the 7 "neg" rows (training epochs:
  # batches of 4 and 3). Prediction must see all 10 rows once: batches of the
  # largest training batch size, the last one shorter.
  cases = list(list(policy_targets("balanced", 4), c(4L, 4L, 2L)),
    list(policy_downsample(c(neg = 0.5), policy_fixed_size(3)), c(4L, 4L, 2L)))
  for (case in cases) {
    loader = fake_learner(fake_sampler_class(case[[1L]], seed = 3))$predict_loader(
      fake_task_dataset(task))
    expect_identical(loader$batch_sampler$.length(), length(case[[2L]]))
    batches = run_epoch(loader)
    expect_identical(unlist(batches), seq_len(task$nrow))
    expect_identical(lengths(batches), case[[2L]])
  }
})

test_that("prediction loaders never draw from a random generator", {
  task = sampler_task()
  loader = with_no_random_seed({
    loader = fake_learner(fake_sampler_class(1))$predict_loader(fake_task_dataset(task))
    run_epoch(loader)
    expect_false(exists(".Random.seed", envir = globalenv(), inherits = FALSE))
  })
})

test_that("outer param_vals do not leak: only the innermost (.dataloader's) counts", {
  param_vals = list(shuffle = FALSE)
  task = sampler_task()
  loader = fake_learner(fake_sampler_class(1, seed = 1))$train_loader(fake_task_dataset(task))
  expect_false(loader$batch_sampler$plan$predicting)
})

test_that("loader_is_for_prediction() reads shuffle from the nearest param_vals", {
  dataloader = function(param_vals) loader_is_for_prediction()
  expect_true(dataloader(list(shuffle = FALSE, drop_last = FALSE)))
  expect_false(dataloader(list(shuffle = TRUE)))
  expect_false(dataloader(list()))
  expect_false(dataloader("not a list"))
  expect_false(loader_is_for_prediction())
  # `$` would partially match `shuffle_extra`; `[[` does not.
  expect_false(dataloader(list(shuffle_extra = FALSE)))
})

test_that("a too-small stratum warns for training loaders only", {
  task = sampler_task()
  learner = fake_learner(fake_sampler_class(5, seed = 1))
  expect_warning(loader <- learner$train_loader(fake_task_dataset(task)),
    class = "pystratum_stratum_too_small")
  expect_identical(loader$batch_sampler$.length(), 1L)
  expect_silent(loader <- learner$predict_loader(fake_task_dataset(task)))
  expect_identical(run_epoch(loader), list(1:10))
})

test_that("several stratum columns: every combination is a stratum", {
  task = sampler_task(stratum = c("y", "g"))
  loader = fake_learner(fake_sampler_class(1, seed = 3))$train_loader(fake_task_dataset(task))
  strata = task$data(cols = c("y", "g"))
  expect_identical(loader$batch_sampler$.length(), 1L)  # ("pos", 2) has 1 row
  expect_stratified_batches(run_epoch(loader), strata, 1)
})

test_that("rng = \"torch\" with the learner's seed: the global torch generator drives it", {
  backend = fake_torch_backend()
  task = sampler_task()
  loader = fake_learner(fake_sampler_class(1, rng = "torch", torch_backend = backend))$
    train_loader(fake_task_dataset(task))
  first = run_epoch(loader)
  expect_identical(backend$generator$state, 12346)
  backend$set_state(12345)
  expect_identical(first, reference_batches(task$data(cols = "y")$y, backend$randperm(10L), 1))
})

test_that("a task without a stratum column role is a clear error", {
  task = sampler_task(stratum = character())
  learner = fake_learner(fake_sampler_class(1))
  expect_pystratum_error(learner$train_loader(fake_task_dataset(task)), "value_error",
    "data_source", "task\\$col_roles\\$stratum = \"y\"")
})

test_that("a data source without $task (tensor_dataset = TRUE) is a clear error", {
  learner = fake_learner(fake_sampler_class(1))
  tensor_dataset = structure(new.env(), class = c("tensor_dataset", "dataset", "R6"))
  expect_pystratum_error(learner$train_loader(tensor_dataset), "type_error", "data_source",
    "tensor_dataset = FALSE")
  expect_pystratum_error(learner$train_loader(list(x = 1)), "type_error", "data_source")
  expect_pystratum_error(learner$train_loader(1:3), "type_error", "data_source")
})

test_that("batch_sampler_stratified() validates its arguments before needing torch", {
  expect_pystratum_error(batch_sampler_stratified(0), "value_error", "min_samples_per_stratum")
  expect_pystratum_error(batch_sampler_stratified(1, rng = "numpy"), "value_error", "rng")
  expect_pystratum_error(batch_sampler_stratified(1, shuffle = "yes"), "type_error", "shuffle")
  expect_pystratum_error(batch_sampler_stratified(1, shuffle = FALSE, seed = 1), "value_error",
    "seed")
  expect_pystratum_error(batch_sampler_stratified(1, seed = -1), "value_error", "seed")
})

test_that("batch_sampler_stratified() says torch is required when it is missing", {
  skip_if(requireNamespace("torch", quietly = TRUE), "torch is installed")
  error = expect_error(batch_sampler_stratified(1), class = "pystratum_missing_package")
  expect_match(conditionMessage(error),
    "batch_sampler_stratified() needs the torch package, which is not installed: install.packages(\"torch\")",
    fixed = TRUE)
})

test_that("with torch: a torch_sampler class whose instances follow the contract", {
  skip_if_not_installed("torch")
  skip_if_not_installed("coro")
  skip_if_not(torch::torch_is_installed(), "libtorch is not installed")
  sampler_class = batch_sampler_stratified(1, seed = 2024, rng = "R")
  expect_true(inherits(sampler_class, "torch_sampler"))
  task = sampler_task()
  sampler = sampler_class(fake_task_dataset(task))
  expect_identical(length(sampler), 3L)
  iterator = sampler$.iter()
  batches = lapply(1:3, function(i) iterator())
  expect_true(coro::is_exhausted(iterator()))
  expect_identical(batches, stratified_batches(task$data(cols = "y")$y, 1, seed = 2024))
})

test_that("with mlr3torch: every policy trains; predictions keep every row in order", {
  skip_if_not_installed("mlr3torch")
  skip_if_not(torch::torch_is_installed(), "libtorch is not installed")
  task = mlr3::tsk("sonar")
  task$col_roles$stratum = "Class"
  samplers = list(batch_sampler_stratified(2),
    batch_sampler_stratified(policy_targets("balanced", 10), seed = 1, rng = "R"),
    batch_sampler_stratified(policy_downsample(c(M = 0.5), 2), seed = 1, rng = "R"))
  for (sampler in samplers) {
    learner = mlr3::lrn("classif.mlp", epochs = 2, batch_size = 10, seed = 1,
      batch_sampler = sampler)
    learner$train(task)
    reference = learner$clone(deep = TRUE)
    prediction = learner$predict(task)
    expect_identical(prediction$row_ids, task$row_ids)
    # The same network predicting with the default sampler gives the same rows.
    reference$param_set$values$batch_sampler = NULL
    expect_equal(reference$predict(task)$prob, prediction$prob)
  }
})
