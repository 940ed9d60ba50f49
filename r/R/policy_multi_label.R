# MultiLabel, policy_multi_label(): the twin of
# pystratum/policies/_multi_label.py (assign_batches, _repair, _one_swap) and
# of label_plan()/label_draws() in pystratum/engine/_plan.py. Every step after
# the two draws (sample.int(N), then sample.int(B)) is integer arithmetic and
# stable ordering, so rng = "R" gives Python's batches plus one.

#' Every label's positives in every batch (multi-label rows)
#'
#' `policy_multi_label()` is the composition for rows that carry several
#' labels at once (a 0/1 label matrix): pass the label matrix (rows x labels;
#' a logical, integer or double matrix of 0/1, or a data.frame of such
#' columns) as `strata` to [stratified_batches()]. With this policy a
#' matrix or data.frame is read as labels, never as stratum columns.
#'
#' Give exactly one of `batch_size` (then `B = ceiling(N / batch_size)`) or
#' `num_batches` (`B`, at most `N`). Batch `b` holds `N %/% B + (b <= N %% B)`
#' rows; every row is in exactly one batch.
#'
#' @section Guarantee:
#' Let `N_l` be label `l`'s positives, `m = min_per_label`; `l` is
#' *guaranteed* when `N_l >= m * B`. Labels are taken rarest first (fewest
#' positives, ties by column), each label's rows not placed yet dealt by
#' water-filling (onto the batch with the fewest positives of that label and a
#' free place; ties by a random batch order rotated by the rows placed so
#' far). Sufficient condition: a guaranteed label `l` gets at least `m`
#' positives in every batch from the construction alone when (A) at least
#' `m * B` of its positive rows carry no label taken before `l`, and (C)
#' `sum(N_j %/% B + 1)` over the labels `j` taken before `l` is at most
#' `N %/% B - m`. Rows carrying one label each satisfy (A). Where it fails, a
#' repair step swaps a positive row of a batch holding more than `m` with a
#' row of the short batch, only when no guaranteed label falls below `m` (or
#' further below) in either batch. A shortfall can remain (rows `{a,b}`,
#' `{b,c}`, `{a,c}` in two batches): the result's attribute `"label_counts"`
#' (batches x labels) reports the positives of each label per batch, and
#' `strict = TRUE` turns a remaining shortfall into an error of class
#' `pystratum_label_shortfall` (also a `pystratum_value_error`) naming the
#' labels; with `strict = FALSE` the batches come with one warning of class
#' `pystratum_label_shortfall_warning` naming the labels and their short
#' batches.
#'
#' Each epoch a new shuffle: the order rows are taken in is `sample.int(N)`,
#' the batch order breaking ties `sample.int(B)`, both from the epoch's
#' stream; the Python package's `pystratum.policies.MultiLabel` with
#' `rng = "R"` gives the same batches minus one. `rng = "index"` is refused.
#'
#' Inside a batch rows keep the order they were taken in (`batch_order =
#' NULL` or `"assembled"`). `batch_order = "split_safe"` interleaves them by
#' each row's placing label (its rarest label; rows without a label form one
#' more group) with the split-safe rule (`docs/BATCH_ORDER.md` in the
#' repository): cut into `g` equal contiguous chunks, for every `g` in the
#' batch size's chain of prime factors, a chunk holds at least
#' `floor(c_l / g)` positives of label `l`, `c_l` being the batch's rows
#' placed by `l` (every positive of the rarest label is placed by it).
#'
#' @param batch_size (`NULL` or `integer(1)`) rows per batch.
#' @param num_batches (`NULL` or `integer(1)`) batches per epoch.
#' @param min_per_label (`integer(1)`) the fewest positives of each
#'   guaranteed label a batch should hold.
#' @param strict (`logical(1)`) `TRUE`: a remaining shortfall is an error.
#' @param batch_order (`NULL`, `"split_safe"` or `"assembled"`) the order of
#'   rows inside a batch; `NULL`: `"assembled"`.
#' @return A policy object (class `pystratum_policy_multi_label`).
#' @export
#' @examples
#' labels = cbind(a = rep(c(1, 0), 10), b = rep(c(0, 1, 1, 0), 5))
#' batches = stratified_batches(labels, policy_multi_label(num_batches = 4), seed = 1)
#' attr(batches, "label_counts")
policy_multi_label = function(batch_size = NULL, num_batches = NULL, min_per_label = 1,
  strict = FALSE, batch_order = NULL) {
  if (is.null(batch_size) == is.null(num_batches)) {
    abort_type("batch_size", sprintf(paste0(
      "batch_size or num_batches must be given, exactly one of them, got batch_size=%s and ",
      "num_batches=%s. E.g. policy_multi_label(batch_size = 256) or ",
      "policy_multi_label(num_batches = 100)."), show_value(batch_size),
      show_value(num_batches)))
  }
  if (!is.null(batch_size)) {
    batch_size = as.double(assert_whole_number(batch_size, "batch_size", minimum = 1,
      fix = "It is the number of rows per batch."))
  }
  if (!is.null(num_batches)) {
    num_batches = as.double(assert_whole_number(num_batches, "num_batches", minimum = 1,
      fix = "It is the number of batches per epoch."))
  }
  min_per_label = as.double(assert_whole_number(min_per_label, "min_per_label", minimum = 1,
    fix = "It is the fewest positives of each label a batch should hold."))
  strict = assert_flag(strict, "strict")
  new_policy("multi_label", with_batch_order(list(batch_size = batch_size,
    num_batches = num_batches, min_per_label = min_per_label, strict = strict), batch_order))
}

