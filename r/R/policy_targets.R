# Sampling policies: policy_targets() and policy_downsample(), the twins of
# pystratum.policies.Targets and Downsample. Every count is exact whole-number
# arithmetic in doubles below 2^53 (mul_mod for products that could pass it),
# so both languages allocate the same ranks on every input.

SHARE_SCALE = 1e6
SHARE_TOLERANCE = 1e-9

#' Sampling policies: target shares and downsampling with weights
#'
#' * `policy_targets(shares, batch_size, epoch = "largest")`: every batch holds
#'   exactly `batch_size` rows, each stratum its target share. `shares` is
#'   `"balanced"` or a named numeric vector (or list) naming every stratum by
#'   its label text (see below), shares `>= 0` adding up to 1 within 1e-9
#'   (not normalised: a wrong sum is an error; a share of 0 leaves a stratum
#'   out). Shares become whole weights `w_s = floor(share_s * 1e6 + 0.5)`
#'   (`"balanced"`: 1 each), `W = sum(w)`; batch `J` (counted across epochs,
#'   `J = epoch * num_batches + j`) gives stratum `s` `f_s = (B * w_s) %/% W`
#'   rows or one more: the remainders `B * w_s - f_s * W` lie end to end on a
#'   circle of length `W` (strata in order of first appearance) and batch `J`
#'   takes an extra row from each stratum whose arc holds `J * g mod W` (`g`
#'   coprime to `W`, near `0.618 W`). Every batch sums to `B`; over any `W`
#'   consecutive batches the shares are exact. `epoch = "largest"`: the fewest
#'   batches in which every stratum with a positive share gets at least `N_s`
#'   slots whatever the rotation's phase (every row at least once per epoch;
#'   small strata recycled); `"smallest"`: the most batches in which no
#'   stratum gets more than `N_s` slots (no row twice; large strata
#'   undersampled, a fresh random subset each epoch); a number: that many
#'   batches. Importance weights: a row of stratum `s` weighs
#'   `(N_s / N) / (w_s / W)`, its share of the data over its long-run share
#'   of the rows served (0 for a share of 0), the same every epoch, so a
#'   weighted mean of a loss over the rows served estimates the mean loss on
#'   the data's own class distribution.
#' * `policy_downsample(keep, base)`: `keep` a named numeric vector of
#'   fractions in (0, 1]; stratum `s` keeps `max(1, floor(keep_s * N_s +
#'   0.5))` rows, a fresh random subset each epoch, drawn as
#'   `sample.int(N_s, k_s)` of its rows; `base` (any policy, or a number `m`)
#'   batches the kept rows;
#'   kept rows of downsampled strata carry the weight `N_s / k_s`, others 1,
#'   each times the base policy's own weight (a `policy_targets()` base: its `w_s`).
#'
#' Draws: an epoch of these policies draws stratum by stratum (strata in
#' order of first appearance in the data), only the rows it serves. Stratum
#' `s` first draws its pass 0, `sample.int(N_s, t)` with `t` the rows it
#' serves (at most `N_s`, or `k_s` when downsampled): a fresh random subset
#' in random order. Recycling: a stratum with more slots than rows then
#' serves them again in fresh random orders, one new `sample.int(k)` per
#' extra pass (`k` its rows), the last pass cut short to the `t` ranks it
#' serves and drawn as `sample.int(k, t)`; every row is used `floor` or
#' `ceiling` of slots / rows times. An epoch thus costs about one random
#' draw per row served. With `rng = "torch"` every draw is a
#' `torch_randperm(k)`, cut to its length.
#'
#' Order inside a batch: stratum by stratum, strata in order of first
#' appearance in the data, each stratum's rows in the order of its epoch
#' sequence (its pass 0, then the extra passes);
#' [policy_min_per_stratum()] and [policy_fixed_size()] keep permuted order
#' instead. Every row is placed directly (linear time); Python's batches
#' are identical.
#'
#' Labels are named by text: strings as they are, whole numbers without
#' decimals (`1`), logicals as `TRUE`/`FALSE`, several columns joined by `/`.
#' The Python package uses the same rule, so recorded policies agree.
#'
#' Weights: [stratified_batches()] returns them as the attribute `"weights"`,
#' a list parallel to the batches (`NULL` when the policy has none).
#' `policy_targets()`' weights make a weighted *mean* over the rows served
#' estimate the data's mean loss; `policy_downsample()`'s `N_s / k_s` make the
#' weighted *sum* over an epoch estimate the full data's loss sum (the same
#' correction up to the constant `N / served`); over a `policy_targets()`
#' base the two multiply.
#' [batch_sampler_stratified()] serves the batches of these policies to
#' mlr3torch learners, but mlr3torch's loss takes no per-row weights from a
#' sampler, so a learner trained on downsampled batches learns the
#' downsampled class balance, uncorrected (the Python package's torch face
#' carries the weights to the loss; see its `WeightedDataset`).
#'
#' @param shares (`character(1)` or named `numeric()`)\cr `"balanced"` or the
#'   share of every stratum.
#' @param batch_size (`integer(1)`)\cr Rows of every batch.
#' @param epoch (`character(1)` or `integer(1)`)\cr `"largest"`,
#'   `"smallest"` or the number of batches per epoch.
#' @param keep (named `numeric()`)\cr Fraction of each named stratum to keep.
#' @param base (`pystratum_policy` or `integer(1)`)\cr The policy that batches
#'   the kept rows.
#' @return A policy object (see [policies]).
#' @examples
#' y = rep(c("pos", "neg"), c(30, 970))
#' b = stratified_batches(y, policy_targets(c(pos = 0.5, neg = 0.5), 20), seed = 1)
#' table(y[b[[1]]])
#' d = stratified_batches(y, policy_downsample(c(neg = 0.1), policy_fixed_size(50)), seed = 1)
#' unique(unlist(attr(d, "weights")))
#' @name sampling_policies
NULL

