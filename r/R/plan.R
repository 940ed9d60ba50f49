# The public core: strata in, the batches of one epoch out (the twin of
# pystratum/engine/_plan.py): the arguments checked in one order, then
# encode -> allocate (checked) -> draws -> assemble.

#' Mini-batches that contain every stratum
#'
#' Splits the rows of a data set into mini-batches whose composition the
#' `policy` guarantees (see [policies]). With a number `m` (the default
#' composition) every batch holds at least `m` rows of every stratum: the
#' allocation of Hocking (2025), computed in exact integer arithmetic:
#' with `N_min` the size of the smallest stratum and
#' `m = min_samples_per_stratum`, there are `num_batches = max(1, N_min %/% m)`
#' batches, and the row of rank `i` (order of appearance in the epoch's
#' permutation) in a stratum of `N_s` rows goes to batch
#' `ceiling(i * num_batches / N_s)`.
#'
#' @section Guarantees:
#' * Every row appears in exactly one batch.
#' * When `N_min >= m`, every batch holds at least `m` rows of every stratum,
#'   and a stratum's per-batch counts differ by at most one.
#' * At least two batches, or an error unless `allow_single_batch = TRUE`.
#' * Batches come in order `1..num_batches`; inside a batch, rows keep the
#'   order of the permutation (sampling policies, [policy_targets()] and
#'   [policy_downsample()]: stratum by stratum, see [sampling_policies]).
#' * The same `(strata, policy, seed, rng, epoch)` always
#'   gives the same batches, and the Python function
#'   `pystratum.stratified_batches(..., rng = "R")` gives the same batches
#'   minus one (0-based positions).
#' * Relabelling strata (renaming, reordering factor levels) changes nothing:
#'   only which rows share a stratum matters.
#'
#' @section A single batch:
#' A plan of a single batch holding every row (a stratum too small for two
#' batches, e.g. one row of a rare class with `m = 1`; a `batch_size` at
#' least the number of rows; several 0/1 columns, multi-label indicators,
#' whose combinations leave one-row strata) is not stratified batching and
#' is an error of class `pystratum_single_batch` (a `pystratum_value_error`)
#' naming the smallest strata
#' and the fix (`$argument` is `"policy"`, or `"strata"` for 0/1 indicator
#' columns), unless `allow_single_batch = TRUE`. Allowed, and with
#' `N_min < m`, the single batch comes with a warning of class
#' `pystratum_stratum_too_small` naming the smallest stratum.
#'
#' @section Shards:
#' With `shards`, each stratum's rows are taken shard block by shard block
#' (docs/SHARDS.md, the specification Python's `shards=` follows too): every
#' epoch puts the shards in a random order shared by all strata (the first
#' draw of the epoch, `sample.int(H)` for `rng = "R"`; the identity when
#' `shuffle = FALSE`), cuts it into blocks of `window` consecutive shards,
#' and reorders every row sequence the policy draws by a stable sort on the
#' block of each row's shard. The policy's cuts do not change, so every
#' guarantee above (per-batch counts, each row once, weights, the order
#' inside a batch) holds exactly as without shards; a batch takes its rows
#' from a few consecutive blocks instead of from every shard. With
#' `rng = "index"` nothing is drawn: the shard order and each stratum's order
#' inside a block are keyed bijections (docs/SHARDS.md, *Lazy plans*), the
#' same as Python's; policies that pool or recycle a stratum and
#' [policy_classes_per_batch()] are then refused. Not available with
#' `policy_classes_per_batch(classes = "uniform")`, whose pass orders are
#' keyed, not drawn.
#'
#' @section Random streams:
#' * `rng = "R"` with a `seed`: a private stream started by
#'   `set.seed(seed)` with R's default generators (Mersenne-Twister,
#'   Inversion, Rejection); epoch `k` uses the `(k + 1)`-th `sample(N)` of that
#'   stream. The session's `.Random.seed` is left exactly as it was (and left
#'   absent if it did not exist).
#' * `rng = "R"` with `seed = NULL`: one `sample(N)` from the session's stream,
#'   as R code normally draws; `epoch` must then be 0 (pass a seed to select
#'   an epoch).
#' * `rng = "torch"`: `torch::torch_randperm(N)` (needs the torch package);
#'   with a `seed`, the `(k + 1)`-th permutation after
#'   `torch_manual_seed(seed)`, with torch's global generator saved and
#'   restored; without one, torch's global generator.
#'
#' @param strata One stratum label per row: an atomic vector (integer,
#'   double, character, logical, complex; Date, POSIXct/POSIXlt, difftime and
#'   `bit64::integer64` by value) or factor; or several stratum variables as
#'   a data.frame / data.table, a matrix (rows x variables) or a list of
#'   equal-length vectors (the columns), in which case every distinct
#'   combination of values is one stratum. Only combinations that occur are
#'   strata (unused factor levels are ignored). Missing values, matrix or
#'   list columns, columns of unequal length, arrays of 3 or more
#'   dimensions, `table()` counts and mlr3 Tasks are errors. With
#'   [policy_multi_label()] a matrix or data.frame of 0/1 (or logical) is read
#'   as a label matrix (rows x labels; see [label_matrix()]), never as stratum
#'   columns.
#' @param policy (`pystratum_policy` or `integer(1)`)\cr
#'   The batch composition, see [policies]: a number `m` means
#'   `policy_min_per_stratum(m)`, the fewest rows of each stratum a batch may
#'   hold; `policy_fixed_size(batch_size)` gives batches of a chosen size.
#' @param min_samples_per_stratum (`integer(1)`)\cr
#'   The older name of a number `policy`; give one of the two.
#' @param seed (`NULL` or `integer(1)`)\cr
#'   Seed of the random stream, see section *Random streams*. For
#'   `rng = "R"` a whole number between -2147483647 and 2147483647, as
#'   [set.seed()] takes; for `rng = "torch"` between 0 and 2^53.
#'   Must be `NULL` when `shuffle = FALSE`.
#' @param rng (`character(1)`)\cr
#'   `"R"` (default) or `"torch"`: the random stream the permutation comes from.
#'   With a `seed`, `"R"` gives exactly the batches of the Python package's
#'   `pystratum.stratified_batches(..., seed = seed, rng = "R")` plus one
#'   (whose own default, `"numpy"`, exists in Python only); `"torch"` matches
#'   Python's `rng = "torch"` for the same libtorch version only. `"index"`:
#'   keyed bijections per stratum and epoch (no permutation of the rows is
#'   drawn, any epoch costs the same); `seed` must then lie in `[0, 2^52)`,
#'   rows inside a batch come stratum by stratum (strata in order of first
#'   appearance), and the batches equal Python's `rng = "index"` plus one.
#' @param epoch (`integer(1)`)\cr
#'   Which epoch's shuffle, 0 for the first, at most 2147483647. Each epoch is
#'   a new permutation. Both streams reach epoch `k` by drawing the `k`
#'   epochs before it, so an epoch whose skipped draws cost more than 1e8
#'   row draws (each draw its rows plus 2000 for the call; sampling policies
#'   draw once per stratum and per extra pass of a recycled stratum) is an
#'   error (iterate epochs with [batch_sampler_stratified()] instead).
#'   Must be 0 when `shuffle = FALSE`.
#' @param shuffle (`logical(1)`)\cr
#'   `FALSE` keeps row order (the identity permutation).
#' @param allow_single_batch (`logical(1)`)\cr
#'   `FALSE` (default): a plan of one batch is an error, see section *A
#'   single batch*. `TRUE` when one batch per epoch is really meant.
#' @param shards (`NULL`, `integer()` or [shard_sizes()])\cr
#'   The shard of every row, see section *Shards*: one shard id per row (whole
#'   numbers `>= 0`, labels: shards are numbered by their ids in ascending
#'   order, so ids need not be contiguous), or `shard_sizes(sizes)` when rows
#'   are stored shard after shard. `NULL` (default): no shards.
#' @param window (`integer(1)`)\cr
#'   `W`, the number of consecutive shards in a block (default 1). A `window`
#'   of the number of shards or more makes one block, the order without
#'   shards' locality.
#'
#' @return A list of integer vectors, one per batch, of 1-based row
#'   positions. With a policy that has importance weights
#'   ([policy_downsample()]), the attribute `"weights"` is a list parallel to
#'   the batches holding each row's weight.
#'
#' @section Errors:
#' Wrong types raise conditions of class
#' `c("pystratum_type_error", "pystratum_error", "error", "condition")`,
#' wrong values `c("pystratum_value_error", "pystratum_error", "error",
#' "condition")`; both carry the argument's name in `$argument`.
#'
#' @references
#' Hocking, T. D. (2025). Stratified batch sampler for mlr3torch.
#' <https://tdhock.github.io/blog/2025/mlr3torch-batch-samplers/>
#'
#' @seealso [batch_sampler_stratified()] for mlr3torch learners.
#' @export
#' @examples
#' # 111 rows of class "M" then 12 of class "R": 12 batches with one "R" each.
#' y = rep(c("M", "R"), c(111, 12))
#' batches = stratified_batches(y, 1, shuffle = FALSE)
#' batches[[1]]
#' table(batch = rep(seq_along(batches), lengths(batches)), y = y[unlist(batches)])[1:3, ]
#'
#' # Shuffled, reproducible, one call per epoch:
#' epoch_0 = stratified_batches(y, 2, seed = 42)
#' epoch_1 = stratified_batches(y, 2, seed = 42, epoch = 1)
#'
#' # Several columns: every combination is a stratum.
#' strata = data.frame(y = rep(c("a", "b"), 10), group = rep(1:2, each = 10))
#' lengths(stratified_batches(strata, 1, seed = 1))
stratified_batches = function(strata, policy, seed = NULL, rng = c("R", "torch", "index"),
  epoch = 0L, shuffle = TRUE, min_samples_per_stratum = NULL, allow_single_batch = FALSE,
  shards = NULL, window = 1) {
  policy = resolve_policy(if (missing(policy)) NULL else policy, min_samples_per_stratum)
  rng = if (missing(rng)) "R" else assert_choice(rng, "rng", c("R", "torch", "index"))
  epoch = assert_epoch(epoch)
  shuffle = assert_flag(shuffle, "shuffle")
  allow_single_batch = assert_flag(allow_single_batch, "allow_single_batch")
  window = check_shard_arguments(shards, window, policy, rng)
  assert_seed_with_shuffle(seed, shuffle)
  assert_epoch_with_shuffle(epoch, shuffle)
  seed = assert_seed(seed, rng)
  if (shuffle && is.null(seed) && epoch > 0) {
    abort_value("epoch", sprintf(paste0(
      "epoch=%s cannot be selected when seed=NULL: each call draws one permutation from ",
      "the session's random stream. Pass seed=<whole number> to select an epoch, or leave ",
      "epoch=0."), show_value(epoch)))
  }
  if (inherits(policy, "pystratum_policy_multi_label")) {
    # A label matrix, not strata: policy_multi_label.R.
    return(multi_label_batches(strata, policy, seed, rng, epoch, shuffle, allow_single_batch,
      shards = shards, window = window))
  }
  # The scalar arguments first, the O(N) strata last: the order of the Python
  # core's checks, so inputs with several problems fail alike in both languages.
  encoded = encode_strata(strata)
  shards = resolve_shards(shards, window, encoded$n_rows)
  if (shuffle && rng == "torch") {
    require_torch("stratified_batches(rng = \"torch\")")
  }
  check_strata_are_groups(encoded)
  allocation = allocate_checked_epoch(policy, encoded, epoch, allow_single_batch)
  if (!shuffle) {
    return(plan_epoch(encoded, policy, epoch, allocation, shards = shards))
  }
  if (rng == "index") {
    # Keyed bijections per stratum: no permutation of the rows is drawn.
    seed = if (is.null(seed)) sample.int(.Machine$integer.max, 1L) - 1 else assert_index_seed(seed)
    return(plan_epoch(encoded, policy, epoch, allocation, index_seed = seed, shards = shards))
  }
  pass_key = uniform_pass_key(allocation, seed)
  plan_epoch(encoded, policy, epoch, allocation,
    draw = stream_at_epoch(policy, encoded, epoch, allocation, rng, seed, shards = shards),
    pass_key = pass_key, shards = shards)
}

