# The mlr3torch batch sampler: the twin of pystratum/torch/_sampler.py (the
# epochs it serves come from stratified_epochs(), serving.R).

#' Stratified batch sampler for mlr3torch learners
#'
#' Returns a `torch::sampler()` class (not an instance) for the
#' `batch_sampler` parameter of mlr3torch learners. mlr3torch creates one
#' instance per data loader with the learner's `task_dataset`; the instance
#' reads the strata from the task's `stratum` column role and serves batches
#' with the composition the `policy` guarantees (a number `m`: every stratum
#' has at least `m` rows in every batch; see [policies]), with the allocation
#' of [stratified_batches()].
#'
#' @section Strata:
#' The stratum columns are `task$col_roles$stratum` (one or several columns;
#' the target may hold the role; several columns make every combination of
#' values one stratum). Set it before training, e.g.
#' `task$col_roles$stratum = "Class"`. Batches are 1-based positions in
#' `task$row_ids` order (what mlr3torch's `task_dataset` indexes), not row
#' ids.
#'
#' @section Shards:
#' With `shards`, each training epoch takes every stratum's rows shard block
#' by shard block, exactly as [stratified_batches()] does with the same
#' `shards` and `window` (section *Shards* there; docs/SHARDS.md): a batch
#' reads a few consecutive blocks of shards instead of every shard, with
#' the policy's per-batch counts unchanged. `shards` is either
#' * the name of a task column holding each row's shard id (whole numbers
#'   `>= 0`), read with `task$data()` in `task$row_ids` order when mlr3torch
#'   creates the loader: it follows the task through resampling and
#'   subsetting, so this is the form to use with `mlr3::resample()`. The
#'   column needs no role; take it out of the features, e.g.
#'   `task$set_col_roles("shard", remove_from = "feature")`; or
#' * a vector of shard ids, or [shard_sizes()], in the order of the rows of
#'   the task the training loader gets (`task$row_ids`): for training on a
#'   whole task only, since a resampling's training set has other rows (the
#'   length is checked, and a mismatch is an error saying so).
#'
#' Prediction and validation loaders ignore `shards`: they serve every row
#' once, in row order, as always.
#'
#' @section Epochs and seeds:
#' Each `.iter()` call (mlr3torch makes one per epoch) starts a training
#' epoch with a new shuffle; `.length()` is the number of batches of every
#' epoch, which does not depend on the shuffle. Which epoch it is comes from
#' mlr3torch's training context: its training loop counts epochs in
#' `ctx$epoch` (1, 2, 3, ... when `.iter()` runs) and the sampler reads it
#' from its callers; where no such context is found (the sampler used outside
#' mlr3torch's training loop), the sampler counts its own `.iter()` calls,
#' continuing after the last epoch it served.
#' * `rng = "torch"`, `seed = NULL` (default): permutations come from torch's
#'   global generator, which mlr3torch seeds with the learner's `seed`
#'   parameter, so the learner's seed makes training reproducible.
#' * With a `seed`: a private stream (torch's after `torch_manual_seed(seed)`,
#'   or R's after `set.seed(seed)` for `rng = "R"`); epoch `k` (0-based; the
#'   learner's epoch `k + 1`) uses its `(k + 1)`-th permutation, exactly as
#'   `stratified_batches(strata, policy, seed = seed, rng = rng, epoch = k)`
#'   and the Python package's samplers do, whatever happened in the process
#'   before: a sampler created anew at a later epoch (a run resumed from a
#'   checkpoint) serves that epoch's batches. The global generators (torch's,
#'   and R's `.Random.seed`) are saved and restored around every draw.
#' * `rng = "R"`, `seed = NULL`: R's session stream, which the learner's
#'   `seed` parameter does not control.
#'
#' @section Resuming from a checkpoint:
#' mlr3torch's development version (0.3.3.9000) can resume training from a
#' checkpoint (`resume = TRUE` with `t_clbk("checkpoint")`): it creates the
#' sampler anew, sets `ctx$epoch` to the epochs the checkpoint holds and
#' restores neither R's nor the sampler's random state. With a `seed` (or
#' with `shuffle = FALSE`), the resumed run serves exactly the batches of an
#' uninterrupted run in every epoch. Without a `seed`, each epoch is the next
#' draw of a global stream: the resumed epochs are new shuffles with the same
#' per-batch composition, but in general not the batches an uninterrupted
#' run would have served. mlr3torch 0.3.3 has no such resume.
#'
#' @section Prediction and validation loaders:
#' A batch sampler must never reorder the rows a prediction is made for:
#' predictions are assembled in the order the batches come.
#' * mlr3torch 0.3.3 also instantiates the batch sampler for prediction and
#'   validation loaders. It creates those loaders in its private
#'   `.dataloader_predict()`; the sampler recognises them by that function
#'   among its callers and serves every row once, in row order, in
#'   consecutive batches of the same sizes as the training batches (for
#'   policies whose epochs recycle or leave out rows, `policy_targets()` and
#'   `policy_downsample()`: batches of the largest training batch size, the
#'   last one shorter).
#' * mlr3torch's development version (0.3.3.9000) uses `sampler` and
#'   `batch_sampler` for training only. `batch_size` may then be omitted for
#'   training (the batch sampler makes the batches), but prediction,
#'   including the validation data during training, needs `batch_size` or
#'   the new `batch_size_predict`; give `batch_size` to work with both
#'   versions. Setting both `sampler` and `batch_sampler` is an error there.
#'
#' Training loaders always get the policy's batches. The learner's own
#' `shuffle` parameter has no effect on them (the development version ignores
#' it once a batch sampler is set): with the learner's `shuffle = FALSE`,
#' training epochs are still shuffled, and a warning of class
#' `pystratum_learner_shuffle_ignored` says so once per sampler class. For
#' training batches in row order, use this function's `shuffle = FALSE`.
#'
#' @inheritParams stratified_batches
#' @param shuffle (`logical(1)`)\cr
#'   `FALSE` serves the rows of every training epoch in row order (still
#'   grouped into stratified batches). The learner's `shuffle` parameter does
#'   not do this, see section *Prediction and validation loaders*.
#' @param seed (`NULL` or `integer(1)`)\cr
#'   Seed of a private random stream, see section *Epochs and seeds*. For
#'   `rng = "torch"` a whole number between 0 and 2^53; for `rng = "R"`
#'   between -2147483647 and 2147483647, as [set.seed()] takes. Must be
#'   `NULL` when `shuffle = FALSE`.
#' @param allow_single_batch (`logical(1)`)\cr
#'   `FALSE` (default): a training loader whose plan is a single batch
#'   holding every row is refused when mlr3torch creates it (the error of
#'   [stratified_batches()], section *A single batch*; the count is the
#'   plan's batches per epoch). Prediction and validation loaders (every row
#'   once, in order) are never refused. `TRUE` when one batch per epoch is
#'   really meant.
#' @param rng (`character(1)`)\cr
#'   `"torch"` (default) or `"R"`, see section *Epochs and seeds*. The
#'   default differs from [stratified_batches()] (`"R"`) so that, with
#'   `seed = NULL`, the mlr3torch learner's `seed` controls the shuffle; to
#'   get the batches of a Python run, give a `seed` and the same `rng` on
#'   both sides. `"index"`: the keyed bijections of Python's `rng = "index"`
#'   (any epoch computed directly; `seed` in `[0, 2^52)`).
#'
#' @param shards (`NULL`, `character(1)`, `integer()` or [shard_sizes()])\cr
#'   The shard of every row, see section *Shards*: a task column's name, or
#'   ids / sizes in `task$row_ids` order. `NULL` (default): no shards.
#' @param window (`integer(1)`)\cr
#'   `W`, the number of consecutive shards in a block (default 1), as in
#'   [stratified_batches()].
#'
#' @return A `torch_sampler` class generator: call it with a dataset (as
#'   mlr3torch does) to get a batch sampler.
#'
#' @seealso [stratified_batches()] for the batches as a list.
#' @export
#' @examplesIf requireNamespace("mlr3torch", quietly = TRUE) && torch::torch_is_installed()
#' task = mlr3::tsk("sonar")
#' task$col_roles$stratum = "Class"
#' # batch_size: mlr3torch 0.3.3 expects it; its development version trains
#' # without it but needs it (or batch_size_predict) to predict.
#' learner = mlr3::lrn("classif.mlp", epochs = 3, batch_size = 10, seed = 1,
#'   batch_sampler = batch_sampler_stratified(2))
#' learner$train(task)
#' learner$predict(task)
batch_sampler_stratified = function(policy, shuffle = TRUE, seed = NULL,
  rng = c("torch", "R", "index"), min_samples_per_stratum = NULL, allow_single_batch = FALSE,
  shards = NULL, window = 1) {
  policy = resolve_policy(if (missing(policy)) NULL else policy, min_samples_per_stratum)
  rng = if (missing(rng)) "torch" else assert_choice(rng, "rng", c("torch", "R", "index"))
  shuffle = assert_flag(shuffle, "shuffle")
  allow_single_batch = assert_flag(allow_single_batch, "allow_single_batch")
  window = check_shard_arguments(assert_sampler_shards(shards), window, policy, rng)
  assert_seed_with_shuffle(seed, shuffle)
  seed = assert_seed(seed, rng)
  require_torch("batch_sampler_stratified()")
  # Shared by every instance of this class (one per data loader).
  class_state = new_sampler_class_state()
  torch::sampler(
    "pystratum_batch_sampler_stratified",
    initialize = function(data_source) {
      self$data_source = data_source
      self$plan = sampler_plan(data_source, policy, shuffle, seed, rng, class_state = class_state,
        allow_single_batch = allow_single_batch, shards = shards, window = window)
    },
    .iter = function() {
      self$plan$iter(coro::exhausted())
    },
    .length = function() {
      self$plan$length()
    }
  )
}