#' @rdname sampling_policies
#' @export
policy_targets = function(shares, batch_size, epoch = "largest") {
  batch_size = assert_whole_number(batch_size, "batch_size", minimum = 1, maximum = SIZE_MAX,
    fix = paste0("Sizes are whole numbers doubles hold exactly (up to 2^53); an epoch may ",
      "serve at most max(16 N, 2**24) rows."))
  shares = check_shares(shares)
  if (is.character(epoch)) {
    if (length(epoch) != 1L || is.na(epoch) || !(epoch %in% c("largest", "smallest"))) {
      abort_value("epoch", sprintf(paste0("epoch must be 'largest', 'smallest' or a positive ",
        "whole number (batches per epoch), got epoch=%s."), show_value(epoch)))
    }
  } else {
    epoch = assert_whole_number(epoch, "epoch", minimum = 1, maximum = SIZE_MAX,
      fix = "Pass 'largest', 'smallest' or a number of batches.")
  }
  if (!identical(shares, "balanced")) {
    check_targets_batch_size(batch_size, sum(unlist(shares) > 0))
  }
  new_policy("targets", list(shares = shares, batch_size = batch_size, epoch = epoch))
}

#' @rdname sampling_policies
#' @export
policy_downsample = function(keep, base) {
  keep = check_keep(keep)
  if (is.list(base) && !inherits(base, "pystratum_policy") &&
    setequal(names(base), c("name", "params"))) {
    base = policy_from_params(base$name, base$params)
  }
  # as_policy() blames its shorthand's name (min_samples_per_stratum); here the
  # argument is `base`, as in Python.
  base = tryCatch(as_policy(base), pystratum_error = function(e) {
    kind = if (inherits(e, "pystratum_type_error")) "type_error" else "value_error"
    abort_pystratum(kind, "base", sprintf(paste0(
      "base must be a policy, a whole number m (policy_min_per_stratum(m)) or a ",
      "list(name, params), got base=%s of type %s: %s"),
      show_value(base), type_name(base), conditionMessage(e)))
  })
  # Recorded as a plain list(name, params), as the golden vectors and Python store it.
  new_policy("downsample", list(keep = keep, base = list(name = base$name, params = base$params)))
}