# The key of classes = "uniform"'s pass orders with rng = "R" or "torch":
# seed mod 2^52 (seed = NULL: a key drawn from the session's stream); NULL
# for any other allocation.
uniform_pass_key = function(allocation, seed) {
  if (is.null(allocation$slots$pass_starts)) return(NULL)
  if (is.null(seed)) sample.int(.Machine$integer.max, 1L) - 1 else as.double(seed) %% 2^52
}

# The policy of a call taking `policy` or the older `min_samples_per_stratum`.
resolve_policy = function(policy, min_samples_per_stratum) {
  if (!is.null(min_samples_per_stratum)) {
    if (!is.null(policy)) {
      abort_type("min_samples_per_stratum", sprintf(paste0(
        "Pass either policy or min_samples_per_stratum, not both: got policy=%s and ",
        "min_samples_per_stratum=%s. A number as policy means min_samples_per_stratum."),
        show_value(policy), show_value(min_samples_per_stratum)))
    }
    policy = min_samples_per_stratum
  }
  as_policy(policy)
}

# Refuse strata with (on average) fewer than two rows each among many strata:
# a feature column, a row id or a continuous target, not group labels.
check_strata_are_groups = function(encoded, name = "strata") {
  n_strata = length(encoded$sizes)
  n_rows = encoded$n_rows
  if (n_strata >= 100 && n_rows < 2 * n_strata) {
    abort_value(name, sprintf(paste0(
      "%s has %d distinct strata for %d rows (on average %.2f rows per stratum): this looks ",
      "like a feature column, a row id or a continuous target, not group labels, and every ",
      "batch would have to hold every stratum (one batch with the whole data set). Pass the ",
      "class or group column(s) as %s; bin a continuous target first (e.g. with cut())."),
      name, n_strata, n_rows, n_rows / n_strata, name))
  }
  invisible(NULL)
}