# What the instances of one sampler class share: whether the learner's
# shuffle = FALSE has been reported (once per class, not per loader or fold).
new_sampler_class_state = function() {
  state = new.env(parent = emptyenv())
  state$shuffle_reported = FALSE
  state
}

# What a sampler instance does, without torch: read the strata from the data
# source's task, tell training from prediction loaders, and serve epochs.
# Called from the sampler's initialize(), i.e. from inside mlr3torch's
# .dataloader(); its $iter() from the sampler's .iter(), i.e. from inside
# mlr3torch's training loop. No variable on these paths may be called `ctx`
# or `param_vals`, which training_epoch_from_callers() and
# learner_shuffle_is_off() look up in the callers.
sampler_plan = function(data_source, policy, shuffle, seed, rng, torch_backend = NULL,
  class_state = new_sampler_class_state(), allow_single_batch = FALSE, shards = NULL,
  window = 1) {
  task = data_source_task(data_source)
  strata = task_strata(task)
  predicting = loader_is_for_prediction()
  # Prediction and validation loaders serve every row in order: no shards
  # (their task may have other rows than the training one).
  if (predicting) {
    shards = NULL
    window = 1
  } else {
    shards = task_shards(task, shards)
  }
  if (!predicting && shuffle && !class_state$shuffle_reported && learner_shuffle_is_off()) {
    class_state$shuffle_reported = TRUE
    warn_learner_shuffle_ignored()
  }
  # Prediction and validation loaders serve every row once, in order, not
  # stratified batches: a one-batch plan is no reason to refuse them. A
  # training loader is refused here, when mlr3torch builds it.
  make_epochs = function() {
    stratified_epochs(strata, policy, shuffle = shuffle, seed = seed,
      rng = rng, torch_backend = torch_backend,
      allow_single_batch = allow_single_batch || predicting, shards = shards, window = window)
  }
  # A too-small stratum is reported by the training loader; prediction and
  # validation loaders (every row once, in order) need not repeat it.
  epochs = if (predicting) {
    suppressWarnings(make_epochs(), classes = "pystratum_stratum_too_small")
  } else {
    make_epochs()
  }
  # Epoch k's batches depend on k alone with a private stream (a seed) or
  # none (shuffle = FALSE: the allocation may still change with k). Without a
  # seed, each epoch is the next draw of a global stream, which cannot be
  # replayed: the epoch's number does not select it.
  replayable = !shuffle || !is.null(seed)
  # Epoch `epoch` (0-based) as stratified_epochs() serves it: the next one
  # when it is the one the stream stands at (the usual case, one draw per
  # epoch); otherwise (a run resumed from a checkpoint, a rewound ctx$epoch) a
  # fresh stream advanced to it, which also positions later epochs.
  # The fresh stream skips the earlier epochs by their draws alone (none for
  # rng = "index" or no shuffle), never assembling their batches; a jump
  # costing too many draws is refused as stratified_batches(epoch = ) does.
  training_epoch = function(epoch) {
    if (replayable && epoch != epochs$epochs_served()) {
      epochs <<- suppressWarnings(make_epochs(), classes = "pystratum_stratum_too_small")
      epochs$start_at(epoch)
    }
    epochs$next_epoch()
  }
  list(
    predicting = predicting,
    epochs_served = function() epochs$epochs_served(),
    length = function() if (predicting) length(epochs$prediction_sizes) else epochs$length(),
    iter = function(exhausted) {
      batches = if (predicting) {
        epochs$in_order()
      } else {
        # mlr3torch's epoch where its loop provides it; otherwise (no
        # training context among the callers) one epoch per .iter() call.
        epoch = training_epoch_from_callers()
        training_epoch(if (is.null(epoch)) epochs$epochs_served() else epoch)
      }
      batch_iterator(batches, exhausted)
    }
  )
}

