# A harness that calls the batch sampler the way mlr3torch does, without
# torch or mlr3. Two versions of mlr3torch are mimicked:
#
# * "0.3.3" (the release): LearnerTorch's private .dataloader(dataset,
#   param_vals) instantiates the `batch_sampler` parameter value (a class)
#   with the dataset, as `param_val(dataset)`, and hands the instance to
#   torch::dataloader(); .dataloader_predict(dataset, param_vals) calls
#   .dataloader(dataset, param_vals_test) with shuffle = FALSE and
#   drop_last = FALSE inserted, so prediction AND validation loaders get the
#   batch sampler too.
# * "dev" (the development version, 0.3.3.9000): .dataloader() refuses
#   `sampler` and `batch_sampler` together, needs `batch_size` only without a
#   batch sampler (and then drops batch_size, shuffle and drop_last), and
#   .dataloader_predict() needs `batch_size_predict` or `batch_size` and
#   drops `sampler` and `batch_sampler`: prediction and validation loaders
#   never see the sampler.
#
# Training (fake_train_loop()) runs as mlr3torch's train_loop(ctx, ...) does
# on both versions: a context `ctx` (class "ContextTorch") whose `epoch` is
# set to 0 (or, resuming from a checkpoint on the development version, to
# the epochs already trained) and incremented before each epoch's
# dataloader iterator is made, i.e. before the sampler's .iter() runs; per
# epoch one iterator (.iter()) called .length() times.
#
# The "sampler class" here is a constructor mimicking what torch::sampler()
# builds: called with a data source it runs the same initialize() body the
# real class runs (sampler_plan()), inside the same call nesting; like the
# real class it keeps one state per class (shared by all its instances).

fake_sampler_class = function(min_samples_per_stratum, shuffle = TRUE, seed = NULL, rng = "R",
  torch_backend = NULL, allow_single_batch = FALSE, shards = NULL, window = 1) {
  class_state = new_sampler_class_state()
  function(data_source) {
    self = new.env()
    initialize = function(data_source) {
      self$data_source = data_source
      self$plan = sampler_plan(data_source, min_samples_per_stratum, shuffle, seed,
        rng, torch_backend, class_state, allow_single_batch = allow_single_batch,
        shards = shards, window = window)
    }
    initialize(data_source)
    self$.iter = function() self$plan$iter(exhausted_sentinel)
    self$.length = function() self$plan$length()
    self
  }
}

# What coro::exhausted() is to torch: the value ending an iteration.
exhausted_sentinel = structure(list(), class = "fake_exhausted")

