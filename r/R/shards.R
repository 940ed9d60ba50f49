# Shard-blocked orders (docs/SHARDS.md, the specification both languages
# implement): each epoch puts the shards in a random order shared by all
# strata, cuts it into blocks of `window` consecutive shards, and reorders
# every row sequence the policy draws by a stable sort on the block of each
# row's shard. The policy's cuts do not change, so every guarantee holds as
# without shards. Nothing here draws: the shard permutation is the first
# draw of the epoch's group (shard_draw_group()), drawn by the caller.

#' Shards given by their sizes
#'
#' For [stratified_batches()]'s `shards` argument when the rows are stored
#' shard after shard (Parquet row groups, tar shards, chunks): shard `h`
#' holds rows `offset[h] + 1 .. offset[h] + sizes[h]`, `offset` the sizes
#' of the shards before it. The sizes must add up to the number of rows. A
#' size of 0 (an empty row group) is allowed: the shard holds no row but
#' keeps its place in the shard order (it counts in the number of shards
#' `H` that the epoch's shard permutation draws).
#'
#' @param sizes (`integer()`)\cr
#'   The number of rows of every shard, in storage order: whole numbers
#'   `>= 0`, at least one.
#' @return An object of class `"pystratum_shard_sizes"` (a list with the
#'   sizes as doubles) for `shards = `.
#' @seealso [stratified_batches()], section *Shards*.
#' @export
#' @examples
#' # 10 rows stored in shards of 4, 0 and 6 rows.
#' shards = shard_sizes(c(4, 0, 6))
#' y = rep(c("a", "b"), 5)
#' stratified_batches(y, 1, seed = 1, shards = shards, window = 1)
shard_sizes = function(sizes) {
  # Errors name `shards`, the argument the sizes are given for; the words are
  # the Python core's (c() for its lists, 1-based positions).
  if (!(is.integer(sizes) || is.double(sizes)) || is.object(sizes)) {
    abort_type("shards", sprintf(paste0("shards must hold whole numbers (shard_sizes(sizes)), ",
      "got shards=%s of type %s. Pass integer shard ids (or shard_sizes(sizes))."),
      show_value(sizes), if (is.object(sizes)) paste(class(sizes), collapse = "/") else
        type_name(sizes)))
  }
  if (!is.null(dim(sizes))) {
    abort_value("shards", sprintf(paste0("shards must be 1-D (shard_sizes(sizes)), got an array ",
      "of shape (%s). %s"), paste(dim(sizes), collapse = ", "), SHARDS_ONE_VALUE_PER_ENTRY))
  }
  if (length(sizes) == 0L) {
    abort_value("shards", paste0("shards must list at least one shard size, got ",
      "shard_sizes(c()). Pass the rows of every shard, e.g. shard_sizes(c(1000, 1000, 500))."))
  }
  sizes = unname(sizes)
  check_whole_entries(sizes, "shard_sizes(sizes)", "shard_sizes(...)", negative = paste0(
    "shards must have sizes >= 0, got %s. Pass the number of rows each shard holds (0 for an ",
    "empty shard)."))
  structure(list(sizes = as.double(sizes)), class = "pystratum_shard_sizes")
}

#' @export
print.pystratum_shard_sizes = function(x, ...) {
  cat(sprintf("<pystratum_shard_sizes> %d shards, %s rows\n", length(x$sizes),
    format(sum(x$sizes), scientific = FALSE)))
  invisible(x)
}

# The fix for a matrix or array of ids or sizes (Python's "e.g. a column or
# array.reshape(-1)").
SHARDS_ONE_VALUE_PER_ENTRY = "Pass one value per entry, e.g. a column or as.vector(x)."

