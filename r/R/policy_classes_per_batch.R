# ClassesPerBatch (P classes x K rows per batch): the twin of
# pystratum/policies/_classes_per_batch.py and pystratum._assemble.assemble_slots.
# The same slots, extra slots, refills, draws and layout, so rng = "R" gives
# the Python core's batches plus one. Its allocation is sparse (slots per
# stratum), so its epochs are assembled here, not from a cut table.

#' Batches of P distinct strata with K rows each
#'
#' Every batch holds exactly `classes_per_batch` (P) distinct strata with
#' `per_class` (K) rows each, and every row of every stratum is served at
#' least once per epoch (`classes = "proportional"`): stratum s fills
#' `ceil(N_s / K)` slots of K rows, its last slot topped up with rows drawn
#' afresh from the same stratum (`sample.int`), the epoch has
#' `B = max(ceil(T / P), max_s ceil(N_s / K))` batches (T the slots), and
#' the slots the batches still lack are extra slots handed to the strata with
#' the fewest slots. Strata with fewer than K rows are an error
#' (`small = "error"`), left out (`"drop"`, with a warning) or repeated
#' inside their slot (`"repeat"`). See the Python class
#' `pystratum.policies.ClassesPerBatch` for the exact rule; both languages
#' give the same batches for the same seed.
#'
#' @param classes_per_batch P, the strata in every batch.
#' @param per_class K, the rows of each of them in a batch.
#' @param classes `"proportional"`.
#' @param small `"error"`, `"drop"` or `"repeat"`.
#' @return A policy object for [stratified_batches()].
#' @export
policy_classes_per_batch = function(classes_per_batch, per_class, classes = "proportional",
  small = "error") {
  classes_per_batch = assert_whole_number(classes_per_batch, "classes_per_batch", minimum = 1,
    fix = "It is a whole number of strata (classes) per batch.")
  per_class = assert_whole_number(per_class, "per_class", minimum = 1,
    fix = "It is a whole number of rows per class in a batch.")
  classes = assert_choice(classes, "classes", "proportional")
  small = assert_choice(small, "small", c("error", "drop", "repeat"))
  new_policy("classes_per_batch", list(classes_per_batch = classes_per_batch,
    per_class = per_class, classes = classes, small = small))
}

#' @export
policy_allocate.pystratum_policy_classes_per_batch = function(policy, encoded, epoch) {
  classes_per_batch_slots(policy, encoded, epoch)
}

