# ClassesPerBatch (P classes x K rows per batch): the twin of
# pystratum/policies/_classes_per_batch.py. The same slots, extra slots,
# refills, draws and layout, so rng = "R" gives the Python core's batches
# plus one. Its allocation is sparse (slots per stratum, no cut table); its
# epochs are assembled by assemble_slots() (assemble.R).

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
#' `classes = "uniform"`: every stratum is in the same number of batches per
#' epoch, plus or minus one. The epoch has `B = num_batches` batches, or
#' `ceiling(N / (P * K))` (N the served rows); with `T = B * P` slots and
#' `M` served strata numbered `i = 0, ..., M - 1` in order of first
#' appearance, every stratum has `T %/% M` slots and the `r = T %% M`
#' strata with `(i - epoch * r) %% M < r` one more (a window moving by `r`
#' each epoch), so over epochs `0, ..., e - 1` stratum `i` has had
#' `C_i(e) = e * (T %/% M) + ceiling((e * r - i) / M)` slots (the ceiling
#' taken as 0 when negative): appearances differ by at most one at every
#' epoch. Each stratum serves its endless sequence of passes, each pass all
#' its rows in a fresh random order, and epoch e serves ranks `K * C_i(e)`
#' onwards of it (where epoch e - 1 stopped, computed directly for any
#' epoch): a stratum's rows all come round before any repeats, and over
#' epochs 0, ..., e - 1 (counted from epoch 0, for every e; not over any
#' window of epochs) their serve counts differ by at most one. A pass's order is the
#' keyed bijection of `rng = "index"` with keys from `(key, pass, turn)`,
#' `key` the seed (`rng = "index"`) or `seed %% 2^52` (`"R"`, `"torch"`);
#' when a slot straddles two passes (t rows of the earlier one), the later
#' pass's first K rows are reordered so that the first K - t of them not
#' among the earlier pass's last t come first (no row twice in a batch).
#' The epoch's one draw is the layout order of the strata
#' (`sample.int(M, M)`). The Python docstring states every step.
#'
#' @param classes_per_batch P, the strata in every batch.
#' @param per_class K, the rows of each of them in a batch.
#' @param classes `"proportional"` or `"uniform"`.
#' @param small `"error"`, `"drop"` or `"repeat"`.
#' @param num_batches `classes = "uniform"` only: the epoch's length in
#'   batches; NULL means `ceiling(N / (P * K))`.
#' @return A policy object for [stratified_batches()].
#' @export
policy_classes_per_batch = function(classes_per_batch, per_class, classes = "proportional",
  small = "error", num_batches = NULL, batch_order = NULL) {
  classes_per_batch = assert_whole_number(classes_per_batch, "classes_per_batch", minimum = 1,
    maximum = SIZE_MAX, fix = "It is a whole number of strata (classes) per batch.")
  per_class = assert_whole_number(per_class, "per_class", minimum = 1, maximum = SIZE_MAX,
    fix = "It is a whole number of rows per class in a batch.")
  classes = assert_choice(classes, "classes", c("proportional", "uniform"))
  small = assert_choice(small, "small", c("error", "drop", "repeat"))
  params = list(classes_per_batch = classes_per_batch, per_class = per_class,
    classes = classes, small = small)
  if (!is.null(num_batches)) {
    num_batches = assert_whole_number(num_batches, "num_batches", minimum = 1,
      maximum = SIZE_MAX, fix = paste0("It is the epoch's length in batches (None: ",
        "ceil(N / (classes_per_batch * per_class)))."))
    if (classes != "uniform") {
      abort_value("num_batches", sprintf(paste0(
        "num_batches=%s sets the epoch's length for classes='uniform' only; classes='%s' has ",
        "the length its slots need. Pass classes='uniform' or leave num_batches=None."),
        format(num_batches, scientific = FALSE), classes))
    }
    params$num_batches = num_batches
  }
  new_policy("classes_per_batch", with_batch_order(params, batch_order))
}

# A slot allocation, list(slots = ), as Python's Allocation(None, slots = ).
#' @export
policy_allocate.pystratum_policy_classes_per_batch = function(policy, encoded, epoch) {
  list(slots = classes_per_batch_slots(policy, encoded, epoch))
}

