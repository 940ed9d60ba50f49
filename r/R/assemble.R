# Assembly: an epoch's allocation and draws in, batches of row positions out
# (the twin of pystratum/engine/_assemble.py and, for slot allocations,
# _assemble_slots.py). Policies that neither pool nor
# recycle rows: one permutation cut by the rank cuts (allocate_batches());
# sampling policies: stratum by stratum (assemble_by_stratum()); slot
# allocations (policy_classes_per_batch()): assemble_slots(). Nothing here
# draws random numbers; the draws come in as arguments.

# Rows per batch of an allocation: the columns of its cut table, or P x K in
# every batch of a slot allocation.
allocation_batch_sizes = function(allocation) {
  slots = allocation$slots
  if (!is.null(slots)) {
    return(rep(slots$per_batch * slots$width, slots$n_batches))
  }
  colSums(counts_from_cuts(allocation$cuts))
}

# S x (B + 1) rank cuts -> S x B integer counts.
counts_from_cuts = function(cuts) {
  n_batches = ncol(cuts) - 1L
  counts = cuts[, -1L, drop = FALSE] - cuts[, -(n_batches + 1L), drop = FALSE]
  storage.mode(counts) = "integer"
  counts
}

# The batches of one epoch: a list of integer vectors of row positions.
#   codes:       stratum code (1..S) of each row position
#   counts:      batch_counts(sizes, m)
#   permutation: the epoch's permutation of 1..N, or NULL for row order; or
#                an epoch's virtual sequence (rows may repeat), when the
#                counts of each stratum add up to its rows in it
# Batches come in order 1..B; inside a batch rows keep permuted order.
allocate_batches = function(codes, counts, permutation = NULL) {
  n_batches = ncol(counts)
  codes_in_order = if (is.null(permutation)) codes else codes[permutation]
  # A stable sort by stratum lists each stratum's rows by rank (order of
  # appearance); ranks 1..N_s of stratum s fill its batches in order.
  by_stratum = order(codes_in_order, method = "radix")
  batch_in_order = integer(length(codes_in_order))
  batch_in_order[by_stratum] = rep.int(rep.int(seq_len(n_batches), nrow(counts)), t(counts))
  # A stable sort by batch keeps permuted order inside each batch.
  by_batch = order(batch_in_order, method = "radix")
  rows = if (is.null(permutation)) by_batch else permutation[by_batch]
  split_by_sizes(rows, colSums(counts))
}

# Every row once, in row order, cut into batches of the given sizes.
consecutive_batches = function(batch_sizes) {
  split_by_sizes(seq_len(sum(batch_sizes)), batch_sizes)
}

split_by_sizes = function(x, sizes) {
  groups = rep.int(seq_along(sizes), sizes)
  attr(groups, "levels") = as.character(seq_along(sizes))
  class(groups) = "factor"
  unname(split(x, groups))
}

# The draws of a sampling policy's epoch, in draw order (the twin of
# pystratum.engine._assemble.stratum_draws): every stratum that serves rows, in order
# of first appearance, draws its pass 0, `takes = min(pool, used)` of its N_s
# rows (its pool: a fresh random subset, in random order), then, when
# recycled, one draw per extra pass: the whole pool (a fresh permutation),
# the last pass cut short to the ranks it serves. list(strata, sizes, takes).
stratum_draws = function(allocation, encoded) {
  sizes = as.double(encoded$sizes)
  used = allocation$cuts[, ncol(allocation$cuts)]
  pool = if (is.null(allocation$pool_sizes)) sizes else as.double(allocation$pool_sizes)
  turn = first_appearance_turn(encoded)
  turn = turn[used[turn] > 0]
  n_draws = 1 + ifelse(used[turn] > pool[turn], (used[turn] - 1) %/% pool[turn], 0)
  strata = rep.int(turn, n_draws)
  pass = sequence(n_draws) - 1  # 0, 1, ... within each stratum
  list(strata = strata, sizes = ifelse(pass == 0, sizes[strata], pool[strata]),
    takes = pmin(pool[strata], used[strata] - pass * pool[strata]))
}