# The slots of one epoch: list(n_slots, n_batches, step, refill_strata,
# refill_sizes, refill_takes); see the Python class docstring.
classes_per_batch_slots = function(policy, encoded, epoch, warn = TRUE) {
  sizes = as.double(encoded$sizes)
  p = policy$params$classes_per_batch
  k = policy$params$per_class
  small = sizes < k
  labels = function(which) vapply(which, function(s) stratum_label(encoded, s), "")
  if (any(small) && policy$params$small == "error") {
    which = which(small)
    shown = paste(sprintf("%s (%s rows)", labels(utils::head(which, 10L)),
      format(sizes[utils::head(which, 10L)], scientific = FALSE)), collapse = ", ")
    more = if (length(which) <= 10L) "" else sprintf(" and %d more", length(which) - 10L)
    abort_value("per_class", sprintf(paste0(
      "per_class=%s needs at least %s rows of every stratum (ClassesPerBatch), but %d ",
      "stratum/strata have fewer: %s%s. Pass small='drop' to leave them out, small='repeat' ",
      "to repeat their rows inside their slot, or a smaller per_class."),
      format(k, scientific = FALSE), format(k, scientific = FALSE), length(which), shown, more))
  }
  served = if (policy$params$small == "drop") !small else rep(TRUE, length(sizes))
  n_served = sum(served)
  if (n_served < p) {
    feasible_k = if (length(sizes) >= p) sort(sizes, decreasing = TRUE)[[p]] else 0
    hint = sprintf("the largest feasible classes_per_batch with per_class=%s is %d%s",
      format(k, scientific = FALSE), n_served,
      if (n_served) "" else sprintf(": no stratum has %s rows", format(k, scientific = FALSE)))
    hint = paste0(hint, if (feasible_k) sprintf(
      "; the largest feasible per_class with classes_per_batch=%s is %s",
      format(p, scientific = FALSE), format(feasible_k, scientific = FALSE)) else
      sprintf("; there are only %d strata, so classes_per_batch=%s is never feasible",
        length(sizes), format(p, scientific = FALSE)))
    abort_value("classes_per_batch", sprintf(paste0(
      "classes_per_batch=%s with per_class=%s needs %s distinct strata that can ",
      "fill a slot of %s rows in every batch, but only %d of the %d strata can (%s). Lower ",
      "classes_per_batch or per_class%s."), format(p, scientific = FALSE),
      format(k, scientific = FALSE), format(p, scientific = FALSE),
      format(k, scientific = FALSE), n_served, length(sizes), hint,
      if (policy$params$small == "repeat") "" else ", or pass small='repeat'"))
  }
  if (warn && policy$params$small == "drop" && any(small)) {
    dropped = which(small)
    warning(sprintf(paste0(
      "ClassesPerBatch(per_class=%s, small='drop') leaves out %d stratum/strata with fewer ",
      "than %s rows (%s rows in all, e.g. %s); they are in no batch."),
      format(k, scientific = FALSE), length(dropped), format(k, scientific = FALSE),
      format(sum(sizes[dropped]), scientific = FALSE), labels(dropped[[1L]])), call. = FALSE)
  }
  own = ifelse(served, pmax(ceiling(sizes / k), 1), 0)
  n_batches = max(ceiling(sum(own) / p), max(own))
  # Checked before any table exists: a huge stratum with a large P asks B * P * K rows.
  count = function(x) format(x, big.mark = ",", scientific = FALSE, trim = TRUE)
  check_served_size(n_batches * p * k, sum(own) + length(sizes), sum(sizes),
    "classes_per_batch", p, sprintf(paste0("an epoch of %s batches of %s x %s rows (B is set ",
      "by the largest stratum's %s slots or by the total of %s slots)"), count(n_batches),
      format(p, scientific = FALSE), format(k, scientific = FALSE), count(max(own)),
      count(sum(own))), "Lower classes_per_batch or per_class, or split the largest strata.")
  first_rows = match(seq_along(sizes), encoded$codes)
  n_slots = own + extra_slots(own, sizes, served, n_batches * p, first_rows, epoch)
  refills = classes_per_batch_refills(sizes, own, n_slots, k, first_rows)
  c(list(n_slots = n_slots, n_batches = n_batches, per_batch = p, width = k,
    step = slot_step(n_batches)), refills)
}

# Water-filling of the extra slots (Python: _extra_slots).
extra_slots = function(own, sizes, served, capacity, first_rows, epoch) {
  extra = numeric(length(own))
  left = capacity - sum(own)
  if (left == 0) return(extra)
  candidates = which(served)
  levels = own[candidates]
  ordered = sort(levels)
  below = ordered * seq_along(ordered) - cumsum(ordered)
  j = sum(below <= left)
  level = ordered[[j]] + (left - below[[j]]) %/% j
  raised = pmax(level - levels, 0)
  extra[candidates] = raised
  rest = left - sum(raised)
  if (rest > 0) {
    tied = candidates[(levels + raised) == level]
    tied = tied[order(-sizes[tied], first_rows[tied])]
    start = (epoch * rest) %% length(tied)
    chosen = tied[(start + seq_len(rest) - 1) %% length(tied) + 1L]
    extra[chosen] = extra[chosen] + 1
  }
  extra
}