check_shares = function(shares) {
  if (is.character(shares) && length(shares) == 1L && !is.na(shares)) {
    if (shares != "balanced") {
      abort_value("shares", sprintf(
        "shares must be 'balanced' or a named vector of shares, got shares=%s.",
        show_value(shares)))
    }
    return("balanced")
  }
  check_named_fractions(shares, "shares", "share")
  values = unlist(shares)
  for (key in names(values)) {
    share = values[[key]]
    if (!is.finite(share) || share < 0) {
      abort_value("shares", sprintf(paste0("shares must be >= 0, got shares[['%s']]=%s. ",
        "Give a share of 0 to leave a stratum out."), key, show_value(share)))
    }
    if (share > 0 && floor(share * SHARE_SCALE + 0.5) == 0) {
      abort_value("shares", sprintf(paste0("shares are resolved to 1e-6, got ",
        "shares[['%s']]=%s: use a share of at least 5e-7, or 0 to leave the stratum out."),
        key, show_value(share)))
    }
  }
  total = sum(values)
  if (abs(total - 1) > SHARE_TOLERANCE) {
    abort_value("shares", sprintf(paste0("shares must add up to 1 (they are not normalised), ",
      "got a sum of %s. Divide each share by the sum."), format(total, digits = 17)))
  }
  as.list(values)
}

check_keep = function(keep) {
  check_named_fractions(keep, "keep", "fraction")
  values = unlist(keep)
  for (key in names(values)) {
    fraction = values[[key]]
    if (!is.finite(fraction) || fraction <= 0 || fraction > 1) {
      abort_value("keep", sprintf(paste0("keep fractions must be in (0, 1], got ",
        "keep[['%s']]=%s. Use 1 to keep every row of a stratum."), key, show_value(fraction)))
    }
  }
  as.list(values)
}

# A non-empty named numeric vector or list of numbers, each name once.
check_named_fractions = function(x, name, what) {
  if (is.list(x) && all(vapply(x, function(v) is.numeric(v) && length(v) == 1L, TRUE))) {
    x = unlist(x)
  }
  keys = names(x)
  if (!is.numeric(x) || length(x) == 0L || is.null(keys) || anyNA(keys) || any(keys == "")) {
    abort_type(name, sprintf(paste0("%s must be a non-empty named numeric vector ",
      "(label = %s), got %s=%s of type %s."), name, what, name, show_value(x), type_name(x)))
  }
  if (anyDuplicated(keys)) {
    abort_value(name, sprintf(paste0("%s names stratum '%s' twice (labels are matched by ",
      "their text). Give each stratum one %s."), name, keys[anyDuplicated(keys)], what))
  }
  invisible(NULL)
}

check_targets_batch_size = function(batch_size, positive) {
  if (batch_size < positive) {
    abort_value("batch_size", sprintf(paste0("batch_size must be at least the number of ",
      "strata with a positive share (%d), got batch_size=%s: a batch could not hold one row ",
      "of each. Use batch_size >= %d, or give some strata a share of 0."), positive,
      show_value(batch_size), positive))
  }
}

# The text naming each stratum in policy parameters (the Python rule).
stratum_keys = function(encoded) {
  rows = match(seq_along(encoded$sizes), encoded$codes)
  parts = lapply(encoded$columns, function(column) {
    values = column[rows]
    if (is.factor(values)) return(as.character(values))
    if (is.character(values)) return(values)
    if (is.logical(values)) return(ifelse(values, "TRUE", "FALSE"))
    double_keys(as.double(values))
  })
  do.call(paste, c(unname(parts), sep = "/"))
}

# Python's text of each double, value by value (format() on a vector pads every value
# to a common width: "3.0000000" or "1.0000000000000001e-01"): whole numbers in full,
# others as Python's repr, the shortest %g text that reads back as the same double.
double_keys = function(values) {
  vapply(values, function(value) {
    if (is.infinite(value)) return(if (value > 0) "inf" else "-inf")
    if (value == trunc(value)) return(sprintf("%.0f", value + 0))  # + 0: no "-0"
    for (digits in 1:17) {
      text = sprintf("%.*g", digits, value)
      if (as.double(text) == value) return(text)
    }
    sprintf("%.17g", value)
  }, "", USE.NAMES = FALSE)
}

