# A harness that calls the batch sampler the way mlr3torch 0.3.3 does,
# without torch or mlr3:
#
# * LearnerTorch's private .dataloader(dataset, param_vals) instantiates the
#   `batch_sampler` parameter value (a class) with the dataset, as
#   `param_val(dataset)`, and hands the instance to torch::dataloader();
# * .dataloader_predict(dataset, param_vals) calls
#   .dataloader(dataset, param_vals_test) with shuffle = FALSE and
#   drop_last = FALSE inserted (prediction and validation loaders);
# * the training loop asks for length(loader) (the sampler's .length()),
#   then per epoch makes one iterator (.iter()) and calls it .length() times.
#
# The "sampler class" here is a constructor mimicking what torch::sampler()
# builds: called with a data source it runs the same initialize() body the
# real class runs (sampler_plan()), inside the same call nesting.

fake_sampler_class = function(min_samples_per_stratum, shuffle = TRUE, seed = NULL, rng = "R",
  torch_backend = NULL) {
  function(data_source) {
    self = new.env()
    initialize = function(data_source) {
      self$data_source = data_source
      self$plan = sampler_plan(data_source, min_samples_per_stratum, shuffle, seed,
        rng, torch_backend)
    }
    initialize(data_source)
    self$.iter = function() self$plan$iter(exhausted_sentinel)
    self$.length = function() self$plan$length()
    self
  }
}

# What coro::exhausted() is to torch: the value ending an iteration.
exhausted_sentinel = structure(list(), class = "fake_exhausted")

fake_learner = function(batch_sampler) {
  private = new.env()
  private$.dataloader = function(dataset, param_vals) {
    args = param_vals[names(param_vals) %in% c("batch_size", "shuffle", "sampler",
      "batch_sampler", "drop_last")]
    for (param_name in c("sampler", "batch_sampler")) {
      param_val = args[[param_name]]
      if (!is.null(param_val)) {
        args[[param_name]] = param_val(dataset)
      }
    }
    list(dataset = dataset, batch_sampler = args$batch_sampler)
  }
  private$.dataloader_predict = function(dataset, param_vals) {
    param_vals_test = param_vals
    param_vals_test[c("shuffle", "drop_last")] = list(FALSE, FALSE)
    private$.dataloader(dataset, param_vals_test)
  }
  param_vals = list(batch_size = 10L, shuffle = TRUE, drop_last = FALSE,
    batch_sampler = batch_sampler, seed = 1L)
  list(
    train_loader = function(dataset) private$.dataloader(dataset, param_vals),
    predict_loader = function(dataset) private$.dataloader_predict(dataset, param_vals)
  )
}

# One epoch as mlr3torch's train loop runs it: .length() steps of one
# iterator. Also checks that the iterator is exhausted right after.
run_epoch = function(loader) {
  sampler = loader$batch_sampler
  n_steps = sampler$.length()
  iterator = sampler$.iter()
  batches = lapply(seq_len(n_steps), function(step) iterator())
  testthat::expect_false(any(vapply(batches, inherits, NA, "fake_exhausted")))
  testthat::expect_s3_class(iterator(), "fake_exhausted")
  batches
}

# A Task-like object: row ids (not positions), column roles, data(rows, cols)
# returning rows in the order of `rows`, like mlr3's Task$data().
fake_task = function(data, row_ids, stratum = character(), target = "y", id = "fake") {
  stopifnot(nrow(data) == length(row_ids))
  task = new.env()
  task$id = id
  task$row_ids = row_ids
  task$nrow = length(row_ids)
  task$target_names = target
  task$col_roles = list(feature = setdiff(names(data), target), target = target,
    stratum = stratum)
  task$data = function(rows = NULL, cols = NULL) {
    if (is.null(rows)) rows = task$row_ids
    if (is.null(cols)) cols = names(data)
    data[match(rows, row_ids), cols, drop = FALSE]
  }
  task
}

# mlr3torch's task_dataset keeps the task in $task and reads
# task$row_ids[index] for a batch.
fake_task_dataset = function(task) {
  dataset = new.env()
  dataset$task = task
  dataset$.getbatch = function(index) task$data(rows = task$row_ids[index])
  dataset
}

# A stand-in for torch's generator, to test the private torch stream
# without torch: a global state, randperm() advancing it, and
# local_manual_seed() that restores the state when `envir` exits.
fake_torch_backend = function() {
  generator = new.env()
  generator$state = 12345
  generator$seeded = list()
  list(
    generator = generator,
    randperm = function(n) {
      generator$state = generator$state + 1
      order(sin(seq_len(n) * (generator$state %% 1000 + 1.5)))
    },
    get_state = function() generator$state,
    set_state = function(state) generator$state = state,
    local_manual_seed = function(seed, envir) {
      old = generator$state
      restore = function() generator$state = old
      generator$seeded[[length(generator$seeded) + 1L]] = seed
      generator$state = seed * 1000
      do.call(on.exit, list(as.call(list(restore)), TRUE), envir = envir)
    }
  )
}
