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

# Seven rows for validation sets: 3 "a", 4 "b".
odd_rows_task = function() {
  data = data.frame(y = c("a", "b", "b", "a", "b", "a", "b"), x = seq(0.5, 6.5),
    stringsAsFactors = FALSE)
  fake_task(data, row_ids = c(70L, 60L, 50L, 40L, 30L, 20L, 10L), stratum = "y", id = "valid")
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

test_that("prediction loaders (made by .dataloader_predict) serve every row once, in order", {
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
    list(policy_downsample(c(neg = 0.5), policy_fixed_size(3, sizes = "balanced")),
      c(4L, 4L, 2L)))
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
  loader = suppressWarnings(fake_learner(fake_sampler_class(1, seed = 1))$train_loader(
    fake_task_dataset(task)), classes = "pystratum_learner_shuffle_ignored")
  expect_false(loader$batch_sampler$plan$predicting)
})

test_that("loader_is_for_prediction() looks for mlr3torch's .dataloader_predict among the callers", {
  # Called as mlr3torch calls it (private$..., or super$... from a subclass
  # overriding it), or by name; any depth below it.
  private = list(.dataloader_predict = function(param_vals) loader_is_for_prediction())
  expect_true(private$.dataloader_predict(list()))
  expect_true(private$.dataloader_predict(list(shuffle = TRUE)))
  super = list(.dataloader_predict = function() (function() loader_is_for_prediction())())
  expect_true(super$.dataloader_predict())
  expect_true(private[[".dataloader_predict"]](NULL))
  .dataloader_predict = function() loader_is_for_prediction()
  expect_true(.dataloader_predict())
  # A parameter a user may set says nothing: a training .dataloader() with the
  # learner's shuffle = FALSE is not a prediction loader.
  dataloader = function(param_vals) loader_is_for_prediction()
  expect_false(dataloader(list(shuffle = FALSE, drop_last = FALSE)))
  expect_false(loader_is_for_prediction())
  # Near names are not it; a function object called without a name is skipped.
  private = list(.dataloader_predict_extra = function() loader_is_for_prediction(),
    .dataloader = function() loader_is_for_prediction())
  expect_false(private$.dataloader_predict_extra())
  expect_false(private$.dataloader())
  expect_false(do.call(function() loader_is_for_prediction(), list()))
})

test_that("the learner's shuffle = FALSE keeps the policy in training, with one warning", {
  # Before: the sampler took the learner's shuffle = FALSE (which mlr3torch
  # passes to training loaders too) for a prediction loader and served rows in
  # order, unstratified. Both mlr3torch versions: a training loader always
  # gets the policy's batches.
  task = sampler_task()
  y = task$data(cols = "y")$y
  for (version in c("0.3.3", "dev")) {
    sampler_class = fake_sampler_class(1, seed = 2024)
    learner = fake_learner(sampler_class, version = version, shuffle = FALSE)
    warnings = count_warnings(served <- learner$train(fake_task_dataset(task), epochs = 3L),
      "pystratum_learner_shuffle_ignored")
    expect_identical(warnings, 1L, label = version)
    for (k in 1:3) {
      expect_stratified_batches(served$train[[k]], y, 1)
      expect_identical(served$train[[k]], stratified_batches(y, 1, seed = 2024, epoch = k - 1L),
        label = version)
    }
    # Once per sampler class: a second training run with it says nothing more.
    expect_identical(count_warnings(learner$train(fake_task_dataset(task), epochs = 1L),
      "pystratum_learner_shuffle_ignored"), 0L, label = version)
    # Predictions still see every row once, in order.
    predicted = loader_batches(learner$predict_loader(fake_task_dataset(task)))
    expect_identical(unlist(predicted), seq_len(task$nrow), label = version)
  }
  # The warning says what happens and what to do.
  learner = fake_learner(fake_sampler_class(1, seed = 1), shuffle = FALSE)
  warning = expect_warning(learner$train_loader(fake_task_dataset(task)),
    class = "pystratum_learner_shuffle_ignored")
  expect_match(conditionMessage(warning), "shuffle = FALSE", fixed = TRUE)
  expect_match(conditionMessage(warning), "batch_sampler_stratified(..., shuffle = FALSE)",
    fixed = TRUE)
  # Nothing to say when the sampler itself keeps row order, or for the
  # learner's default shuffle = TRUE.
  expect_identical(count_warnings(fake_learner(fake_sampler_class(1, shuffle = FALSE),
    shuffle = FALSE)$train(fake_task_dataset(task), epochs = 2L),
    "pystratum_learner_shuffle_ignored"), 0L)
  expect_identical(count_warnings(fake_learner(fake_sampler_class(1, seed = 1))$train(
    fake_task_dataset(task), epochs = 2L), "pystratum_learner_shuffle_ignored"), 0L)
})

