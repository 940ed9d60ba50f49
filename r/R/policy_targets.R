# Targets, policy_targets(): the twin of pystratum/policies/_targets.py.
# Exact per-batch shares (the arithmetic is in policy_shares.R), small strata
# recycled. Its help page, ?sampling_policies, also covers
# policy_downsample() (policy_downsample.R).

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
#' base the two multiply. With `shuffle = FALSE` the kept rows are each
#' downsampled stratum's first `k_s` rows in row order, the same every epoch:
#' not a random subset, so `N_s / k_s` estimates the full loss only when the
#' row order is itself random (data shuffled beforehand); use
#' `shuffle = TRUE` for the guarantee.
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
policy_targets = function(shares, batch_size, epoch = "largest", batch_order = NULL) {
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
  new_policy("targets", with_batch_order(list(shares = shares, batch_size = batch_size,
    epoch = epoch), batch_order))
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

check_targets_batch_size = function(batch_size, positive) {
  if (batch_size < positive) {
    abort_value("batch_size", sprintf(paste0("batch_size must be at least the number of ",
      "strata with a positive share (%d), got batch_size=%s: a batch could not hold one row ",
      "of each. Use batch_size >= %d, or give some strata a share of 0."), positive,
      show_value(batch_size), positive))
  }
}

# Small strata are recycled (epoch = "largest" serves every row at least once).
#' @export
policy_may_recycle.pystratum_policy_targets = function(policy) {
  TRUE
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
