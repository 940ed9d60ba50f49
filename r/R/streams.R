# Random streams: where each epoch's permutation comes from (the twin of
# pystratum/streams/: the registry, R's and torch's streams; rng = "index",
# the random-access stream, is in streams_index.R).
#
# A stream is a function(n, size = n) returning the next `size` distinct
# values of 1..n in random order (a permutation when size = n); calling it
# k + 1 times gives epoch k. Recycling policies draw short last passes
# (size < n): R's sample.int(n, size), torch's randperm(n) cut. The
# allocation never draws random numbers.
#
# * rng = "R": with a seed, a private stream started by set.seed(seed) with
#   R's default generators (Mersenne-Twister, Inversion, Rejection), one
#   sample.int(n) per epoch, exactly what R code looping over epochs would
#   draw. The caller's .Random.seed is saved before and restored after every
#   draw (removed again when it did not exist), so the session's stream and
#   RNG kinds are untouched. Without a seed: the session's stream.
# * rng = "torch": with a seed, a private stream started by
#   torch_manual_seed(seed), one torch_randperm(n) per epoch; torch's global
#   generator is saved and restored around every draw. Without a seed:
#   torch's global generator, which mlr3torch seeds with the learner's `seed`.
#
# The Python core (pystratum.RStream, its torch stream) reproduces both
# streams, so the same seed gives the same batches in both languages.

permutation_stream = function(rng, seed, torch_backend = NULL) {
  if (rng == "R") {
    return(r_stream(seed))
  }
  if (is.null(torch_backend)) {
    torch_backend = default_torch_backend()
  }
  torch_stream(seed, torch_backend)
}

r_stream = function(seed) {
  if (is.null(seed)) {
    return(function(n, size = n) sample.int(n, size))
  }
  # The private stream's .Random.seed after its last draw.
  state = NULL
  # Runs draws() on the private stream, the caller's RNG put back afterwards.
  with_stream = function(draws) {
    restore = stash_random_seed()
    on.exit(restore())
    if (is.null(state)) {
      set.seed(as.integer(seed), kind = "Mersenne-Twister", normal.kind = "Inversion",
        sample.kind = "Rejection")
    } else {
      assign(".Random.seed", state, envir = globalenv())
    }
    out = draws()
    state <<- get(".Random.seed", envir = globalenv(), inherits = FALSE)
    out
  }
  # size < n: R's own partial draw (size draws, not n).
  draw = function(n, size = n) with_stream(function() sample.int(n, size))
  # A group of draws (draw_group()) under one save and restore of the caller's
  # RNG: many small draws (recycled passes, refills) pay it once, not per draw.
  attr(draw, "group") = function(sizes, takes) {
    with_stream(function() unname(Map(sample.int, sizes, takes)))
  }
  draw
}

# Returns a function putting the session's RNG back as it is now.
stash_random_seed = function() {
  env = globalenv()
  if (exists(".Random.seed", envir = env, inherits = FALSE)) {
    saved = get(".Random.seed", envir = env, inherits = FALSE)
    # .Random.seed also records the RNG kinds, so putting it back restores them.
    return(function() assign(".Random.seed", saved, envir = env))
  }
  kinds = RNGkind()
  function() {
    # set.seed() above may have changed the kinds; RNGkind() then leaves a
    # fresh .Random.seed behind, which is removed to leave no trace.
    suppressWarnings(RNGkind(kinds[[1L]], kinds[[2L]], kinds[[3L]]))
    if (exists(".Random.seed", envir = env, inherits = FALSE)) {
      rm(".Random.seed", envir = env)
    }
  }
}

torch_stream = function(seed, backend) {
  force(backend)  # fail now, not at the first draw, when torch is missing
  if (is.null(seed)) {
    return(function(n, size = n) backend$randperm(n)[seq_len(size)])
  }
  # The private generator's state after its last draw.
  state = NULL
  function(n, size = n) {
    # Saves torch's global generator state (CPU and CUDA) now and restores it
    # when this function returns.
    backend$local_manual_seed(seed, environment())
    if (!is.null(state)) {
      backend$set_state(state)
    }
    permutation = backend$randperm(n)
    state <<- backend$get_state()
    # A short draw is the whole randperm(n) cut (libtorch has no cheaper one).
    permutation[seq_len(size)]
  }
}

# torch's functions, looked up only when rng = "torch" is used, so the
# package needs torch only for that.
default_torch_backend = function(needed_for = "rng = \"torch\"") {
  require_torch(needed_for)
  list(
    randperm = function(n) as.integer(torch::as_array(torch::torch_randperm(n))) + 1L,
    get_state = function() torch::torch_get_rng_state(),
    set_state = function(state) torch::torch_set_rng_state(state),
    local_manual_seed = function(seed, envir) {
      # torch_manual_seed() hands the seed to libtorch as text; format() avoids
      # as.character()'s "1e+05" for whole doubles.
      torch::local_torch_manual_seed(format(seed, scientific = FALSE), .env = envir)
    }
  )
}

require_torch = function(needed_for) {
  if (!requireNamespace("torch", quietly = TRUE)) {
    abort_missing_package("torch", needed_for)
  }
  invisible(TRUE)
}

# The permutation of epoch `epoch` (0-based) of a fresh stream, or row order.
epoch_permutation = function(n, shuffle, rng, seed, epoch) {
  if (!shuffle) {
    return(NULL)
  }
  epoch_skip_groups(epoch, rng, n)  # refuses an unaffordable jump before drawing
  draw = permutation_stream(rng, seed)
  for (k in seq_len(epoch)) {
    draw(n)
  }
  draw(n)
}

# An epoch's draws from a stream (a function(n, size) giving the next
# `size` distinct values of 1..n in random order, see permutation_stream()),
# one per entry of `group` (epoch_draw_group()).
draw_group = function(draw, group) {
  grouped = attr(draw, "group")
  if (!is.null(grouped)) {
    return(grouped(group$sizes, group$takes))
  }
  unname(Map(draw, group$sizes, group$takes))
}
