# Serving: the epoch bookkeeping behind batch_sampler_stratified(), without
# torch (the twin of pystratum/serving/).
#
# stratified_epochs() validates and encodes the strata once and keeps one
# random stream across epochs: every $next_epoch() runs the pipeline of
# stratified_batches() (plan_epoch(), plan.R) on the stream's next group of
# draws, so epoch k is the (k + 1)-th group, as in stratified_batches(seed = ,
# epoch = k), for every policy. The torch sampler class only wraps this
# object, so everything but the torch calls is tested without torch.
#
# Fields and methods of the returned environment (class "pystratum_epochs"):
#   $n_rows, $batch_sizes         rows, and rows per batch of epoch 0
#   $length()                     number of batches of every epoch
#   $epochs_served()              how many epochs $next_epoch() has returned
#   $start_at(epoch)              on a fresh object: make `epoch` the next one
#                                 (rng = "index" or no shuffle: nothing drawn;
#                                 a stream draws the skipped epochs' draws,
#                                 priced by epoch_skip_groups(), assembling none)
#   $next_epoch()                 the next epoch's batches (a new shuffle; its
#                                 group of draws: one permutation, or for
#                                 sampling policies the draws of
#                                 stratum_draws())
#   $in_order()                   every row once, in row order, in batches of
#                                 $prediction_sizes (for prediction loaders)
#   $prediction_sizes             $batch_sizes when an epoch serves every row
#                                 once; otherwise (policies that recycle or
#                                 leave out rows) batches of the largest
#                                 training batch size, the last one shorter
stratified_epochs = function(strata, policy, shuffle = TRUE, seed = NULL,
  rng = c("R", "torch", "index"), torch_backend = NULL, allow_single_batch = FALSE,
  shards = NULL, window = 1) {
  policy = as_policy(policy)
  rng = if (missing(rng)) "R" else assert_choice(rng, "rng", c("R", "torch", "index"))
  shuffle = assert_flag(shuffle, "shuffle")
  allow_single_batch = assert_flag(allow_single_batch, "allow_single_batch")
  window = check_shard_arguments(shards, window, policy, rng)
  assert_seed_with_shuffle(seed, shuffle)
  seed = assert_seed(seed, rng)
  if (rng == "index") seed = assert_index_seed(seed)
  encoded = encode_strata(strata)
  shards = resolve_shards(shards, window, encoded$n_rows)
  check_strata_are_groups(encoded)
  # Epoch 0's allocation (and any warning, or the single-batch error) now;
  # later epochs may rotate counts but keep the number of batches.
  allocation_0 = allocate_checked_epoch(policy, encoded, 0, allow_single_batch)
  # Keyed plans cannot pool or recycle with shards: refused now, not at the first epoch.
  if (shuffle && rng == "index") check_index_shards(shards, policy, allocation_0, encoded)

  self = new.env(parent = emptyenv())
  self$n_rows = encoded$n_rows
  self$batch_sizes = allocation_batch_sizes(allocation_0)
  self$prediction_sizes = prediction_batch_sizes(encoded$n_rows, self$batch_sizes)
  self$shuffle = shuffle
  self$seed = seed
  self$rng = rng
  # Created on the first shuffled epoch, so a loader that only predicts never
  # needs torch and never touches a random generator.
  draw = NULL
  pass_key = NULL  # classes = "uniform"'s pass key (uniform_pass_key())
  served = 0L

  self$length = function() length(self$batch_sizes)
  self$epochs_served = function() served
  self$next_epoch = function() {
    allocation = if (served == 0L) allocation_0 else
      allocate_epoch(policy, encoded, served, n_batches = self$length(), warn = FALSE)
    index_seed = NULL
    if (shuffle && rng == "index") {
      # Keyed bijections: epoch k is computed directly, no stream to keep.
      if (is.null(self$seed)) self$seed = sample.int(.Machine$integer.max, 1L) - 1
      index_seed = self$seed
    } else if (shuffle && is.null(draw)) {
      draw <<- permutation_stream(rng, seed, torch_backend)
    }
    if (shuffle && is.null(pass_key)) pass_key <<- uniform_pass_key(allocation, seed)
    batches = plan_epoch(encoded, policy, served, allocation, draw = draw,
      index_seed = index_seed, pass_key = pass_key, shards = shards)
    served <<- served + 1L
    batches
  }
  # rng = "index" and unshuffled epochs are computed from their number, so
  # nothing is drawn; a stream draws the skipped epochs' groups (priced and
  # refused when too costly), without assembling their batches.
  self$start_at = function(epoch) {
    if (served != 0L) {
      stop("internal error: $start_at() needs an epochs object that has served no epoch")
    }
    if (shuffle && rng != "index" && epoch > 0) {
      draw <<- stream_at_epoch(policy, encoded, epoch, allocation_0, rng, seed, torch_backend,
        shards = shards)
    }
    served <<- as.integer(epoch)
    invisible(self)
  }
  self$in_order = function() consecutive_batches(self$prediction_sizes)
  class(self) = "pystratum_epochs"
  self
}

# Prediction must see every row exactly once, in row order; a training epoch
# of Targets (recycled rows) or Downsample (rows left out) has another total.
prediction_batch_sizes = function(n_rows, batch_sizes) {
  if (sum(batch_sizes) == n_rows) {
    return(batch_sizes)
  }
  size = max(batch_sizes)
  full = n_rows %/% size
  as.integer(c(rep.int(size, full), if (n_rows > full * size) n_rows - full * size))
}

#' @export
print.pystratum_epochs = function(x, ...) {
  cat(sprintf(paste0("<pystratum_epochs> %d rows, %d batches per epoch, shuffle=%s, ",
    "rng='%s', seed=%s, %d epochs served\n"),
    x$n_rows, x$length(), x$shuffle, x$rng, show_value(x$seed), x$epochs_served()))
  invisible(x)
}

# A closure serving `batches` one per call, then `exhausted` (the sentinel
# torch's dataloader waits for: coro::exhausted()) on every later call.
batch_iterator = function(batches, exhausted) {
  served = 0L
  function() {
    if (served >= length(batches)) {
      return(exhausted)
    }
    served <<- served + 1L
    batches[[served]]
  }
}