# Stratum index (1-based) of every key; unknown keys are an error.
match_keys = function(keys, encoded, argument) {
  texts = stratum_keys(encoded)
  if (anyDuplicated(texts)) {
    abort_value(argument, sprintf(paste0("%s names strata by their label text, but two strata ",
      "both read '%s'. Give the strata distinct labels."), argument, texts[anyDuplicated(texts)]))
  }
  index = match(keys, texts)
  if (anyNA(index)) {
    shown = paste0("'", utils::head(texts, 20L), "'", collapse = ", ")
    abort_value(argument, sprintf(paste0("%s names strata that are not in the data: %s; the ",
      "strata are %s. Name strata by their label."), argument,
      paste0("'", keys[is.na(index)], "'", collapse = ", "), shown))
  }
  index
}

first_appearance_turn = function(encoded) {
  order(match(seq_along(encoded$sizes), encoded$codes))
}

#' @export
policy_allocate.pystratum_policy_targets = function(policy, encoded, epoch) {
  layout = targets_layout(policy, encoded)
  n_batches = layout$n_batches
  total = layout$total
  first = (mul_mod(epoch %% total, n_batches %% total, total) + seq.int(0, n_batches - 1)) %% total
  point = mul_mod(first, layout$step, total)
  extras = outer(layout$starts, point, function(start, p) (p - start) %% total) < layout$remainders
  counts = layout$floors + extras  # S x B
  cuts = cbind(0, if (n_batches == 1) counts else t(apply(counts, 1L, cumsum)))
  dimnames(cuts) = NULL
  list(cuts = cuts, row_weights = targets_importance(encoded, layout), pool_sizes = NULL)
}

# Importance weights (N_s / N) / (w_s / W): a stratum's share of the data over
# its long-run share of the rows served, 0 for a share of 0 (never served).
# (N_s * W) / (N * w_s) in doubles, the operations of Python's twin.
targets_importance = function(encoded, layout) {
  sizes = as.double(encoded$sizes)
  out = numeric(length(sizes))
  positive = layout$weights > 0
  out[positive] = (sizes[positive] * layout$total) / (sum(sizes) * layout$weights[positive])
  out
}

targets_layout = function(policy, encoded) {
  sizes = as.double(encoded$sizes)
  n_strata = length(sizes)
  batch = policy$params$batch_size
  shares = policy$params$shares
  # Bounded by the input before any table is built: one batch alone, then a
  # fixed number of batches (and, below, the epoch the shares ask for).
  n_rows = sum(sizes)
  check_targets_size(policy, batch, 1, n_strata, n_rows)
  if (!is.character(policy$params$epoch)) {
    check_targets_size(policy, batch, policy$params$epoch, n_strata, n_rows)
  }
  if (identical(shares, "balanced")) {
    check_targets_batch_size(batch, n_strata)
    weights = rep(1, n_strata)
  } else {
    keys = names(shares)
    index = match_keys(keys, encoded, "shares")
    if (length(keys) < n_strata) {
      missing = setdiff(seq_len(n_strata), index)
      labels = vapply(utils::head(missing, 10L), function(s) stratum_label(encoded, s), "")
      abort_value("shares", sprintf(paste0("shares must give every stratum a share, but it ",
        "misses %d stratum/strata: %s. Add them (a share of 0 leaves a stratum out of every ",
        "batch), or use shares='balanced'."), length(missing), paste(labels, collapse = ", ")))
    }
    weights = numeric(n_strata)
    weights[index] = floor(unlist(shares) * SHARE_SCALE + 0.5)
  }
  total = sum(weights)
  floors = (batch * weights) %/% total
  remainders = batch * weights - floors * total
  turn = first_appearance_turn(encoded)
  starts = numeric(n_strata)
  starts[turn] = (cumsum(remainders[turn]) - remainders[turn]) %% total
  step = weyl_step(total)
  layout = list(weights = weights, total = total, floors = floors, remainders = remainders,
    starts = starts, step = step)
  layout$n_batches = targets_num_batches(policy, encoded, sizes, layout)
  check_targets_size(policy, batch, layout$n_batches, n_strata, n_rows)
  layout
}