# The batches of one epoch for any policy, from the epoch's draws (row order:
# NULL, resp. seq_len(take) per draw). Policies that never pool or recycle
# (by_stratum = FALSE): `draws[[1]]` is the permutation, and the shared
# allocate_batches() keeps rows inside a batch in permuted order. Sampling
# policies (by_stratum = TRUE, see assembles_by_stratum()): `draws` as
# stratum_draws() lists them; each stratum's epoch sequence is its pool (its
# rows, in row order, picked by its pass 0), then the pool reordered by each
# of its extra passes, cut at its last rank; batch b lists the strata in
# order of first appearance in the data (independent of how labels sort),
# stratum s giving ranks cuts[s, b] + 1 .. cuts[s, b + 1] of its sequence.
# Mirrors pystratum.engine._assemble.assemble_by_stratum.
# With row_weights, the result carries attr(, "weights") (with_row_weights()).
assemble_epoch = function(encoded, allocation, draws, by_stratum = FALSE, split_safe = FALSE) {
  codes = encoded$codes
  batches = if (by_stratum) {
    assemble_by_stratum(encoded, allocation, draws)
  } else {
    counts = counts_from_cuts(allocation$cuts)
    leftover = as.double(encoded$sizes) - rowSums(counts)
    if (all(leftover == 0)) allocate_batches(codes, counts, draws[[1L]]) else {
      # A trailing pseudo-batch takes the ranks no batch uses.
      all_batches = allocate_batches(codes, cbind(counts, leftover), draws[[1L]])
      all_batches[-length(all_batches)]
    }
  }
  # batch_order = "split_safe" (split_safe_batches()); weights follow the rows.
  if (split_safe) batches = split_safe_batches(batches, encoded)
  with_row_weights(batches, allocation, codes)
}

# The batches with attr(, "weights") (each row's weight, a list parallel to
# the batches) when the allocation has row_weights; unchanged otherwise.
with_row_weights = function(batches, allocation, codes) {
  if (!is.null(allocation$row_weights)) {
    attr(batches, "weights") = lapply(batches, function(rows) allocation$row_weights[codes[rows]])
  }
  batches
}

assemble_by_stratum = function(encoded, allocation, draws) {
  sizes = as.double(encoded$sizes)
  cuts = allocation$cuts
  n_batches = ncol(cuts) - 1L
  counts = counts_from_cuts(cuts)
  used = cuts[, n_batches + 1L]
  planned = stratum_draws(allocation, encoded)
  grouped = order(encoded$codes, method = "radix")  # each stratum's rows, increasing
  starts = c(0, cumsum(sizes))
  sequences = lapply(seq_along(sizes), function(s) {
    mine = draws[planned$strata == s]
    if (length(mine) == 0L) return(integer(0))
    pool = grouped[starts[[s]] + mine[[1L]]]
    sequence = c(pool, unlist(lapply(mine[-1L], function(o) pool[o]), use.names = FALSE))
    sequence[seq_len(used[[s]])]
  })
  # Block (s, b) in batch-major order, strata in order of first appearance
  # (the column-major order of the S x B matrices, rows reordered by turn),
  # starts at rank cuts[s, b] of sequence s.
  turn = first_appearance_turn(encoded)
  first = c(0, cumsum(used))[seq_along(sizes)] + cuts[, -(n_batches + 1L), drop = FALSE]
  first = first[turn, , drop = FALSE]
  lengths = as.vector(counts[turn, , drop = FALSE])
  skip = c(0, cumsum(lengths))[seq_along(lengths)]
  index = rep.int(as.vector(first) - skip, lengths) + seq_len(sum(lengths))
  split_by_sizes(unlist(sequences, use.names = FALSE)[index], colSums(counts))
}