# The refill draws in draw order (Python: ClassesPerBatch._refills).
classes_per_batch_refills = function(sizes, own, n_slots, k, first_rows) {
  strata = sizes_out = takes = numeric(0)
  for (s in order(first_rows)) {
    n = sizes[[s]]
    if (own[[s]] == 0) next
    if (n < k) {
      for (slot in seq_len(n_slots[[s]])) {
        missing = k - (if (slot == 1L) n else 0)
        while (missing > 0) {
          strata = c(strata, s)
          sizes_out = c(sizes_out, n)
          takes = c(takes, min(n, missing))
          missing = missing - min(n, missing)
        }
      }
      next
    }
    r = n %% k
    extras = n_slots[[s]] - own[[s]]
    if (r > 0) {
      strata = c(strata, s)
      sizes_out = c(sizes_out, n - r)
      takes = c(takes, k - r)
    }
    strata = c(strata, rep(s, extras))
    sizes_out = c(sizes_out, rep(n, extras))
    takes = c(takes, rep(k, extras))
  }
  list(refill_strata = strata, refill_sizes = sizes_out, refill_takes = takes)
}

# The layout step g (Python: pystratum.policies._base.slot_step).
slot_step = function(n_batches) {
  if (n_batches <= 2) return(n_batches - 1)
  centre = (n_batches * 618034) %/% 1000000
  best = NULL
  for (distance in 0:400) {
    steps = if (distance == 0) centre else c(centre + distance, centre - distance)
    for (step in steps) {
      if (step < 1 || step >= n_batches || whole_gcd(step, n_batches) != 1) next
      largest = max(largest_quotient(n_batches, step), 3)
      if (is.null(best) || largest < best[[1L]]) best = c(largest, step)
      if (largest == 3) return(step)
    }
  }
  best[[2L]]
}

whole_gcd = function(a, b) {
  while (b != 0) {
    rest = a %% b
    a = b
    b = rest
  }
  a
}

largest_quotient = function(a, b) {
  largest = 0
  while (b != 0) {
    largest = max(largest, a %/% b)
    rest = a %% b
    a = b
    b = rest
  }
  largest
}

# The draws of an epoch: list(sizes, takes) (permutation of the rows, of the
# served strata, then one per refill).
classes_per_batch_draw_group = function(slots, n_rows) {
  served = sum(slots$n_slots > 0)
  list(sizes = c(n_rows, served, slots$refill_sizes), takes = c(n_rows, served,
    slots$refill_takes))
}