# An epoch of `n_batches` batches of `batch` rows must fit the input's bound
# (check_served_size()); the twin of Python's Targets._check_size.
check_targets_size = function(policy, batch, n_batches, n_strata, n_rows) {
  epoch = policy$params$epoch
  if (n_batches == 1 || is.character(epoch)) {
    name = "batch_size"
    value = batch
    fix = if (n_batches == 1) "Lower batch_size." else paste0("Lower batch_size, or raise the ",
      "smallest positive shares (a small share of a large stratum needs many batches to serve ",
      "it once).")
  } else {
    name = "epoch"
    value = n_batches
    fix = "Lower epoch (batches per epoch) or batch_size, or use epoch='largest'."
  }
  count = function(x) format(x, big.mark = ",", scientific = FALSE, trim = TRUE)
  check_served_size(n_batches * batch, n_strata * (n_batches + 1), n_rows, name, value,
    sprintf("an epoch of %s batch(es) of %s rows with epoch=%s", count(n_batches), count(batch),
      show_value(epoch)), fix)
}

weyl_step = function(total) {
  step = max(1, (total * 618034) %/% 1e6)
  while (gcd(step, total) != 1) step = step + 1
  step
}

gcd = function(a, b) {
  while (b != 0) {
    r = a %% b
    a = b
    b = r
  }
  a
}

# The inverse of a modulo m (a coprime to m), by the extended Euclidean algorithm.
mod_inverse = function(a, m) {
  if (m == 1) return(0)
  r0 = m; r1 = a %% m; t0 = 0; t1 = 1
  while (r1 != 0) {
    q = r0 %/% r1
    r = r0 - q * r1; r0 = r1; r1 = r
    t = t0 - q * t1; t0 = t1; t1 = t
  }
  t0 %% m
}

# Fewest (or most) extras a stratum's arc gets in any `len` consecutive batches.
window_hits = function(start, remainder, total, step, len, fewest) {
  full = len %/% total
  rest = len - full * total
  count = full * remainder
  if (remainder == 0 || rest == 0) return(count)
  inverse = mod_inverse(step, total)
  hits = sort(mul_mod(inverse, (start + seq.int(0, remainder - 1)) %% total, total))
  doubled = c(hits, hits + total)
  index = seq_len(remainder)
  inside = if (fewest) {
    findInterval(hits + rest, doubled) - index
  } else {
    findInterval(hits + rest - 1, doubled) - (index - 1)
  }
  count + if (fewest) min(inside) else max(inside)
}

targets_num_batches = function(policy, encoded, sizes, layout) {
  epoch = policy$params$epoch
  if (!is.character(epoch)) return(epoch)
  positive = which(layout$weights > 0)
  batch = policy$params$batch_size
  need = sizes[positive] * layout$total
  per = batch * layout$weights[positive]
  slots = function(s, n, fewest) {
    n * layout$floors[s] + window_hits(layout$starts[s], layout$remainders[s], layout$total,
      layout$step, n, fewest)
  }
  if (epoch == "largest") {
    enough = function(n) all(vapply(positive, function(s)
      n * layout$floors[s] >= sizes[s] || slots(s, n, TRUE) >= sizes[s], TRUE))
    return(smallest_true(enough, max(-((-need) %/% per))))
  }
  fits = function(n) all(vapply(positive, function(s)
    n * (layout$floors[s] + 1) <= sizes[s] || slots(s, n, FALSE) <= sizes[s], TRUE))
  n_batches = largest_true(fits, min(need %/% per))
  if (n_batches == 0) {
    s = positive[which.min(need / per)]
    abort_value("epoch", sprintf(paste0("epoch='smallest' leaves no batch: stratum %s has %s ",
      "rows, fewer than one batch of batch_size=%s takes from it. Lower batch_size, or use ",
      "epoch='largest' (small strata recycled)."), stratum_label(encoded, s),
      format(sizes[s], scientific = FALSE), show_value(batch)))
  }
  n_batches
}