# The slots of one epoch: list(n_slots, n_batches, per_batch, width, step,
# refill_strata, refill_sizes, refill_takes); see the Python class docstring.
classes_per_batch_slots = function(policy, encoded, epoch) {
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
  if (policy$params$small == "drop" && any(small)) {
    dropped = which(small)
    warn_small_strata(sprintf(paste0(
      "ClassesPerBatch(per_class=%s, small='drop') leaves out %d stratum/strata with fewer ",
      "than %s rows (%s rows in all, e.g. %s); they are in no batch."),
      format(k, scientific = FALSE), length(dropped), format(k, scientific = FALSE),
      format(sum(sizes[dropped]), scientific = FALSE), labels(dropped[[1L]])))
  }
  if (policy$params$classes == "uniform") {
    return(uniform_slots(policy, sizes, served, encoded, epoch))
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

# classes = "uniform": the slots and pass starts of one epoch in closed form
# (Python: ClassesPerBatch._uniform).
uniform_slots = function(policy, sizes, served, encoded, epoch) {
  p = policy$params$classes_per_batch
  k = policy$params$per_class
  length_given = policy$params$num_batches
  rows = sum(sizes[served])
  n_batches = if (is.null(length_given)) ceiling(rows / (p * k)) else length_given
  count = function(x) format(x, big.mark = ",", scientific = FALSE, trim = TRUE)
  check_served_size(n_batches * p * k, rows, rows,
    if (is.null(length_given)) "classes_per_batch" else "num_batches",
    if (is.null(length_given)) p else length_given,
    sprintf("an epoch of %s batches of %s x %s rows", count(n_batches),
      format(p, scientific = FALSE), format(k, scientific = FALSE)),
    "Lower num_batches, classes_per_batch or per_class.")
  turn = first_appearance_turn(encoded)
  turn = turn[served[turn]]
  n_served = length(turn)
  total = n_batches * p
  base = total %/% n_served
  r = total %% n_served
  i = seq_len(n_served) - 1
  # Slots before this epoch: e * base + ceiling((e * r - i) / M), never below 0.
  whole = (epoch * r) %/% n_served
  part = (epoch * r) %% n_served
  n_slots = starts = numeric(length(sizes))
  n_slots[turn] = base + as.numeric((i - (epoch * r) %% n_served) %% n_served < r)
  starts[turn] = (epoch * base + whole + as.numeric(i < part)) * k
  list(n_slots = n_slots, n_batches = n_batches, per_batch = p, width = k,
    step = slot_step(n_batches), refill_strata = numeric(0), refill_sizes = numeric(0),
    refill_takes = numeric(0), pass_starts = starts)
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

# min(n, missing) until `missing` rows are drawn: the takes of a small stratum's slot.
pass_takes = function(missing, n) {
  c(rep(n, missing %/% n), if (missing %% n > 0) missing %% n)
}

# The refill draws in draw order (Python: ClassesPerBatch._refills): one
# vector piece per stratum, joined once (no vector grown draw by draw).
classes_per_batch_refills = function(sizes, own, n_slots, k, first_rows) {
  pieces = lapply(order(first_rows), function(s) {
    n = sizes[[s]]
    if (own[[s]] == 0) return(NULL)
    if (n < k) {
      takes = c(pass_takes(k - n, n), rep(pass_takes(k, n), n_slots[[s]] - 1))
      return(list(s = rep(s, length(takes)), size = rep(n, length(takes)), take = takes))
    }
    r = n %% k
    extras = n_slots[[s]] - own[[s]]
    list(s = c(if (r > 0) s, rep(s, extras)), size = c(if (r > 0) n - r, rep(n, extras)),
      take = c(if (r > 0) k - r, rep(k, extras)))
  })
  pieces = pieces[!vapply(pieces, is.null, logical(1))]
  join = function(name) as.numeric(unlist(lapply(pieces, `[[`, name), use.names = FALSE))
  list(refill_strata = join("s"), refill_sizes = join("size"), refill_takes = join("take"))
}