# The allocation of epoch `epoch`, checked (checked_allocation()): rank cuts,
# or list(slots = ) for a slot allocation (policy_classes_per_batch()).
# `n_batches`: epoch 0's number of batches, which every epoch must keep.
# warn = FALSE: an epoch after the first, or one skipped over, whose warnings
# (a stratum too small, strata left out) the first epoch has given.
allocate_epoch = function(policy, encoded, epoch, n_batches = NULL, warn = TRUE) {
  allocation = if (warn) checked_allocation(policy, encoded, epoch, n_batches) else
    suppressWarnings(checked_allocation(policy, encoded, epoch, n_batches),
      classes = c("pystratum_stratum_too_small", "pystratum_small_strata"))
  # One draw per pass of a recycled stratum, in every rng: priced before any is drawn.
  if (is.null(allocation$slots) && assembles_by_stratum(policy, allocation)) {
    check_recycled_passes(policy, allocation, encoded)
  }
  allocation
}

# The batches of one epoch, the engine's one pipeline (Python's
# plan_from_stream()): the epoch's allocation (allocate_epoch()), its draws,
# and the batches assembled from them, with attr(, "weights") when the
# allocation has row weights. The draws come from `draw`, a stream standing at
# this epoch (a function(n, size), see permutation_stream() and
# stream_at_epoch()); with `index_seed`, from keyed bijections (rng =
# "index": nothing drawn, any epoch computed directly); with neither, every
# draw is the identity (shuffle = FALSE: row order). `pass_key`: the key of
# classes = "uniform"'s pass orders for a stream (uniform_pass_key()).
# `shards` (resolve_shards(), shards.R): the epoch's group starts with the
# shard permutation, and the drawn row sequences are sorted by shard block
# before assembly (docs/SHARDS.md); the cuts are unchanged.
plan_epoch = function(encoded, policy, epoch, allocation, draw = NULL, index_seed = NULL,
  pass_key = NULL, shards = NULL) {
  slots = allocation$slots
  if (!is.null(slots)) {
    group = shard_draw_group(slot_draw_group(slots, encoded$n_rows), shards)
    draws = if (!is.null(index_seed)) {
      slot_index_draws(encoded, slots, index_seed, epoch)
    } else if (!is.null(draw)) {
      check_refill_draws(policy, slots, encoded$sizes)  # one call per refill: priced first
      draw_group(draw, group)
    } else {
      lapply(group$takes, seq_len)
    }
    if (!is.null(shards)) {
      draws = sort_draws_by_block(draws[-1L], shard_row_blocks(shards, draws[[1L]]), encoded,
        slots = slots)
    }
    if (!is.null(index_seed)) pass_key = index_seed
    batches = assemble_slots(encoded, slots, draws, pass_key)
    # Each stratum's slots filled in serving order (docs/SHARDS.md, step 5).
    if (!is.null(shards)) batches = redeal_slot_batches(batches, slots)
    attr(batches, "batch_strata") = NULL
    return(batches)
  }
  if (!is.null(index_seed)) {
    check_index_shards(shards, policy, allocation, encoded)
    return(index_batches(encoded, allocation, index_seed, epoch,
      split_safe = policy_split_safe(policy, index = TRUE), shards = shards))
  }
  by_stratum = assembles_by_stratum(policy, allocation)
  group = shard_draw_group(epoch_draw_group(allocation, encoded, by_stratum), shards)
  draws = if (!is.null(draw)) {
    draw_group(draw, group)
  } else if (by_stratum || !is.null(shards)) {
    lapply(group$takes, seq_len)
  } else {
    list(NULL)
  }
  if (!is.null(shards)) {
    draws = sort_draws_by_block(draws[-1L], shard_row_blocks(shards, draws[[1L]]), encoded,
      by_stratum, planned = if (by_stratum) stratum_draws(allocation, encoded))
  }
  assemble_epoch(encoded, allocation, draws, by_stratum, split_safe = policy_split_safe(policy))
}