# Whether the loader being created is a prediction or validation loader, by
# what it is rather than by a parameter a user may set: mlr3torch makes those
# loaders in its private .dataloader_predict(dataset, param_vals), which calls
# .dataloader(), which instantiates the sampler class. mlr3torch 0.3.3 passes
# the batch sampler on to them (and assembles predictions in batch order);
# the development version (0.3.3.9000) drops `sampler` and `batch_sampler`
# there, so the sampler only ever sees training loaders. Training loaders are
# made by .dataloader() directly on both versions. mlr3torch calls it as
# private$.dataloader_predict(...); subclasses overriding it call
# super$.dataloader_predict(...).
loader_is_for_prediction = function() {
  any(vapply(sys.calls(), called_function_name, "") == ".dataloader_predict")
}

# The name a call calls its function by: `f(...)`, `obj$f(...)`,
# `obj[["f"]](...)`, `pkg::f(...)`; "" for anything else (an anonymous
# function, a function object spliced in by do.call()).
called_function_name = function(call) {
  fun = call[[1L]]
  if (is.symbol(fun)) {
    return(as.character(fun))
  }
  accessors = c("$", "[[", "@", "::", ":::")
  if (is.call(fun) && length(fun) == 3L && is.symbol(fun[[1L]]) &&
    as.character(fun[[1L]]) %in% accessors) {
    name = fun[[3L]]
    if (is.symbol(name) || (is.character(name) && length(name) == 1L && !is.na(name))) {
      return(as.character(name))
    }
  }
  ""
}