#' @export
policy_allocate.pystratum_policy_multi_label = function(policy, encoded, epoch) {
  abort_type("policy", paste0(
    "policy multi_label has no per-stratum allocation: it reads a label matrix (rows x ",
    "labels of 0/1). Pass the label matrix to stratified_batches(labels, ",
    "policy_multi_label(...))."))
}

# B for n_rows rows: ceiling(N / batch_size), or num_batches (at most N).
multi_label_num_batches = function(policy, n_rows) {
  params = policy$params
  if (!is.null(params$batch_size)) {
    return(ceiling(n_rows / params$batch_size))
  }
  if (params$num_batches > n_rows) {
    abort_value("num_batches", sprintf(paste0(
      "num_batches must be at most the number of rows (%s), got num_batches=%s: a batch ",
      "needs a row. Pass num_batches <= %s, or batch_size=."), format(n_rows),
      show_value(params$num_batches), format(n_rows)))
  }
  params$num_batches
}

# list(matrix = logical N x L, names): the label matrix read by the one reader
# label_matrix() uses (read_label_matrix(), errors blaming "strata"); unnamed
# columns are named "0".."L-1", as in Python.
check_label_matrix = function(strata) {
  checked = read_label_matrix(strata, "strata")
  names = colnames(checked)
  dimnames(checked) = NULL
  list(matrix = checked, names = names)
}

# The batches of one epoch for policy_multi_label() (stratified_batches()
# dispatches here): the checked label matrix, the single-batch guard, the
# epoch's two draws, the assignment, the shortfall error when strict.
multi_label_batches = function(strata, policy, seed, rng, epoch, shuffle,
  allow_single_batch = FALSE, shards = NULL, window = 1) {
  if (shuffle && rng == "index") {
    abort_value("rng", paste0(
      "rng='index' cannot serve MultiLabel, got rng='index': its batches depend on every ",
      "row's labels at once, so there is no per-batch closed form for a lazy plan. Use ",
      "rng='numpy', rng='R' or rng='torch'."))
  }
  labels = check_label_matrix(strata)
  n_rows = nrow(labels$matrix)
  shards = resolve_shards(shards, window, n_rows)
  n_batches = multi_label_num_batches(policy, n_rows)
  check_several_label_batches(labels$names, colSums(labels$matrix), n_rows, policy, n_batches,
    allow_single_batch)
  # With shards the group starts with the shard permutation; the rows'
  # permutation is then sorted by shard block, the batches' one left alone.
  group = shard_draw_group(list(sizes = c(n_rows, n_batches), takes = c(n_rows, n_batches)),
    shards)
  if (shuffle) {
    skipped = epoch_skip_groups(epoch, rng, n_rows, function(k) group)
    draw = permutation_stream(rng, seed)
    for (earlier in skipped) draw_group(draw, earlier)
    draws = draw_group(draw, group)
  } else {
    draws = lapply(group$takes, seq_len)
  }
  if (!is.null(shards)) {
    draws = c(sort_draws_by_block(draws[2L], shard_row_blocks(shards, draws[[1L]]), NULL),
      draws[3L])
  }
  permutation = draws[[1L]]
  batch_ties = draws[[2L]]
  assigned = multi_label_assign(labels$matrix, permutation, batch_ties,
    policy$params$min_per_label)
  counts = assigned$counts
  colnames(counts) = labels$names
  if (isTRUE(policy$params$strict)) {
    message = multi_label_shortfall(labels$names, counts, colSums(labels$matrix),
      policy$params$min_per_label)
    if (!is.null(message)) {
      stop(structure(class = c("pystratum_label_shortfall", "pystratum_value_error",
        "pystratum_error", "error", "condition"),
        list(message = message, call = NULL, argument = "min_per_label")))
    }
  } else {
    message = multi_label_shortfall_warning(labels$names, counts, colSums(labels$matrix),
      policy$params$min_per_label, epoch)
    if (!is.null(message)) {
      warning(structure(class = c("pystratum_label_shortfall_warning", "warning", "condition"),
        list(message = message, call = NULL)))
    }
  }
  batch = assigned$batch
  # Rows of one label set dealt in batch order (docs/SHARDS.md, step 5).
  if (!is.null(shards)) batch = redeal_label_batches(batch, permutation, labels$matrix)
  batches = unname(split(as.integer(permutation), factor(batch, levels = seq_len(n_batches))))
  if (policy_split_safe(policy)) {
    # Placing labels (1..L, L + 1: no label) as strata, in step order.
    n_groups = ncol(labels$matrix) + 1L
    steps = multi_label_placing_steps(labels$matrix) + 1L
    batches = split_safe_batches(batches, list(codes = steps, sizes = numeric(n_groups)),
      strata_order = seq_len(n_groups))
  }
  attr(batches, "label_counts") = counts
  batches
}