# A fresh stream standing at epoch `epoch` of `policy`: the groups of draws of
# epochs 0..epoch - 1, priced and refused when unaffordable
# (epoch_skip_groups()), then drawn, none assembled. `allocation`: any
# epoch's, telling policies that draw one permutation per epoch (priced
# without allocating the skipped epochs) from the others.
stream_at_epoch = function(policy, encoded, epoch, allocation, rng, seed, torch_backend = NULL,
  shards = NULL) {
  skipped = epoch_skip_groups(epoch, rng, encoded$n_rows,
    epoch_group_of(policy, encoded, allocation, shards))
  draw = permutation_stream(rng, seed, torch_backend)
  for (earlier in skipped) draw_group(draw, earlier)
  draw
}

# function(k), the group of draws of epoch k of `policy`; NULL when every
# epoch draws one permutation of the rows. With `shards`, every group starts
# with the shard permutation, which the skipped epochs replay (and the cost
# guard counts).
epoch_group_of = function(policy, encoded, allocation, shards = NULL) {
  one_permutation = is.null(allocation$slots) && !assembles_by_stratum(policy, allocation)
  if (one_permutation && is.null(shards)) {
    return(NULL)
  }
  function(k) {
    shard_draw_group(skipped_epoch_draw_group(policy, encoded, k, !one_permutation), shards)
  }
}