test_that("0.3.3: prediction and validation loaders stay aligned whatever the learner's shuffle", {
  task = sampler_task()
  valid = fake_task_dataset(odd_rows_task())
  for (shuffle in c(TRUE, FALSE)) {
    learner = fake_learner(fake_sampler_class(1, seed = 3), shuffle = shuffle)
    served = suppressWarnings(learner$train(fake_task_dataset(task), epochs = 2L,
      valid_dataset = valid), classes = "pystratum_learner_shuffle_ignored")
    for (batches in served$valid) {
      expect_identical(unlist(batches), seq_len(valid$task$nrow))
    }
    # ... while the training loader of the same run keeps the policy.
    expect_identical(served$train[[2L]],
      stratified_batches(task$data(cols = "y")$y, 1, seed = 3, epoch = 1L))
    loader = learner$predict_loader(fake_task_dataset(task))
    expect_true(loader$batch_sampler$plan$predicting)
    expect_identical(unlist(run_epoch(loader)), seq_len(task$nrow))
  }
})

test_that("development version: training without batch_size; prediction loaders have no sampler", {
  # That version ignores the learner's shuffle once a batch sampler is set;
  # shuffle = FALSE then must not change the training batches either.
  task = sampler_task()
  y = task$data(cols = "y")$y
  learner = fake_learner(fake_sampler_class(1, seed = 4), version = "dev", batch_size = NULL,
    batch_size_predict = 4L, shuffle = FALSE)
  served = suppressWarnings(learner$train(fake_task_dataset(task), epochs = 2L,
    valid_dataset = fake_task_dataset(odd_rows_task())),
    classes = "pystratum_learner_shuffle_ignored")
  for (k in 1:2) {
    expect_identical(served$train[[k]], stratified_batches(y, 1, seed = 4, epoch = k - 1L))
    expect_identical(served$valid[[k]], list(1:4, 5:7))
  }
  loader = learner$predict_loader(fake_task_dataset(task))
  expect_null(loader$batch_sampler)
  expect_identical(loader_batches(loader), list(1:4, 5:8, 9:10))
  # What the development version refuses (documented in ?batch_sampler_stratified).
  expect_error(fake_learner(fake_sampler_class(1), version = "dev", batch_size = NULL)$
    predict_loader(fake_task_dataset(task)), "batch_size_predict")
  expect_error(fake_learner(fake_sampler_class(1), version = "dev",
    sampler = function(dataset) NULL)$train_loader(fake_task_dataset(task)), "cannot both")
})

test_that("a seeded sampler re-created at epoch 3 serves epochs 3-4 of an uninterrupted run", {
  # The development version resumes from a checkpoint with a new sampler
  # instance and R's random state as it happens to be; before, the new
  # instance served epoch 1's batches as epoch 3.
  task = sampler_task()
  cases = list(
    list(policy = 1, rng = "R"),
    list(policy = policy_fixed_size(5), rng = "R"),
    list(policy = policy_targets("balanced", 4), rng = "R"),
    list(policy = policy_downsample(c(neg = 0.5), 1), rng = "R"),
    list(policy = 1, rng = "index"),
    list(policy = policy_targets("balanced", 4), rng = "index"),
    list(policy = 1, rng = "torch"),
    list(policy = policy_downsample(c(neg = 0.5), 1), rng = "torch"))
  for (case in cases) {
    label = paste(class(case$policy)[[1L]], case$rng)
    backend = if (case$rng == "torch") fake_torch_backend()
    sampler_class = fake_sampler_class(case$policy, seed = 5, rng = case$rng,
      torch_backend = backend)
    full = fake_learner(sampler_class)$train(fake_task_dataset(task), epochs = 6L)$train
    for (resume_from in 0:5) {
      set.seed(resume_from + 100)  # whatever R's state is at the restart
      resumed = fake_learner(sampler_class)$train(fake_task_dataset(task), epochs = 6L,
        resume_from = resume_from)$train
      expect_identical(resumed, full[seq_len(6L - resume_from) + resume_from],
        label = paste(label, "resumed after epoch", resume_from))
    }
  }
  # shuffle = FALSE: epochs may still differ (allocations that rotate per
  # epoch), and a resumed run serves the same ones.
  sampler_class = fake_sampler_class(policy_targets("balanced", 4), shuffle = FALSE)
  full = fake_learner(sampler_class)$train(fake_task_dataset(task), epochs = 4L)$train
  expect_identical(fake_learner(sampler_class)$train(fake_task_dataset(task), epochs = 4L,
    resume_from = 2L)$train, full[3:4])
  # Without a seed (documented): no private stream to replay, so a re-created
  # sampler draws the next permutation of the stream it uses (here R's
  # session stream), one per epoch, whatever ctx$epoch says.
  y = task$data(cols = "y")$y
  sampler_class = fake_sampler_class(1, seed = NULL, rng = "R")
  set.seed(11)
  resumed = fake_learner(sampler_class)$train(fake_task_dataset(task), epochs = 4L,
    resume_from = 2L)$train
  set.seed(11)
  expect_identical(resumed, list(stratified_batches(y, 1), stratified_batches(y, 1)))
})