smallest_true = function(predicate, lowest) {
  if (predicate(lowest)) return(lowest)
  good = max(2 * lowest, lowest + 1)
  bad = lowest
  while (!predicate(good)) {
    bad = good
    good = 2 * good
  }
  while (good - bad > 1) {
    middle = (good + bad) %/% 2
    if (predicate(middle)) good = middle else bad = middle
  }
  good
}

largest_true = function(predicate, highest) {
  if (highest <= 0) return(0)
  if (predicate(highest)) return(highest)
  good = 0
  bad = highest
  while (bad - good > 1) {
    middle = (good + bad) %/% 2
    if (predicate(middle)) good = middle else bad = middle
  }
  good
}

#' @export
policy_allocate.pystratum_policy_downsample = function(policy, encoded, epoch) {
  sizes = as.double(encoded$sizes)
  keep = policy$params$keep
  index = match_keys(names(keep), encoded, "keep")
  kept = sizes
  kept[index] = pmax(1, floor(unlist(keep) * sizes[index] + 0.5))
  inner_encoded = encoded
  inner_encoded$sizes = kept
  base = policy$params$base
  inner = policy_allocate(policy_from_params(base$name, base$params), inner_encoded, epoch)
  pool = if (is.null(inner$pool_sizes)) kept else inner$pool_sizes
  weights = sizes / kept
  if (!is.null(inner$row_weights)) weights = weights * inner$row_weights
  list(cuts = inner$cuts, row_weights = weights, pool_sizes = pool)
}

policy_may_recycle = function(policy) {
  switch(policy$name, targets = TRUE,
    downsample = policy_may_recycle(policy$params$base), FALSE)
}

# The draws of a sampling policy's epoch, in draw order (the twin of
# pystratum._assemble.stratum_draws): every stratum that serves rows, in order
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

# What an epoch draws: list(sizes, takes), one draw of `takes[i]` distinct
# values of 1..sizes[i] each (draw_group()): stratum by stratum for sampling
# policies (by_stratum), else one permutation of all rows.
epoch_draw_group = function(allocation, encoded, by_stratum) {
  if (!by_stratum) {
    return(list(sizes = encoded$n_rows, takes = encoded$n_rows))
  }
  stratum_draws(allocation, encoded)[c("sizes", "takes")]
}

# The same for epoch `epoch` of `policy` (an epoch skipped over).
skipped_epoch_draw_group = function(policy, encoded, epoch, by_stratum) {
  if (!by_stratum) {
    return(epoch_draw_group(NULL, encoded, FALSE))
  }
  epoch_draw_group(suppressWarnings(checked_allocation(policy, encoded, epoch),
    classes = "pystratum_stratum_too_small"), encoded, TRUE)
}

# The groups of draws of epochs 0..epoch - 1 of `policy` (what reaching
# `epoch` of a fresh stream draws), priced and refused when unaffordable
# (epoch_skip_groups()): one permutation each, or the sampling policies'
# draws of every skipped epoch.
skipped_epoch_groups = function(policy, encoded, epoch, rng, by_stratum) {
  epoch_skip_groups(epoch, rng, encoded$n_rows,
    if (by_stratum) function(k) skipped_epoch_draw_group(policy, encoded, k, TRUE))
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
# Mirrors pystratum._assemble.assemble_by_stratum.
# With row_weights, the result carries attr(, "weights") (with_row_weights()).
assemble_epoch = function(encoded, allocation, draws, by_stratum = FALSE) {
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

# Whether an epoch of `policy` is assembled stratum by stratum (Targets,
# Downsample: any policy that may recycle or has pools).
assembles_by_stratum = function(policy, allocation) {
  policy_may_recycle(policy) || !is.null(allocation$pool_sizes)
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

# An epoch's draws from a stream (a function(n, size) giving the next
# `size` distinct values of 1..n in random order, see permutation_stream()),
# one per entry of `group` (epoch_draw_group()).
draw_group = function(draw, group) {
  unname(Map(draw, group$sizes, group$takes))
}