# Shard ids and sizes (`form`) are whole numbers >= 0 that doubles hold
# exactly; the first entry that is not is named as `shown`[i] (1-based). As in
# Python, entries that are not whole numbers (1.5, NaN, Inf, NA) are value
# errors; the type of the whole vector is checked by the caller. `negative`:
# the message for a negative entry (sprintf() with the entry).
check_whole_entries = function(x, form, shown, negative) {
  show_at = function(i) sprintf("%s[%d]=%s", shown, i, show_value(x[[i]]))
  bad = which(is.na(x) | !is.finite(x) | x != trunc(x))
  if (length(bad)) {
    abort_value("shards", sprintf(paste0("shards must hold whole numbers (%s), got %s. Ids and ",
      "sizes count shards and rows: pass integers (NaN has no shard)."), form,
      show_at(bad[[1L]])))
  }
  bad = which(x < 0)
  if (length(bad)) {
    abort_value("shards", sprintf(negative, show_at(bad[[1L]])))
  }
  bad = which(x >= SIZE_MAX)
  if (length(bad)) {
    # Python's words for floats (R's numbers beyond 2^31 - 1 are doubles) and its fix for
    # ids beyond int64.
    abort_value("shards", sprintf(paste0("shards must hold whole numbers below 2**53 when ",
      "given as floats, got %s (R holds it as a double, inexactly). Number the shards with ",
      "smaller integers."), show_at(bad[[1L]])))
  }
  invisible(x)
}

# window: W, a whole number >= 1 (W >= H makes one block: accepted, no clamp).
assert_window = function(window) {
  if (!(is.integer(window) || is.double(window)) || is.object(window) || length(window) != 1L ||
    !is.null(dim(window)) || (is.double(window) && (!is.finite(window) ||
      window != trunc(window)))) {
    abort_type("window", sprintf(paste0("window must be an integer >= 1 (shards per block), got ",
      "window=%s of type %s. Pass e.g. window=1 (one shard open per stratum) or window=4."),
      show_value(window), type_name(window)))
  }
  if (is.na(window) || window < 1) {
    abort_value("window", sprintf(paste0("window must be an integer >= 1 (shards per block), ",
      "got window=%s. Pass window=1 for the most locality; a window of the shard count or more ",
      "gives the row-random order."), show_value(window)))
  }
  as.double(window)
}

# The shards of `n_rows` rows: NULL (no shards), or list(of_row = the 1-based
# shard index of every row, count = H, window = W). Ids are labels: shard h is
# the h-th distinct id in ascending order.
resolve_shards = function(shards, window, n_rows) {
  if (is.null(shards)) {
    return(NULL)
  }
  count = function(x) format(x, big.mark = ",", scientific = FALSE, trim = TRUE)
  if (inherits(shards, "pystratum_shard_sizes")) {
    sizes = shards$sizes
    if (sum(sizes) != n_rows) {
      abort_value("shards", sprintf(paste0("shards must cover every row: shard_sizes(...) sums ",
        "to %s rows, got %s rows of strata. Pass the sizes of every shard (row group) of this ",
        "data, in storage order."), count(sum(sizes)), count(n_rows)))
    }
    of_row = rep.int(seq_along(sizes), sizes)
    return(list(of_row = of_row, count = length(sizes), window = window))
  }
  if (!(is.integer(shards) || is.double(shards)) || is.object(shards)) {
    abort_type("shards", sprintf(paste0("shards must hold whole numbers (a shard id per row), ",
      "got shards=%s of type %s. Pass integer shard ids (or shard_sizes(sizes))."),
      show_value(shards), if (is.object(shards)) paste(class(shards), collapse = "/") else
        type_name(shards)))
  }
  if (!is.null(dim(shards))) {
    abort_value("shards", sprintf(paste0("shards must be 1-D (a shard id per row), got an array ",
      "of shape (%s). %s"), paste(dim(shards), collapse = ", "), SHARDS_ONE_VALUE_PER_ENTRY))
  }
  if (length(shards) != n_rows) {
    abort_value("shards", sprintf(paste0("shards must hold one shard id per row: got %s ids for ",
      "%s rows. Pass an id per row of strata, or shard_sizes(sizes) for rows stored shard ",
      "after shard."), count(length(shards)), count(n_rows)))
  }
  shards = unname(shards)
  check_whole_entries(shards, "a shard id per row", "shards", negative = paste0(
    "shards must hold ids >= 0, got %s. Shard ids are labels: pass non-negative integers ",
    "(they need not be contiguous)."))
  ids = sort(unique(shards))
  list(of_row = match(shards, ids), count = length(ids), window = window)
}