test_that("the epoch comes from ctx$epoch; without a usable ctx, .iter() calls are counted", {
  task = sampler_task()
  y = task$data(cols = "y")$y
  expected = function(k) stratified_batches(y, 1, seed = 9, epoch = k)
  loader = fake_learner(fake_sampler_class(1, seed = 9))$train_loader(fake_task_dataset(task))
  in_epoch = function(ctx, loader) run_epoch(loader)
  # mlr3torch's loop at epoch 3 (1-based): the third epoch, 0-based 2.
  expect_identical(in_epoch(fake_context(loader, NULL, 5L), loader), expected(0L))
  at_3 = fake_context(loader, NULL, 5L)
  at_3$epoch = 3
  expect_identical(in_epoch(at_3, loader), expected(2L))
  # No ctx among the callers: counting continues after the last epoch served.
  expect_identical(run_epoch(loader), expected(3L))
  expect_identical(run_epoch(loader), expected(4L))
  # A `ctx` that is not mlr3torch's context, or whose epoch is no epoch
  # number, is ignored: counting goes on.
  not_context = new.env()
  not_context$epoch = 1
  expect_identical(in_epoch(not_context, loader), expected(5L))
  for (epoch in list(0, -1, 1.5, NA_real_, "2", c(1, 2), NULL, Inf, 2^31)) {
    odd = fake_context(loader, NULL, 5L)
    odd$epoch = epoch
    before = loader$batch_sampler$plan$epochs_served()
    expect_identical(in_epoch(odd, loader), expected(before), label = show_value(epoch))
  }
  # Going back is possible too (a callback may rewind ctx$epoch).
  at_2 = fake_context(loader, NULL, 5L)
  at_2$epoch = 2
  expect_identical(in_epoch(at_2, loader), expected(1L))
  expect_identical(run_epoch(loader), expected(2L))
})

test_that("training_epoch_from_callers() reads the innermost ctx, a ContextTorch", {
  expect_null(training_epoch_from_callers())
  loop = function(ctx) training_epoch_from_callers()
  expect_identical(loop(structure(list(epoch = 4), class = "ContextTorch")), 3L)
  expect_identical(loop(structure(list(epoch = 4L), class = "ContextTorch")), 3L)
  expect_null(loop(list(epoch = 4)))
  expect_null(loop(structure(list(), class = "ContextTorch")))
  # A promise that fails when forced is no context.
  expect_null(loop(stop("not evaluated by mlr3torch")))
})

test_that("a too-small stratum, allowed, warns for training loaders only", {
  task = sampler_task()
  learner = fake_learner(fake_sampler_class(5, seed = 1, allow_single_batch = TRUE))
  expect_warning(loader <- learner$train_loader(fake_task_dataset(task)),
    class = "pystratum_stratum_too_small")
  expect_identical(loader$batch_sampler$.length(), 1L)
  expect_silent(loader <- learner$predict_loader(fake_task_dataset(task)))
  expect_identical(run_epoch(loader), list(1:10))
})