# The current training epoch, 0-based, from mlr3torch's training context, or
# NULL when no usable one is among the callers. mlr3torch's train_loop(ctx,
# ...) (0.3.3 and the development version) sets ctx$epoch to 0 -- or, resuming
# from a checkpoint (development version), to the epochs already trained --
# and increments it before making each epoch's dataloader iterator, whose
# creation calls the batch sampler's .iter(): there ctx$epoch is 1, 2, 3, ...
# The context is an R6 object of class "ContextTorch". dynGet() searches the
# calling frames from the innermost outwards (not the global environment),
# so the loop's own `ctx` is found first.
training_epoch_from_callers = function() {
  context = tryCatch(dynGet("ctx", ifnotfound = NULL), error = function(e) NULL)
  if (!inherits(context, "ContextTorch")) {
    return(NULL)
  }
  epoch = tryCatch(context[["epoch"]], error = function(e) NULL)
  if (!is.numeric(epoch) || length(epoch) != 1L || is.na(epoch) || epoch < 1 ||
    epoch > .Machine$integer.max || epoch != trunc(epoch)) {
    return(NULL)
  }
  as.integer(epoch) - 1L
}

# Whether the learner's `shuffle` reaching this (training) loader is FALSE:
# both mlr3torch versions call .dataloader(dataset, param_vals) with the
# learner's parameter values, `shuffle` among them; the development version
# then ignores it, since a batch sampler makes the batches. dynGet() finds
# .dataloader()'s argument before any outer `param_vals`.
learner_shuffle_is_off = function() {
  loader_args = tryCatch(dynGet("param_vals", ifnotfound = NULL), error = function(e) NULL)
  is.list(loader_args) && isFALSE(loader_args[["shuffle"]])
}

warn_learner_shuffle_ignored = function() {
  condition = structure(
    class = c("pystratum_learner_shuffle_ignored", "warning", "condition"),
    list(message = paste0(
      "The learner's shuffle = FALSE does not reach batch_sampler_stratified(): the batch ",
      "sampler makes every training batch, so training epochs are still shuffled and keep the ",
      "policy's composition (prediction loaders serve the rows in order anyway). For training ",
      "batches in row order, use batch_sampler_stratified(..., shuffle = FALSE); to silence ",
      "this warning, leave the learner's shuffle at TRUE."), call = NULL)
  )
  warning(condition)
}