# The epoch's group of draws with the shard permutation first, (H, H).
shard_draw_group = function(group, shards) {
  if (is.null(shards)) {
    return(group)
  }
  list(sizes = c(shards$count, group$sizes), takes = c(shards$count, group$takes))
}

# The block of every row (0-based): the shard at position j (0-based) of the
# epoch's shard order `permutation` (1-based shard indices; NULL: the
# identity, shuffle = FALSE) is in block j %/% W.
shard_row_blocks = function(shards, permutation = NULL) {
  position = seq_len(shards$count) - 1
  block = numeric(shards$count)
  if (is.null(permutation)) block = position %/% shards$window else
    block[permutation] = position %/% shards$window
  as.integer(block)[shards$of_row]
}

# `values` reordered by a stable sort on key[values]'s block: `rows` are the
# rows the values stand for (values themselves by default).
sort_by_block = function(values, row_block, rows = values) {
  values[order(row_block[rows], method = "radix")]
}

# Sorts the row sequences of an epoch's draws (the shard permutation removed)
# as docs/SHARDS.md says per policy family: the permutation of the N rows
# (rank-cut policies); each stratum draw, pass 0 by its rows and extra passes
# by the pool rows they point to (sampling policies, `planned` from
# stratum_draws()); for slot allocations the permutation and every refill by
# the pass-0 row it picks (the layout is left alone).
sort_draws_by_block = function(draws, row_block, encoded, by_stratum = FALSE,
  planned = NULL, slots = NULL) {
  if (!is.null(slots)) {
    permutation = sort_by_block(draws[[1L]], row_block)
    draws[[1L]] = permutation
    if (length(draws) > 2L) {
      grouped = permutation[order(encoded$codes[permutation], method = "radix")]
      offsets = cumsum(as.double(encoded$sizes)) - as.double(encoded$sizes)
      for (i in seq_along(slots$refill_strata)) {
        picks = draws[[2L + i]]
        draws[[2L + i]] = sort_by_block(picks, row_block,
          grouped[offsets[[slots$refill_strata[[i]]]] + picks])
      }
    }
    return(draws)
  }
  if (!by_stratum) {
    return(list(sort_by_block(draws[[1L]], row_block)))
  }
  grouped = order(encoded$codes, method = "radix")  # each stratum's rows, increasing
  starts = c(0, cumsum(as.double(encoded$sizes)))
  pool = NULL
  for (i in seq_along(draws)) {
    s = planned$strata[[i]]
    picks = draws[[i]]
    if (i == 1L || planned$strata[[i - 1L]] != s) {  # pass 0: rows of the stratum
      rows = grouped[starts[[s]] + picks]
      order_i = order(row_block[rows], method = "radix")
      draws[[i]] = picks[order_i]
      pool = rows[order_i]
    } else {  # an extra pass: indices into the pool
      draws[[i]] = sort_by_block(picks, row_block, pool[picks])
    }
  }
  draws
}

# rng = "index" with shards keys each stratum's ranks block by block (Lazy
# plans in docs/SHARDS.md): a pool or a recycled stratum would need a keyed
# random subset sorted by block, which has no such form. Refused naming shards.
check_index_shards = function(shards, policy, allocation, encoded) {
  if (is.null(shards)) {
    return(invisible(NULL))
  }
  used = allocation$cuts[, ncol(allocation$cuts)]
  if (!is.null(allocation$pool_sizes) || any(used > as.double(encoded$sizes))) {
    abort_value("shards", sprintf(paste0("shards cannot be honoured with rng='index' by ",
      "policy=%s, got shards= with a policy that pools or recycles strata: a keyed pool ",
      "cannot be chosen at random and sorted by block batch by batch. Use rng='numpy', 'R' ",
      "or 'torch' with shards, or leave shards=None."), policy_call_text(policy)))
  }
  invisible(NULL)
}