# Each row's step in multi_label_assign() (0-based; L: no label): the position of
# its rarest label, labels by size (ties by column). Python's placing_steps().
multi_label_placing_steps = function(matrix) {
  n_labels = ncol(matrix)
  by_size = order(colSums(matrix), seq_len(n_labels))
  multi_label_first_steps(matrix, by_size)
}

# Each row's first label in the order `by_size` (its step, 0-based; L: no
# label), from the positive cells: O(N L) to find them and O(P log P) for P
# positives, not a pass over the rows per label.
multi_label_first_steps = function(matrix, by_size) {
  n_labels = ncol(matrix)
  step_of = integer(n_labels)
  step_of[by_size] = seq_len(n_labels) - 1L
  first = rep(n_labels, nrow(matrix))
  cells = which(matrix, arr.ind = TRUE)
  step = step_of[cells[, 2L]]
  # The last assignment wins: the row's smallest step, written last.
  last_smallest = order(step, decreasing = TRUE, method = "radix")
  first[cells[last_smallest, 1L]] = step[last_smallest]
  first
}

# Python's assign_batches(): list(batch = batch of the row at each permuted
# position (1-based batches), counts = B x L positives per batch).
multi_label_assign = function(matrix, permutation, batch_ties, min_per_label, repair = TRUE) {
  n_rows = nrow(matrix)
  n_labels = ncol(matrix)
  n_batches = length(batch_ties)
  capacity = rep(n_rows %/% n_batches, n_batches)
  extra = n_rows %% n_batches
  capacity[seq_len(extra)] = capacity[seq_len(extra)] + 1
  tie = integer(n_batches)
  tie[batch_ties] = seq_len(n_batches) - 1L
  sizes = colSums(matrix)
  by_size = order(sizes, seq_len(n_labels))
  codes = matrix[permutation, , drop = FALSE]  # the epoch's order
  # Each row's first label in that order (its rank, 0-based; n_labels: none).
  first = multi_label_first_steps(codes, by_size)
  grouped = order(first, method = "radix")
  starts = c(0, cumsum(tabulate(first + 1L, n_labels + 1L)))
  labelled = starts[[n_labels + 1L]]
  g_codes = codes[grouped[seq_len(labelled)], , drop = FALSE]
  g_batch = integer(labelled)
  fill = numeric(n_batches)
  counts = matrix(0, n_batches, n_labels)
  offset = 0
  # Only the steps that place rows (at most min(N, L) of them) are walked; a label whose
  # rows were all placed by rarer labels gets its counts from the final batches below.
  walked_steps = which(starts[-1L] > starts[-(n_labels + 1L)])
  for (step in walked_steps) {
    column = by_size[[step]]
    start = starts[[step]]
    stop_at = starts[[step + 1L]]
    before = seq_len(start)
    placed = tabulate(g_batch[before][g_codes[before, column]], n_batches)
    take = stop_at - start
    if (take > 0) {
      free = capacity - fill
      filled = multi_label_water_fill(placed, free, take)
      give = filled$give
      left = take - sum(give)
      rotated = (tie - offset) %% n_batches
      if (left > 0) {
        room = which(placed + give == filled$level & give < free)
        chosen = room[order(rotated[room])[seq_len(left)]]
        give[chosen] = give[chosen] + 1
      }
      g_batch[seq.int(start + 1, stop_at)] = multi_label_slots(placed, give, rotated, n_batches)
      fill = fill + give
      offset = (offset + take) %% n_batches
      placed = placed + give
    }
    counts[, column] = placed
  }
  unwalked = by_size[!(seq_len(n_labels) %in% walked_steps)]
  if (length(unwalked) > 0L) {
    # Every positive of these labels is on a labelled row: count them per batch at once.
    cells = which(g_codes[, unwalked, drop = FALSE], arr.ind = TRUE)
    counts[, unwalked] = tabulate((cells[, 2L] - 1L) * n_batches + g_batch[cells[, 1L]],
      n_batches * length(unwalked))
  }
  batch = integer(n_rows)
  batch[grouped[seq_len(labelled)]] = g_batch
  rest = grouped[seq_len(n_rows - labelled) + labelled]
  batch[rest] = rep(seq_len(n_batches), capacity - fill)
  if (repair) {
    state = multi_label_repair(codes, batch, counts, sizes, min_per_label, n_batches, by_size)
    batch = state$batch
    counts = state$counts
  }
  storage.mode(counts) = "integer"
  list(batch = batch, counts = counts)
}