test_that("several stratum columns: every combination is a stratum", {
  task = sampler_task(stratum = c("y", "g"))
  # ("pos", 2) has 1 row: one batch, refused for training unless allowed.
  expect_pystratum_error(fake_learner(fake_sampler_class(1, seed = 3))$train_loader(
    fake_task_dataset(task)), "single_batch", "policy", "\\('pos', 2L?\\) with 1 row")
  loader = fake_learner(fake_sampler_class(1, seed = 3, allow_single_batch = TRUE))$train_loader(
    fake_task_dataset(task))
  strata = task$data(cols = c("y", "g"))
  expect_identical(loader$batch_sampler$.length(), 1L)
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

# A torch callback recording, per training batch, mlr3torch's epoch and the
# batch's dataset indices (positions in task$row_ids) into the environment
# held by the option `pystratum_test_record` (an option, so that it does not
# depend on the environment mlr3torch gives the callback's methods).
batch_recorder = function() {
  mlr3torch::torch_callback("pystratum_recorder", on_batch_begin = function() {
    record = getOption("pystratum_test_record")
    record$epochs = c(record$epochs, self$ctx$epoch)
    record$batches[[length(record$batches) + 1L]] =
      as.integer(self$ctx$batch$.index$to(device = "cpu"))
  })
}

# A fresh record, made the one the recorder writes to.
new_record = function() {
  record = new.env()
  record$epochs = numeric(0)
  record$batches = list()
  options(pystratum_test_record = record)
  record
}

test_that("with mlr3torch: the learner's shuffle = FALSE keeps training stratified, one warning", {
  skip_if_not_installed("mlr3torch")
  skip_if_not(torch::torch_is_installed(), "libtorch is not installed")
  task = mlr3::tsk("sonar")
  task$col_roles$stratum = "Class"
  y = task$data(cols = "Class")$Class
  record = new_record()
  # batch_size serves prediction on both versions (0.3.3 requires it; the
  # development version needs it, or batch_size_predict, to predict).
  learner = mlr3::lrn("classif.mlp", epochs = 3, batch_size = 10, seed = 1, shuffle = FALSE,
    batch_sampler = batch_sampler_stratified(10), callbacks = batch_recorder())
  expect_identical(count_warnings(learner$train(task), "pystratum_learner_shuffle_ignored"), 1L)
  # 97 "R" rows, m = 10: 9 batches per epoch, each with >= 10 rows of each class.
  expect_length(record$batches, 27L)
  smallest = vapply(record$batches, function(rows) min(table(y[rows])), 0L)
  expect_true(all(smallest >= 10L))
  expect_setequal(unlist(record$batches[1:9]), seq_len(task$nrow))
  prediction = learner$predict(task)
  expect_identical(prediction$row_ids, task$row_ids)
  reference = learner$clone(deep = TRUE)
  reference$param_set$values$batch_sampler = NULL
  expect_equal(reference$predict(task)$prob, prediction$prob)
  options(pystratum_test_record = NULL)
})

test_that("with mlr3torch's development version: a seeded sampler resumes with epoch k's batches", {
  skip_if_not_installed("mlr3torch")
  skip_if_not(torch::torch_is_installed(), "libtorch is not installed")
  skip_if_not("resume" %in% mlr3::lrn("classif.mlp")$param_set$ids(), sprintf(paste0(
    "mlr3torch %s cannot resume training from a checkpoint (its development version can)"),
    utils::packageVersion("mlr3torch")))
  task = mlr3::tsk("sonar")
  task$col_roles$stratum = "Class"
  for (rng in c("R", "torch")) {
    sampler_class = batch_sampler_stratified(10, seed = 5, rng = rng)
    full = new_record()
    mlr3::lrn("classif.mlp", epochs = 4, batch_size = 10, seed = 1,
      batch_sampler = sampler_class, callbacks = batch_recorder())$train(task)
    path = tempfile("pystratum-checkpoint-")
    first = new_record()
    mlr3::lrn("classif.mlp", epochs = 2, batch_size = 10, seed = 1, batch_sampler = sampler_class,
      callbacks = list(batch_recorder(), mlr3torch::t_clbk("checkpoint", freq = 1,
        path = path)))$train(task)
    set.seed(99)  # the restarted process's R random state is anything
    resumed = new_record()
    mlr3::lrn("classif.mlp", epochs = 4, batch_size = 10, seed = 1, batch_sampler = sampler_class,
      resume = TRUE, callbacks = list(batch_recorder(), mlr3torch::t_clbk("checkpoint",
        freq = 1, path = path)))$train(task)
    expect_identical(as.integer(resumed$epochs), rep(3:4, each = 9L), label = rng)
    expect_identical(first$batches, full$batches[1:18], label = rng)
    expect_identical(resumed$batches, full$batches[19:36], label = rng)
  }
  options(pystratum_test_record = NULL)
})

test_that("a sampler re-created at a late epoch reaches it without assembling the skipped ones", {
  # Before, the resume built every skipped epoch's batches in full (21 s at
  # epoch 201 of 20,000 rows with rng = "index", which computes any epoch directly).
  task = sampler_task()
  y = task$data(cols = "y")$y
  at_epoch = function(loader, epoch) {
    ctx = fake_context(loader, NULL, epoch)
    ctx$epoch = epoch
    (function(ctx) run_epoch(loader))(ctx)
  }
  # Count the per-epoch assemblies (index_batches() for rng = "index", else assemble_epoch()).
  counter = new.env()
  counter$n = 0L
  namespace = environment(stratified_batches)
  for (name in c("index_batches", "assemble_epoch")) {
    suppressMessages(trace(name, tracer = function() counter$n = counter$n + 1L,
      print = FALSE, where = namespace))
  }
  withr::defer(for (name in c("index_batches", "assemble_epoch")) {
    suppressMessages(untrace(name, where = namespace))
  })
  # The batches of stratified_batches() (its weights attribute is not the sampler's).
  batches_of = function(...) {
    batches = stratified_batches(...)
    attr(batches, "weights") = NULL
    batches
  }
  for (rng in c("index", "R")) {
    for (policy in list(1, policy_targets("balanced", 4))) {
      label = paste(rng, class(policy)[[1L]])
      loader = fake_learner(fake_sampler_class(policy, seed = 9, rng = rng))$train_loader(
        fake_task_dataset(task))
      counter$n = 0L
      expect_identical(at_epoch(loader, 201), batches_of(y, policy, seed = 9,
        rng = rng, epoch = 200L), label = label)
      # The resumed epoch once here, once by stratified_batches(): none skipped.
      expect_equal(counter$n, 2, label = label)
      # The next epoch goes on from there.
      expect_identical(at_epoch(loader, 202), batches_of(y, policy, seed = 9,
        rng = rng, epoch = 201L), label = label)
    }
  }
  # ClassesPerBatch keeps epochs of its own (slots): the same jump.
  for (rng in c("index", "R")) {
    policy = policy_classes_per_batch(2, 2)
    loader = fake_learner(fake_sampler_class(policy, seed = 9, rng = rng))$train_loader(
      fake_task_dataset(task))
    expect_identical(at_epoch(loader, 201), batches_of(y, policy, seed = 9, rng = rng,
      epoch = 200L), label = paste("ClassesPerBatch", rng))
  }
  # rng = "index" reaches any epoch; a stream refuses a jump it cannot afford,
  # with the message of stratified_batches(epoch = ).
  loader = fake_learner(fake_sampler_class(1, seed = 9, rng = "index"))$train_loader(
    fake_task_dataset(task))
  expect_identical(at_epoch(loader, 1e6), stratified_batches(y, 1, seed = 9, rng = "index",
    epoch = 999999L))
  loader = fake_learner(fake_sampler_class(1, seed = 9, rng = "R"))$train_loader(
    fake_task_dataset(task))
  expect_error(at_epoch(loader, 1e6), "epoch=999999 with rng='R'.*Use rng='index'",
    class = "pystratum_error")
})

# --- shards (section Shards of batch_sampler_stratified()) ---------------------------------

# sampler_task() with a shard column: non-contiguous ids in row order.
sharded_task = function() {
  task = sampler_task()
  data = task$data()
  data$shard = c(30L, 30L, 4L, 4L, 4L, 17L, 17L, 30L, 9L, 9L)
  fake_task(data, row_ids = task$row_ids, stratum = "y")
}

test_that("training loaders with shards (a column or ids) serve stratified_batches(shards =)", {
  task = sharded_task()
  y = task$data(cols = "y")$y
  ids = task$data(cols = "shard")$shard
  for (shards in list("shard", ids)) {
    for (policy in list(1, policy_targets(c(neg = 0.5, pos = 0.5), 4))) {
      loader = fake_learner(fake_sampler_class(policy, seed = 7, shards = shards, window = 2))$
        train_loader(fake_task_dataset(task))
      for (k in 1:3) {
        expect_identical(run_epoch(loader), unclass(stratified_batches(y, policy, seed = 7,
          epoch = k - 1L, shards = ids, window = 2))[seq_len(loader$batch_sampler$.length())])
      }
    }
  }
  # shard_sizes() in task$row_ids order.
  loader = fake_learner(fake_sampler_class(1, seed = 7, shards = shard_sizes(c(4, 0, 6))))$
    train_loader(fake_task_dataset(task))
  expect_identical(run_epoch(loader), stratified_batches(y, 1, seed = 7,
    shards = shard_sizes(c(4, 0, 6))))
})

test_that("a resumed run (ctx$epoch set) serves epoch k of the shard-blocked order", {
  task = sharded_task()
  y = task$data(cols = "y")$y
  learner = fake_learner(fake_sampler_class(1, seed = 3, shards = "shard"), version = "dev")
  served = learner$train(fake_task_dataset(task), epochs = 4, resume_from = 2L)
  expect_identical(served$train[[1L]], stratified_batches(y, 1, seed = 3, epoch = 2,
    shards = task$data(cols = "shard")$shard))
})

test_that("prediction and validation loaders ignore shards: every row once, in order", {
  task = sharded_task()
  valid = odd_rows_task()  # no shard column, 7 rows: shards would not fit it
  for (shards in list("shard", task$data(cols = "shard")$shard)) {
    learner = fake_learner(fake_sampler_class(1, seed = 2, shards = shards))
    for (dataset in list(fake_task_dataset(task), fake_task_dataset(valid))) {
      batches = run_epoch(learner$predict_loader(dataset))
      expect_identical(unlist(batches), seq_len(dataset$task$nrow))
    }
    served = learner$train(fake_task_dataset(task), epochs = 2,
      valid_dataset = fake_task_dataset(valid))
    expect_identical(unlist(served$valid[[2L]]), seq_len(valid$nrow))
  }
})

test_that("shards that do not fit the loader's task are refused naming shards and the fix", {
  task = sharded_task()
  make = function(shards) {
    fake_learner(fake_sampler_class(1, seed = 2, shards = shards))$
      train_loader(fake_task_dataset(task))
  }
  expect_pystratum_error(make("no_such_column"), "value_error", "shards",
    "^shards must name a column of the task, got shards='no_such_column'")
  expect_pystratum_error(make("y"), "type_error", "shards",
    "^shards must name a column of whole-number shard ids, got column 'y' of type character")
  error = expect_pystratum_error(make(1:12), "value_error", "shards",
    "^shards must give the shard of each of the 10 rows of the task this loader serves, got 12 ids")
  expect_match(conditionMessage(error), "name a task column instead", fixed = TRUE)
  expect_pystratum_error(make(shard_sizes(c(4, 7))), "value_error", "shards",
    "got shard_sizes\\(\\) adding up to 11 rows")
  expect_pystratum_error(make("x"), "value_error", "shards", "^shards must hold whole numbers")
  # Checked when the class is made (before torch is needed).
  expect_pystratum_error(batch_sampler_stratified(1, shards = c("a", "b")), "type_error",
    "shards", "^shards must be the name of a task column")
  expect_pystratum_error(batch_sampler_stratified(1, shards = factor(1:3)), "type_error",
    "shards", "^shards must be the name of a task column")
  expect_pystratum_error(batch_sampler_stratified(1, window = 3), "value_error", "window",
    "^window=3 has no effect without shards")
  expect_pystratum_error(batch_sampler_stratified(1, shards = "shard", window = 0),
    "value_error", "window")
  expect_pystratum_error(batch_sampler_stratified(policy_classes_per_batch(2, 2),
    shards = "shard", rng = "index", seed = 1), "value_error", "shards",
    "^shards cannot be honoured with rng='index' by ClassesPerBatch")
})

test_that("with mlr3torch: a shard column trains stratified and predicts every row in order", {
  skip_if_not_installed("mlr3torch")
  skip_if_not(torch::torch_is_installed(), "libtorch is not installed")
  task = mlr3::tsk("sonar")
  task$cbind(data.frame(shard = rep(c(5L, 1L, 3L, 8L), length.out = task$nrow)))
  task$set_col_roles("shard", remove_from = "feature")
  task$col_roles$stratum = "Class"
  sampler = batch_sampler_stratified(2, seed = 1, rng = "R", shards = "shard", window = 2)
  learner = mlr3::lrn("classif.mlp", epochs = 2, batch_size = 10, seed = 1,
    batch_sampler = sampler)
  learner$train(task)
  expect_false("shard" %in% task$feature_names)
  prediction = learner$predict(task)
  expect_identical(prediction$row_ids, task$row_ids)
  # Resampling: the column follows the training rows of every fold.
  rr = mlr3::resample(task, learner, mlr3::rsmp("cv", folds = 2))
  expect_identical(sort(rr$prediction()$row_ids), sort(task$row_ids))
})