# The batches of one epoch from its draws (Python: assemble_slots).
assemble_slots = function(encoded, slots, draws) {
  sizes = as.double(encoded$sizes)
  k = slots$width
  p = slots$per_batch
  n_batches = slots$n_batches
  permutation = draws[[1L]]
  first_rows = match(seq_along(sizes), encoded$codes)
  served = order(first_rows)
  served = served[slots$n_slots[served] > 0]
  layout = served[draws[[2L]]]
  runs = slots$n_slots[layout]
  run_start = numeric(length(sizes))
  run_start[layout] = cumsum(runs) - runs
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

# 1, 2, ..., t for each t in takes, concatenated.
sequence_within = function(takes) {
  seq_len(sum(takes)) - rep(cumsum(takes) - takes, takes)
}

# stratified_batches() for this policy (rng "R" or "torch", or no shuffle).
classes_per_batch_batches = function(encoded, policy, seed, rng, epoch, shuffle) {
  slots = classes_per_batch_slots(policy, encoded, epoch)
  group = classes_per_batch_draw_group(slots, encoded$n_rows)
  draws = if (!shuffle) lapply(group$takes, seq_len) else if (rng == "index") {
    seed = if (is.null(seed)) sample.int(.Machine$integer.max, 1L) - 1 else assert_index_seed(seed)
    classes_per_batch_index_draws(encoded, slots, seed, epoch)
  } else {
    skipped = epoch_skip_groups(epoch, rng, encoded$n_rows, function(k) {
      classes_per_batch_draw_group(classes_per_batch_slots(policy, encoded, k, warn = FALSE),
        encoded$n_rows)
    })
    draw = permutation_stream(rng, seed)
    for (earlier in skipped) draw_group(draw, earlier)
    draw_group(draw, group)
  }
  batches = assemble_slots(encoded, slots, draws)
  attr(batches, "batch_strata") = NULL
  batches
}

# stratified_epochs() for this policy (the torch sampler's bookkeeping): the
# same environment, one stream kept across epochs, so $next_epoch() gives
# stratified_batches(seed = , epoch = k) for k = 0, 1, ...
classes_per_batch_epochs = function(encoded, policy, shuffle, seed, rng, torch_backend) {
  slots_0 = classes_per_batch_slots(policy, encoded, 0)
  self = new.env(parent = emptyenv())
  self$n_rows = encoded$n_rows
  self$batch_sizes = rep(slots_0$per_batch * slots_0$width, slots_0$n_batches)
  self$prediction_sizes = prediction_batch_sizes(encoded$n_rows, self$batch_sizes)
  self$shuffle = shuffle
  self$seed = seed
  self$rng = rng
  draw = NULL
  served = 0L
  self$length = function() length(self$batch_sizes)
  self$epochs_served = function() served
  self$next_epoch = function() {
    slots = if (served == 0L) slots_0 else
      classes_per_batch_slots(policy, encoded, served, warn = FALSE)
    group = classes_per_batch_draw_group(slots, encoded$n_rows)
    if (shuffle && rng == "index") {
      # Keyed bijections: epoch k is computed directly, no stream to keep.
      if (is.null(self$seed)) self$seed = sample.int(.Machine$integer.max, 1L) - 1
      draws = classes_per_batch_index_draws(encoded, slots, self$seed, served)
    } else {
      if (shuffle && is.null(draw)) {
        draw <<- permutation_stream(rng, seed, torch_backend)
      }
      draws = if (shuffle) draw_group(draw, group) else lapply(group$takes, seq_len)
    }
    served <<- served + 1L
    batches = assemble_slots(encoded, slots, draws)
    attr(batches, "batch_strata") = NULL
    batches
  }
  self$start_at = function(epoch) {
    skip_epochs(epoch, served, shuffle, rng, function() {
      epoch_skip_groups(epoch, rng, encoded$n_rows, function(k) {
        classes_per_batch_draw_group(classes_per_batch_slots(policy, encoded, k, warn = FALSE),
          encoded$n_rows)
      })
    }, function(groups) {
      draw <<- permutation_stream(rng, seed, torch_backend)
      for (earlier in groups) draw_group(draw, earlier)
    })
    served <<- as.integer(epoch)
    invisible(self)
  }
  self$in_order = function() consecutive_batches(self$prediction_sizes)
  class(self) = "pystratum_epochs"
  self
}

# The draws of an epoch for rng = "index" (Python: slot_index_draws): keyed
# bijections. Pass 0 of the stratum with turn t permutes its rows (row order)
# by stream t; the layout permutes the S' served strata by stream S; refill i
# (1-based, draw order) takes the first `take` values of the permutation of
# 0..size-1 by stream S + i. Values are 1-based, as the streams' draws.
classes_per_batch_index_draws = function(encoded, slots, seed, epoch) {
  sizes = as.double(encoded$sizes)
  n_strata = length(sizes)
  turn = integer(n_strata)
  turn[first_appearance_turn(encoded)] = seq_len(n_strata) - 1L
  keys = index_round_keys(seed, epoch, turn)
  members = split(seq_along(encoded$codes), factor(encoded$codes, levels = seq_len(n_strata)))
  pass_0 = unlist(lapply(seq_len(n_strata), function(s) {
    members[[s]][index_permute_ranks(seq_len(sizes[[s]]) - 1, sizes[[s]], keys[, s]) + 1]
  }), use.names = FALSE)
  served = sum(slots$n_slots > 0)
  layout = index_permute_ranks(seq_len(served) - 1, served,
    index_round_keys(seed, epoch, n_strata)[, 1]) + 1
  refills = lapply(seq_along(slots$refill_sizes), function(i) {
    index_permute_ranks(seq_len(slots$refill_takes[[i]]) - 1, slots$refill_sizes[[i]],
      index_round_keys(seed, epoch, n_strata + i)[, 1]) + 1
  })
  c(list(pass_0, layout), refills)
}