# Water-filling `take` rows onto `counts`: list(give, level), Python's _water_fill().
multi_label_water_fill = function(counts, free, take) {
  low = 0
  high = max(counts) + max(free) + 1
  while (low < high) {
    middle = (low + high + 1) %/% 2
    if (sum(pmin(free, pmax(middle - counts, 0))) <= take) low = middle else high = middle - 1
  }
  list(give = pmin(free, pmax(low - counts, 0)), level = low)
}

# The batch of each dealt row in dealing order: slots by (level, rotated rank).
multi_label_slots = function(counts, give, rotated, n_batches) {
  total = sum(give)
  batch = rep(seq_len(n_batches), give)
  level = counts[batch] + (seq_len(total) - 1 - rep(cumsum(give) - give, give))
  batch[order(level * n_batches + rotated[batch])]
}

# Python's _repair()/_one_swap(): swaps fixing missing positives of guaranteed labels.
multi_label_repair = function(codes, batch, counts, sizes, m, n_batches, by_size) {
  guaranteed = sizes >= m * n_batches
  unchanged = list(batch = batch, counts = counts)
  if (n_batches == 1 || !any(guaranteed)) return(unchanged)
  columns = which(guaranteed)
  if (!any(counts[, columns] < m)) return(unchanged)
  # Each batch's positions in ascending order, kept so by every swap (no scan of all rows).
  members = unname(split(seq_along(batch), factor(batch, levels = seq_len(n_batches))))
  # The work counted as Python's RepairBudget counts it (the same cells, the same order).
  budget = new.env()
  budget$spent = 0
  budget$spend = function(cells, counts) {
    budget$spent = budget$spent + cells
    if (budget$spent > REPAIR_WORK_MAX) multi_label_repair_refusal(budget$spent, counts, sizes, m)
  }
  # Only labels short somewhere now: a swap never takes a guaranteed label below m.
  short_now = guaranteed & colSums(counts < m) > 0
  for (label in by_size[short_now[by_size]]) {
    for (short in which(counts[, label] < m)) {
      while (counts[short, label] < m) {
        swap = multi_label_one_swap(codes, batch, members, counts, columns, label, short, m,
          budget)
        if (is.null(swap)) break
        batch = swap$batch
        counts = swap$counts
        members = swap$members
      }
    }
  }
  list(batch = batch, counts = counts)
}

# The repair step may read at most this many cells of the batches' label tables
# (Python's REPAIR_WORK_MAX and REPAIR_STEP_CELLS).
REPAIR_WORK_MAX = 2^30
REPAIR_STEP_CELLS = 1024