# Whether an epoch of `policy` is assembled stratum by stratum (Targets,
# Downsample: any policy that may recycle or has pools). Python: draws_by_stratum.
assembles_by_stratum = function(policy, allocation) {
  policy_may_recycle(policy) || !is.null(allocation$pool_sizes)
}

# What an epoch draws: list(sizes, takes), one draw of `takes[i]` distinct
# values of 1..sizes[i] each (draw_group()): stratum by stratum for sampling
# policies (by_stratum), else one permutation of all rows.
epoch_draw_group = function(allocation, encoded, by_stratum) {
  if (!by_stratum) {
    return(list(sizes = encoded$n_rows, takes = encoded$n_rows))
  }
  stratum_draws(allocation, encoded)[c("sizes", "takes")]
}

# The same for epoch `epoch` of `policy` (an epoch skipped over; Python's
# epoch_draw_sizes()); by_stratum = FALSE: one permutation of the rows,
# without allocating the epoch.
skipped_epoch_draw_group = function(policy, encoded, epoch, by_stratum) {
  if (!by_stratum) {
    return(epoch_draw_group(NULL, encoded, FALSE))
  }
  allocation = allocate_epoch(policy, encoded, epoch, warn = FALSE)
  if (!is.null(allocation$slots)) {
    return(slot_draw_group(allocation$slots, encoded$n_rows))
  }
  epoch_draw_group(allocation, encoded, TRUE)
}