# `window` checked, and `shards` refused with what cannot honour them
# (docs/SHARDS.md), in the Python core's order: a window without shards
# (it has no effect), ClassesPerBatch with rng = "index" (keyed refills and
# layout; MultiLabel's own refusal of rng = "index" comes first), and the
# keyed pass orders of classes = "uniform". Pools and recycled strata with
# rng = "index" are refused once allocated (check_index_shards()). Returns
# the window.
check_shard_arguments = function(shards, window, policy, rng) {
  window = assert_window(window)
  if (is.null(shards)) {
    if (window != 1) {
      abort_value("window", sprintf(paste0("window=%s has no effect without shards (the window ",
        "counts shards per block). Pass shards= (a shard id per row, or shard_sizes(sizes)), ",
        "or leave window=1."), show_value(window)))
    }
    return(window)
  }
  if (rng == "index" && inherits(policy, "pystratum_policy_multi_label")) {
    return(window)
  }
  if (rng == "index" && inherits(policy, "pystratum_policy_classes_per_batch")) {
    abort_value("shards", paste0("shards cannot be honoured with rng='index' by ",
      "ClassesPerBatch, got rng='index' with shards=: its keyed refills and layout have no ",
      "shard-blocked form. Use rng='numpy', rng='R' or rng='torch' with shards, or leave ",
      "shards=None."))
  }
  if (inherits(policy, "pystratum_policy_classes_per_batch") &&
    identical(policy$params$classes, "uniform")) {
    abort_value("shards", paste0("shards cannot be honoured by ",
      "ClassesPerBatch(classes='uniform'), got shards= with classes='uniform': its passes are ",
      "keyed orders, not drawn row sequences, so there is nothing to sort by block. Use ",
      "classes='proportional', or leave shards=None."))
  }
  window
}

# Step 5 of docs/SHARDS.md, ClassesPerBatch with shards: every stratum's K-row
# chunks, taken in sequence order (ascending slot position q), fill that
# stratum's slots taken in serving order (batch, then place). Which stratum
# holds which slot (attr "batch_strata") and every chunk stay as they are.
# `batches`: assemble_slots()'s, chunks in serving order (gather_slots()).
redeal_slot_batches = function(batches, slots) {
  k = slots$width
  p = slots$per_batch
  n_batches = slots$n_batches
  if (n_batches * p == 0) {
    return(batches)
  }
  # The slot position of each serving slot, as gather_slots() orders them.
  q = seq_len(n_batches * p) - 1
  position = order(((q %% n_batches) * slots$step) %% n_batches, q %/% n_batches) - 1
  stratum = as.vector(t(attr(batches, "batch_strata")))
  dealt = integer(length(stratum))
  dealt[order(stratum, method = "radix")] = order(stratum, position, method = "radix")
  flat = unlist(batches, use.names = FALSE)
  index = rep((dealt - 1L) * k, each = k) + rep(seq_len(k), times = length(dealt))
  out = split_by_sizes(flat[index], lengths(batches))
  attr(out, "batch_strata") = attr(batches, "batch_strata")
  out
}

# Step 5, MultiLabel with shards: among the rows of one label set (one same
# row of the label matrix), taken in the epoch's (sorted) order, the i-th gets
# the i-th smallest of the batches the assignment gave that set. `batch`: the
# batch of the row at each permuted position; returns the new one.
redeal_label_batches = function(batch, permutation, matrix) {
  signature = do.call(paste, c(lapply(seq_len(ncol(matrix)), function(j) as.integer(matrix[, j])),
    sep = ""))
  group = match(signature, unique(signature))[permutation]
  dealt = integer(length(batch))
  dealt[order(group, method = "radix")] = batch[order(group, batch, method = "radix")]
  dealt
}