data_source_task = function(data_source) {
  # get0() reads an R6 object's field without S3 dispatch on `$`.
  task = if (is.environment(data_source)) {
    get0("task", envir = data_source, inherits = FALSE)
  } else if (is.list(data_source)) {
    data_source[["task"]]
  }
  if (is.null(task)) {
    abort_type("data_source", sprintf(paste0(
      "batch_sampler_stratified() needs a data set with a $task (mlr3torch's task_dataset), ",
      "got an object of class %s without one. With mlr3torch this happens when the ",
      "learner's tensor_dataset parameter is TRUE: set tensor_dataset = FALSE to use this ",
      "batch sampler."), paste0("'", class(data_source), "'", collapse = "/")))
  }
  task
}

# The stratum columns, in task$row_ids order (positions, as task_dataset's
# $.getbatch(index) reads task$row_ids[index]).
task_strata = function(task) {
  columns = task$col_roles$stratum
  if (length(columns) == 0L) {
    abort_value("data_source", sprintf(paste0(
      "Task '%s' has no stratum column, so batch_sampler_stratified() cannot tell the strata ",
      "apart. Set the column role before training, e.g. task$col_roles$stratum = \"%s\" ",
      "(the target or any other column; several columns make every combination a stratum)."),
      if (is.null(task$id)) "" else task$id,
      if (length(task$target_names)) task$target_names[[1L]] else "y"))
  }
  task$data(rows = task$row_ids, cols = columns)
}

# The sampler's `shards` when the class is made: NULL, a column name
# (character(1)), or ids / shard_sizes() in task row order (checked against
# the task's rows when a loader is made). Returns it unchanged.
assert_sampler_shards = function(shards) {
  if (is.null(shards) || inherits(shards, "pystratum_shard_sizes") ||
    ((is.integer(shards) || is.double(shards)) && !is.object(shards))) {
    return(shards)
  }
  if (is.character(shards) && length(shards) == 1L && !is.na(shards) && nzchar(shards)) {
    return(shards)
  }
  abort_type("shards", sprintf(paste0("shards must be the name of a task column (one string), ",
    "a vector of shard ids in task$row_ids order or shard_sizes(sizes), got shards=%s of type ",
    "%s. Pass e.g. shards = \"shard\" for a task column holding each row's shard id."),
    show_value(shards), if (is.object(shards)) paste(class(shards), collapse = "/") else
      type_name(shards)))
}

# The shards of a training loader's task, in task$row_ids order: the named
# column read from the task, or the ids / sizes given, whose length must be
# the task's rows (a resampling's training set has fewer).
task_shards = function(task, shards) {
  if (is.null(shards)) {
    return(NULL)
  }
  n_rows = length(task$row_ids)
  if (is.character(shards)) {
    column = tryCatch(task$data(rows = task$row_ids, cols = shards)[[1L]],
      error = function(e) NULL)
    if (is.null(column)) {
      abort_value("shards", sprintf(paste0("shards must name a column of the task, got ",
        "shards='%s', which task '%s' does not have. Add the shard id of every row as a ",
        "column (it needs no role: task$set_col_roles(\"%s\", remove_from = \"feature\")), ",
        "or pass the ids as a vector in task$row_ids order."), shards,
        if (is.null(task$id)) "" else task$id, shards))
    }
    if (is.factor(column) || is.character(column) || is.logical(column)) {
      abort_type("shards", sprintf(paste0("shards must name a column of whole-number shard ",
        "ids, got column '%s' of type %s. Convert it, e.g. as.integer(factor(x)) (ids are ",
        "labels: the shard order is that of the ids)."), shards, type_name(column)))
    }
    return(column)
  }
  sizes = inherits(shards, "pystratum_shard_sizes")
  given = if (sizes) sum(shards$sizes) else length(shards)
  if (given != n_rows) {
    abort_value("shards", sprintf(paste0("shards must give the shard of each of the %s rows of ",
      "the task this loader serves, got %s. A vector (or shard_sizes()) is read in ",
      "task$row_ids order, so it fits the whole task only; for a resampling's training set ",
      "name a task column instead (shards = \"shard\"), which follows the rows."),
      format(n_rows, scientific = FALSE), if (sizes) {
        sprintf("shard_sizes() adding up to %s rows", format(given, scientific = FALSE))
      } else {
        sprintf("%d ids", length(shards))
      }))
  }
  shards
}