# The draws of a slot allocation's epoch: list(sizes, takes) (permutation of
# the rows, of the served strata, then one per refill). Python: slot_draws.
slot_draw_group = function(slots, n_rows) {
  served = sum(slots$n_slots > 0)
  if (!is.null(slots$pass_starts)) {
    return(list(sizes = served, takes = served))  # the layout: pass orders are keyed
  }
  list(sizes = c(n_rows, served, slots$refill_sizes), takes = c(n_rows, served,
    slots$refill_takes))
}

# The batches of one epoch from its draws (Python: assemble_slots). With
# slots$pass_starts (classes = "uniform") `draws` is the layout alone and
# `pass_key` keys the pass orders (NULL: row order; uniform_sequence()).
assemble_slots = function(encoded, slots, draws, pass_key = NULL) {
  sizes = as.double(encoded$sizes)
  k = slots$width
  p = slots$per_batch
  n_batches = slots$n_batches
  first_rows = match(seq_along(sizes), encoded$codes)
  served = order(first_rows)
  served = served[slots$n_slots[served] > 0]
  uniform = !is.null(slots$pass_starts)
  layout = served[draws[[if (uniform) 1L else 2L]]]
  runs = slots$n_slots[layout]
  run_start = numeric(length(sizes))
  run_start[layout] = cumsum(runs) - runs
  if (uniform) {
    sequence = uniform_sequence(encoded, slots, run_start, pass_key)
    return(gather_slots(sequence, slots, layout, runs))
  }
  permutation = draws[[1L]]
  grouped = permutation[order(encoded$codes[permutation], method = "radix")]
  offsets = cumsum(sizes) - sizes
  sequence = integer(n_batches * p * k)
  base = k * run_start
  for_rows = rep(slots$n_slots > 0, sizes)
  destination = rep(base - offsets, sizes) + seq_len(sum(sizes))
  sequence[destination[for_rows]] = grouped[for_rows]
  refills = draws[-(1:2)]
  if (length(refills)) {
    strata = slots$refill_strata
    takes = slots$refill_takes
    before = stats::ave(takes, strata, FUN = function(t) cumsum(t) - t)
    start = base[strata] + sizes[strata] + before
    at = rep(start, takes) + sequence_within(takes)
    sequence[at] = grouped[rep(offsets[strata], takes) + unlist(refills, use.names = FALSE)]
  }
  gather_slots(sequence, slots, layout, runs)
}

# Slot position q (0-based) goes to batch (q mod B) * step mod B as its
# (q %/% B)-th slot: the batches of the epoch sequences, strata in layout order.
gather_slots = function(sequence, slots, layout, runs) {
  k = slots$width
  p = slots$per_batch
  n_batches = slots$n_batches
  q = seq_len(n_batches * p) - 1
  batch = ((q %% n_batches) * slots$step) %% n_batches
  place = q %/% n_batches
  slot_order = order(batch, place)
  index = rep((slot_order - 1) * k, each = k) + rep(seq_len(k), times = length(slot_order))
  batches = split_by_sizes(sequence[index], rep(p * k, n_batches))
  attr(batches, "batch_strata") = matrix(rep(layout, runs)[slot_order], nrow = n_batches,
    byrow = TRUE)
  batches
}