multi_label_repair_refusal = function(spent, counts, sizes, m) {
  count = function(x) format(x, big.mark = ",", scientific = FALSE, trim = TRUE)
  guaranteed = sizes >= m * nrow(counts)
  missing = sum(pmax(m - counts[, guaranteed, drop = FALSE], 0))
  abort_value("strata", sprintf(paste0("strata has %s labels in %s batches: MultiLabel's repair ",
    "step read %s cells of the batches' label tables (more than 2**30) and still has %s ",
    "missing positives to fix. Drop labels too rare to matter or merge them, or use fewer ",
    "batches (a larger batch_size or a smaller num_batches), or a smaller min_per_label."),
    count(ncol(counts)), count(nrow(counts)), count(spent), count(missing)))
}

multi_label_one_swap = function(codes, batch, members, counts, columns, label, short, m,
  budget) {
  donors = which(counts[, label] > m)
  if (!length(donors)) return(NULL)
  donors = donors[order(-counts[donors, label])]
  in_short = members[[short]]
  budget$spend(length(in_short) * ncol(codes), counts)
  candidates = in_short[!codes[in_short, label]]
  if (!length(candidates)) return(NULL)
  short_bits = codes[candidates, columns, drop = FALSE]
  locked_short = counts[short, columns] <= m
  for (donor in donors) {
    locked_donor = counts[donor, columns] <= m
    in_donor = members[[donor]]
    budget$spend(length(in_donor) * ncol(codes), counts)
    givers = in_donor[codes[in_donor, label]]
    for (row in givers) {
      budget$spend(length(candidates) * length(columns) + REPAIR_STEP_CELLS, counts)
      mine = codes[row, columns]
      need_one = locked_donor & mine
      need_zero = locked_short & !mine
      valid = rowSums(short_bits[, need_one, drop = FALSE]) == sum(need_one) &
        rowSums(short_bits[, need_zero, drop = FALSE]) == 0
      hit = which(valid)
      if (length(hit)) {
        other = candidates[[hit[[1L]]]]
        batch[row] = short
        batch[other] = donor
        members[[donor]] = sort(replace(in_donor, in_donor == row, other))
        members[[short]] = sort(replace(in_short, in_short == other, row))
        change = as.double(codes[row, ]) - as.double(codes[other, ])
        counts[short, ] = counts[short, ] + change
        counts[donor, ] = counts[donor, ] - change
        return(list(batch = batch, counts = counts, members = members))
      }
    }
  }
  NULL
}

# The strict error's message, or NULL (Python's shortfall_message()).
multi_label_shortfall = function(names, counts, sizes, m) {
  n_batches = nrow(counts)
  least = apply(counts, 2L, min)
  short = which(sizes >= m * n_batches & least < m)
  if (!length(short)) return(NULL)
  listed = paste0(sprintf("'%s' (least %d of %d in %d batches)", names[short],
    as.integer(least[short]), as.integer(sizes[short]), as.integer(n_batches)), collapse = ", ")
  sprintf(paste0(
    "min_per_label=%d is not met for label(s) %s even after repair: some batch holds fewer ",
    "than %d of their positives (rows carrying several of these labels cannot be split ",
    "otherwise). Pass strict=False to get the batches with the shortfall reported ",
    "(plan.label_spread()), or use fewer batches, or a smaller min_per_label."),
    as.integer(m), listed, as.integer(m))
}

# The strict = FALSE warning's message, or NULL (Python's shortfall_warning()):
# each guaranteed label some batch holds fewer than m positives of, with the
# number of such batches.
multi_label_shortfall_warning = function(names, counts, sizes, m, epoch) {
  n_batches = nrow(counts)
  short_batches = colSums(counts < m)
  short = which(sizes >= m * n_batches & short_batches > 0)
  if (!length(short)) return(NULL)
  listed = paste0(sprintf("'%s' in %d of %d batches", names[short],
    as.integer(short_batches[short]), as.integer(n_batches)), collapse = ", ")
  sprintf(paste0(
    "min_per_label=%d is not met in epoch %d: batches hold fewer than %d positives of ",
    "label(s) %s, though each has enough positives for every batch (rows carrying several ",
    "of these labels cannot be split otherwise). The batches are served (strict=False); ",
    "plan.label_spread() lists every label. Use fewer batches or a smaller min_per_label, ",
    "or strict=True to refuse such a plan."),
    as.integer(m), as.integer(epoch), as.integer(m), listed)
}