# A learner with the parameters that reach the data loaders. `batch_sampler`
# and `sampler` are classes (or NULL); NULL parameters are unset.
fake_learner = function(batch_sampler, version = c("0.3.3", "dev"), shuffle = TRUE,
  batch_size = 10L, batch_size_predict = NULL, sampler = NULL) {
  version = match.arg(version)
  loader_params = c("batch_size", "shuffle", "sampler", "batch_sampler", "drop_last")
  instantiate = function(args, dataset) {
    for (param_name in c("sampler", "batch_sampler")) {
      param_val = args[[param_name]]
      if (!is.null(param_val)) {
        args[[param_name]] = param_val(dataset)
      }
    }
    list(dataset = dataset, batch_sampler = args$batch_sampler, sampler = args$sampler,
      batch_size = args$batch_size, shuffle = args$shuffle)
  }
  private = new.env()
  if (version == "0.3.3") {
    private$.dataloader = function(dataset, param_vals) {
      instantiate(param_vals[names(param_vals) %in% loader_params], dataset)
    }
    private$.dataloader_predict = function(dataset, param_vals) {
      param_vals_test = param_vals
      param_vals_test[c("shuffle", "drop_last")] = list(FALSE, FALSE)
      private$.dataloader(dataset, param_vals_test)
    }
  } else {
    private$.dataloader = function(dataset, param_vals) {
      args = param_vals[names(param_vals) %in% loader_params]
      if (!is.null(args$sampler) && !is.null(args$batch_sampler)) {
        stop("fake mlr3torch (dev): 'sampler' and 'batch_sampler' cannot both be set")
      }
      if (is.null(args$batch_sampler)) {
        if (is.null(args$batch_size)) {
          stop("fake mlr3torch (dev): training needs 'batch_size' or a 'batch_sampler'")
        }
      } else {
        args[c("batch_size", "shuffle", "drop_last")] = NULL
      }
      if (!is.null(args$sampler)) args$shuffle = NULL
      instantiate(args, dataset)
    }
    private$.dataloader_predict = function(dataset, param_vals) {
      size = if (is.null(param_vals$batch_size_predict)) param_vals$batch_size else
        param_vals$batch_size_predict
      if (is.null(size)) {
        stop("fake mlr3torch (dev): prediction needs 'batch_size' or 'batch_size_predict'")
      }
      param_vals_test = param_vals
      param_vals_test[c("batch_size", "shuffle", "drop_last")] = list(size, FALSE, FALSE)
      param_vals_test[c("batch_size_predict", "sampler", "batch_sampler")] = NULL
      private$.dataloader(dataset, param_vals_test)
    }
  }
  param_vals = Filter(Negate(is.null), list(batch_size = batch_size, shuffle = shuffle,
    drop_last = FALSE, batch_sampler = batch_sampler, sampler = sampler, seed = 1L,
    batch_size_predict = batch_size_predict))
  list(
    train_loader = function(dataset) private$.dataloader(dataset, param_vals),
    predict_loader = function(dataset) private$.dataloader_predict(dataset, param_vals),
    # learner$train(): the loaders, a context, the loop. `resume_from`: the
    # epochs a checkpoint holds; the development version's resume sets
    # ctx$epoch to it before the loop and restores no random state (the
    # sampler is a new instance, as after any restart).
    train = function(dataset, epochs, resume_from = 0L, valid_dataset = NULL) {
      loader_train = private$.dataloader(dataset, param_vals)
      loader_valid = if (!is.null(valid_dataset)) {
        private$.dataloader_predict(valid_dataset, param_vals)
      }
      ctx = fake_context(loader_train, loader_valid, epochs)
      ctx$epoch = resume_from
      fake_train_loop(ctx)
    }
  )
}

# mlr3torch's ContextTorch (an R6 object, i.e. an environment) with the
# fields the loop uses.
fake_context = function(loader_train, loader_valid, total_epochs) {
  ctx = new.env()
  ctx$loader_train = loader_train
  ctx$loader_valid = loader_valid
  ctx$total_epochs = total_epochs
  ctx$epoch = 0
  class(ctx) = c("ContextTorch", "Context", "R6")
  ctx
}

# train_loop(ctx, ...): epoch incremented (as a double: 0L + 1 on the real
# one), then the epoch's iterator, then validation. Returns what each
# loader served, per epoch.
fake_train_loop = function(ctx) {
  served = list(train = list(), valid = list())
  while (ctx$epoch < ctx$total_epochs) {
    ctx$epoch = ctx$epoch + 1
    served$train[[length(served$train) + 1L]] = run_epoch(ctx$loader_train)
    if (!is.null(ctx$loader_valid)) {
      served$valid[[length(served$valid) + 1L]] = loader_batches(ctx$loader_valid)
    }
  }
  served
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

# What any loader serves: its batch sampler's epoch, or (no batch sampler,
# shuffle FALSE: prediction loaders of the development version) torch's
# sequential batches of batch_size.
loader_batches = function(loader) {
  if (!is.null(loader$batch_sampler)) {
    return(run_epoch(loader))
  }
  testthat::expect_false(isTRUE(loader$shuffle))
  rows = seq_len(loader$dataset$task$nrow)
  unname(split(rows, (rows - 1L) %/% loader$batch_size))
}

# Runs `expr`, muffling and counting the warnings of class `class`.
count_warnings = function(expr, class) {
  count = 0L
  withCallingHandlers(expr, warning = function(w) {
    if (inherits(w, class)) {
      count <<- count + 1L
      invokeRestart("muffleWarning")
    }
  })
  count
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