# classes = "uniform" (Python: pass_sequence): stratum s serves ranks
# pass_starts[s] .. of its pass sequence at K * run_start[s] + 1 ..; rank u is
# position u %% N_s of pass u %/% N_s (uniform_pass()).
uniform_sequence = function(encoded, slots, run_start, pass_key) {
  sizes = as.double(encoded$sizes)
  k = slots$width
  n_strata = length(sizes)
  turn = integer(n_strata)
  turn[first_appearance_turn(encoded)] = seq_len(n_strata) - 1L
  members = split(seq_along(encoded$codes), factor(encoded$codes, levels = seq_len(n_strata)))
  sequence = integer(slots$n_batches * slots$per_batch * k)
  for (s in which(slots$n_slots > 0)) {
    n = sizes[[s]]
    rank = slots$pass_starts[[s]] + seq_len(slots$n_slots[[s]] * k) - 1
    pass = rank %/% n
    position = rank %% n
    served = numeric(length(rank))
    for (each in unique(pass)) {
      mine = pass == each
      served[mine] = uniform_pass(n, k, each, turn[[s]], pass_key)[position[mine] + 1]
    }
    sequence[k * run_start[[s]] + seq_along(rank)] = members[[s]][served + 1]
  }
  sequence
}

# Served positions (0-based) of pass `pass` of a stratum of n rows: the keyed
# bijection, its first K positions reordered when the pass begins inside a
# slot (t = pass * n mod K > 0, n >= K): the first K - t of them not among the
# previous pass's last t served positions come first, the others after them.
uniform_pass = function(n, k, pass, turn, pass_key, head_only = FALSE) {
  raw_at = function(positions, of_pass) {
    if (is.null(pass_key)) return(positions)
    index_permute_ranks(positions, n, index_round_keys(pass_key, of_pass, turn)[, 1])
  }
  positions = if (head_only) seq_len(min(k, n)) - 1 else seq_len(n) - 1
  values = raw_at(positions, pass)
  t = (pass * n) %% k
  if (pass < 1 || n < k || t == 0) return(values)
  at = n - t + seq_len(t) - 1
  tail = raw_at(at, pass - 1)
  inside = at < k
  if (any(inside)) {
    tail[inside] = uniform_pass(n, k, pass - 1, turn, pass_key, head_only = TRUE)[at[inside] + 1]
  }
  head = values[seq_len(k)]
  free = head[!(head %in% tail)][seq_len(k - t)]
  values[seq_len(k)] = c(free, head[!(head %in% free)])
  values
}

# 1, 2, ..., t for each t in takes, concatenated.
sequence_within = function(takes) {
  seq_len(sum(takes)) - rep(cumsum(takes) - takes, takes)
}

# The draws of an epoch for rng = "index" (Python: slot_index_draws): keyed
# bijections. Pass 0 of the stratum with turn t permutes its rows (row order)
# by stream t; the layout permutes the S' served strata by stream S; refill i
# (1-based, draw order) takes the first `take` values of the permutation of
# 0..size-1 by stream S + i. Values are 1-based, as the streams' draws.
slot_index_draws = function(encoded, slots, seed, epoch) {
  sizes = as.double(encoded$sizes)
  n_strata = length(sizes)
  served = sum(slots$n_slots > 0)
  if (!is.null(slots$pass_starts)) {  # the layout alone
    return(list(index_permute_ranks(seq_len(served) - 1, served,
      index_round_keys(seed, epoch, n_strata)[, 1]) + 1))
  }
  turn = integer(n_strata)
  turn[first_appearance_turn(encoded)] = seq_len(n_strata) - 1L
  keys = index_round_keys(seed, epoch, turn)
  members = split(seq_along(encoded$codes), factor(encoded$codes, levels = seq_len(n_strata)))
  pass_0 = unlist(lapply(seq_len(n_strata), function(s) {
    members[[s]][index_permute_ranks(seq_len(sizes[[s]]) - 1, sizes[[s]], keys[, s]) + 1]
  }), use.names = FALSE)
  layout = index_permute_ranks(seq_len(served) - 1, served,
    index_round_keys(seed, epoch, n_strata)[, 1]) + 1
  refills = lapply(seq_along(slots$refill_sizes), function(i) {
    index_permute_ranks(seq_len(slots$refill_takes[[i]]) - 1, slots$refill_sizes[[i]],
      index_round_keys(seed, epoch, n_strata + i)[, 1]) + 1
  })
  c(list(pass_0, layout), refills)
}
