# Generated negatives: the twin of pystratum/negatives/.

#' Batches of observed (user, item) pairs with generated negatives
#'
#' The R twin of Python's `pystratum.negatives.NegativePairSampler` with
#' `rng = "R"`: the same arguments give the same batches in both languages
#' (ids are the same 0-based integers; `positive` is 1-based here).
#'
#' Every observed pair appears exactly once per epoch, in the order of the
#' epoch's permutation, `batch_size` pairs per batch (the last batch may be
#' smaller), and every observed pair gets exactly `negatives` (k) generated
#' pairs. A batch with n observed pairs holds the n observed rows first,
#' then the n * k generated rows; the k negatives of observed pair j are
#' rows `n + (j - 1) * k + 1` to `n + j * k`.
#'
#' @section Random streams:
#' * The permutation of epoch `e` (0-based) is the `(e + 1)`-th `sample(P)`
#'   after `set.seed(seed)` (R's default generators: Mersenne-Twister,
#'   Inversion, Rejection).
#' * The negatives of batch `b` (0-based) of epoch `e` come from
#'   `set.seed(s)` with `s = batch_seed(seed, e, b)`:
#'   `x = seed %% M; x = (x * 2^21 + e) %% M; s = (x * 2^21 + b) %% M`,
#'   `M = 2^31 - 1` (exact in doubles; distinct for `e < 1024`, `b < 2^21`).
#'   For the m slots still to fill, in slot order: with
#'   `pair_with = "random"` first `sample.int(num_users, m, replace = TRUE) - 1`,
#'   then the items: `sample.int(num_items, m, replace = TRUE) - 1` for
#'   uniform items, `findInterval(runif(m) * sum(item_weights),
#'   cumsum(item_weights))` for weighted ones. With `reject_observed = TRUE`
#'   the generated pairs that are observed pairs are redrawn the same way,
#'   round after round, at most `max_rounds` rounds in all.
#' * The session's `.Random.seed` is left exactly as it was.
#'
#' Python's sampler draws the same way for `rng = "R"`, weighted items
#' included, so both languages give identical batches.
#'
#' @section Sampling probabilities and weights:
#' `log_q` is the log-probability of a generated pair under the distribution
#' its draw follows after rejection; with item weights `w` (all 1 for
#' uniform items), `W = sum(w)`, `O(u)` the items user u observed and
#' `U = num_users`:
#' * `pair_with = "user"`: `q = w[i] / (W - sum(w[O(u)]))` with rejection
#'   (for uniform items `1 / (num_items - n_observed(u))`), `w[i] / W`
#'   without.
#' * `pair_with = "random"`: `q = w[i] / (U * W - sum over observed pairs of
#'   w[item])` with rejection, `w[i] / (U * W)` without.
#'
#' `weight = 1 / (k * q)`: the sum of `weight * loss` over a pair's k
#' negatives is an unbiased estimate of the loss summed over the population
#' the negatives are drawn from (the user's unobserved items, or all
#' unobserved pairs; every item or pair without rejection). Observed rows
#' have `log_q = 0` and `weight = 1`.
#'
#' @param users,items (`integer()`)\cr
#'   The observed pairs: whole numbers of equal length, 0-based ids
#'   (`users` in `[0, num_users)`, `items` in `[0, num_items)`), no missing
#'   values.
#' @param num_items (`integer(1)`)\cr Number of items.
#' @param negatives (`integer(1)`)\cr k >= 1 generated pairs per observed pair.
#' @param batch_size (`integer(1)`)\cr Observed pairs per batch.
#' @param seed (`integer(1)`)\cr A whole number between -2147483647 and
#'   2147483647, as [set.seed()] takes.
#' @param rng (`character(1)`)\cr Only `"R"`: Python's `"numpy"` and
#'   `"torch"` streams have no R implementation.
#' @param num_users (`NULL` or `integer(1)`)\cr Number of users; `NULL`
#'   means `max(users) + 1`.
#' @param epoch (`integer(1)`)\cr Which epoch, 0 for the first.
#' @param reject_observed (`logical(1)`)\cr `TRUE`: no generated pair is an
#'   observed pair.
#' @param pair_with (`character(1)`)\cr `"user"` keeps the observed pair's
#'   user and draws an item; `"random"` draws both.
#' @param item_weights (`NULL` or `numeric()`)\cr One non-negative weight per
#'   item (not all zero), for popularity-proportional negatives.
#' @param duplicates (`character(1)`)\cr `"error"` or `"drop"` (keep the first
#'   occurrence of each observed pair).
#' @param max_rounds (`integer(1)`)\cr Rejection rounds at most; a
#'   configuration needing more (probability above 1e-6 per epoch) is an
#'   error naming the user.
#'
#' @return A list of data.frames, one per batch, with columns `positive`
#'   (1-based position of the observed pair in `users`/`items`, `NA` on
#'   generated rows), `user`, `item`, `label` (1 observed, 0 generated),
#'   `log_q` and `weight`.
#'
#' @section Errors:
#' Conditions of class `pystratum_type_error` / `pystratum_value_error`
#' naming the argument in `$argument`, with the messages of the Python
#' sampler.
#'
#' @export
#' @examples
#' users = c(0, 0, 1, 2, 2, 3)
#' items = c(1, 4, 2, 0, 3, 4)
#' batches = negative_pair_batches(users, items, num_items = 5, negatives = 2,
#'   batch_size = 4, seed = 1)
#' batches[[1]]
negative_pair_batches = function(users, items, num_items, negatives, batch_size, seed,
  rng = "R", num_users = NULL, epoch = 0L, reject_observed = TRUE,
  pair_with = c("user", "random"), item_weights = NULL, duplicates = c("error", "drop"),
  max_rounds = 100L) {
  # Scalars first, in the Python sampler's order, then the O(P) arrays.
  num_items = assert_whole_number(num_items, "num_items", minimum = 1)
  k = assert_whole_number(negatives, "negatives", minimum = 1, maximum = SIZE_MAX, fix = paste0(
    "Each observed pair needs at least one generated negative; without negatives use an ",
    "ordinary shuffled batch sampler."))
  batch_size = assert_whole_number(batch_size, "batch_size", minimum = 1, maximum = SIZE_MAX)
  if (!is.null(num_users)) {
    num_users = assert_whole_number(num_users, "num_users", minimum = 1)
  }
  rng = assert_choice(rng, "rng", "R")
  reject_observed = assert_flag(reject_observed, "reject_observed")
  pair_with = if (missing(pair_with)) "user" else
    assert_choice(pair_with, "pair_with", c("user", "random"))
  duplicates = if (missing(duplicates)) "error" else
    assert_choice(duplicates, "duplicates", c("error", "drop"))
  max_rounds = assert_whole_number(max_rounds, "max_rounds", minimum = 1)
  epoch = assert_epoch(epoch)
  if (missing(seed) || is.null(seed)) {
    abort_value("seed", paste0(
      "seed must be a whole number: the same seed gives the same batches as Python's ",
      "NegativePairSampler(rng='R'). Pass seed=<whole number>."))
  }
  seed = assert_seed(seed, "R")

  users = assert_ids(users, "users")
  items = assert_ids(items, "items")
  if (length(users) != length(items)) {
    abort_value("users", sprintf(paste0(
      "users and items must have the same length (one entry per observed pair), got ",
      "len(users)=%d and len(items)=%d."), length(users), length(items)))
  }
  if (length(users) == 0L) {
    abort_value("users", "users and items are empty: pass at least one observed pair.")
  }
  assert_ids_below(items, "items", num_items, "num_items")
  if (is.null(num_users)) {
    num_users = max(users) + 1
  } else {
    assert_ids_below(users, "users", num_users, "num_users")
  }
  for (name in c("num_items", "num_users")) {
    value = if (name == "num_items") num_items else num_users
    if (value > R_SAMPLE_MAX) {
      abort_value(name, sprintf(paste0("%s must be at most 4.5e15 with rng='R' (R's ",
        "sample.int draws from at most 4.5e15 values), got %s=%s. Remap ids to a smaller ",
        "range."), name, name, show_value(value)))
    }
  }
  if (num_users * num_items > 2^53) {
    abort_value("num_items", sprintf(paste0(
      "num_users * num_items must be at most 2^53 (pairs are keyed as user * num_items + item ",
      "in doubles), got num_users=%s, num_items=%s. Remap ids to a smaller range."),
      show_value(num_users), show_value(num_items)))
  }
  weights = assert_item_weights(item_weights, num_items)

  keys = users * num_items + items
  kept = seq_along(keys)
  duplicated_keys = duplicated(keys)
  if (any(duplicated_keys)) {
    if (duplicates == "error") {
      position = which(duplicated_keys)[1L]
      earlier = match(keys[position], keys)
      abort_value("users", sprintf(paste0(
        "users/items hold %d duplicate observed pair(s): e.g. position %d repeats (user %s, ",
        "item %s) of position %d. Pass duplicates='drop' to keep the first occurrence of each ",
        "pair, or deduplicate the data."), sum(duplicated_keys), position - 1L,
        format(users[position], scientific = FALSE), format(items[position], scientific = FALSE),
        earlier - 1L))
    }
    kept = which(!duplicated_keys)
    users = users[kept]
    items = items[kept]
    keys = keys[kept]
  }
  n_pairs = length(keys)
  # A batch, and the epoch this function returns, bounded by the input before
  # any draw (the Python sampler's rule and words).
  count = function(x) format(x, big.mark = ",", scientific = FALSE, trim = TRUE)
  pairs = min(batch_size, n_pairs)
  check_served_size(pairs * (1 + k), 0, n_pairs, "negatives", k, sprintf(
    "batches of %s observed pair(s) with %s negative(s) each", count(pairs), count(k)),
    "Lower negatives or batch_size.")
  check_served_size(n_pairs * (1 + k), 0, n_pairs, "negatives", k, sprintf(
    "an epoch of %s observed pair(s) with %s negative(s) each", count(n_pairs), count(k)),
    "Lower negatives.")
  probabilities = negative_probabilities(users, items, num_users, num_items, k, weights,
    reject_observed, pair_with, max_rounds)

  permutation = epoch_permutation(n_pairs, TRUE, "R", seed, epoch)
  starts = seq(1, n_pairs, by = batch_size)
  lapply(seq_along(starts) - 1L, function(b) {
    chosen = permutation[seq(starts[b + 1L], min(n_pairs, starts[b + 1L] + batch_size - 1))]
    draws = with_seed(batch_seed(seed, epoch, b), draw_negatives(
      users[chosen], k, num_users, num_items, keys, weights, probabilities, reject_observed,
      pair_with, max_rounds, epoch, b))
    n = length(chosen)
    m = n * k
    data.frame(
      positive = c(kept[chosen], rep(NA_integer_, m)),
      user = id_vector(c(users[chosen], draws$user)),
      item = id_vector(c(items[chosen], draws$item)),
      label = rep(c(1L, 0L), c(n, m)),
      log_q = c(numeric(n), draws$log_q),
      weight = c(rep(1, n), exp(-draws$log_q) / k)
    )
  })
}

# R's sample.int(n, ...) refuses n above this (its longest vector).
R_SAMPLE_MAX = 4.5e15

# The set.seed() value of batch `batch` of epoch `epoch`; Python's
# pystratum.negatives.batch_seed computes the same integer.
batch_seed = function(seed, epoch, batch) {
  modulus = 2147483647
  x = seed %% modulus
  x = (x * 2097152 + epoch) %% modulus
  (x * 2097152 + batch) %% modulus
}

# Evaluates `code` right after set.seed(seed) on a private stream; the
# session's .Random.seed is put back afterwards.
with_seed = function(seed, code) {
  restore = stash_random_seed()
  on.exit(restore())
  set.seed(as.integer(seed), kind = "Mersenne-Twister", normal.kind = "Inversion",
    sample.kind = "Rejection")
  force(code)
}

id_vector = function(x) {
  if (length(x) && max(x) <= .Machine$integer.max) as.integer(x) else x
}

draw_negatives = function(pos_users, k, num_users, num_items, keys, weights, probabilities,
  reject_observed, pair_with, max_rounds, epoch, batch) {
  draw_users = function(m) sample.int(num_users, m, replace = TRUE) - 1
  draw_items = if (is.null(weights)) {
    function(m) sample.int(num_items, m, replace = TRUE) - 1
  } else {
    function(m) findInterval(runif(m) * probabilities$total, probabilities$cumulative)
  }
  m = length(pos_users) * k
  if (pair_with == "user") {
    user = rep(pos_users, each = k)
  } else {
    user = draw_users(m)
  }
  item = draw_items(m)
  if (reject_observed) {
    pending = which((user * num_items + item) %in% keys)
    rounds = 1
    while (length(pending)) {
      if (rounds >= max_rounds) {
        abort_value("max_rounds", sprintf(paste0(
          "user %s: %d negative(s) of batch %d of epoch %d were still observed pairs after ",
          "max_rounds=%s rejection rounds (user %s has observed nearly every item). Raise ",
          "max_rounds, set reject_observed=False, or drop that user's pairs."),
          format(user[pending[1L]], scientific = FALSE), length(pending), batch, epoch,
          show_value(max_rounds), format(user[pending[1L]], scientific = FALSE)))
      }
      if (pair_with == "random") {
        user[pending] = draw_users(length(pending))
      }
      item[pending] = draw_items(length(pending))
      again = (user[pending] * num_items + item[pending]) %in% keys
      pending = pending[again]
      rounds = rounds + 1
    }
  }
  log_w = if (is.null(weights)) 0 else probabilities$log_weights[item + 1]
  log_q = if (pair_with == "user") {
    log_w - probabilities$log_free[user + 1]
  } else {
    log_w - probabilities$log_free + numeric(m)
  }
  list(user = user, item = item, log_q = log_q)
}

# log of the normaliser of q (per user for "user", one number for "random"),
# and the up-front checks that rejection can succeed within max_rounds.
negative_probabilities = function(users, items, num_users, num_items, k, weights,
  reject_observed, pair_with, max_rounds) {
  # Per-user tables span the users that have pairs (max(users) + 1), not
  # num_users: what the input can use, however large num_users is.
  seen_users = max(users) + 1
  n_observed = tabulate(users + 1, nbins = seen_users)
  if (is.null(weights)) {
    total = num_items
    observed_weight = as.double(n_observed)
    cumulative = NULL
    log_weights = NULL
  } else {
    cumulative = cumsum(weights)
    total = cumulative[length(cumulative)]
    observed_weight = numeric(seen_users)
    sums = rowsum(weights[items + 1], users, reorder = FALSE)
    observed_weight[as.numeric(rownames(sums)) + 1] = sums[, 1L]
    log_weights = log(weights)
  }
  n_pairs = length(users)
  if (pair_with == "user") {
    free = if (reject_observed) total - observed_weight else rep(total, seen_users)
    if (reject_observed) {
      check_user_acceptance(n_observed, free / total, k, num_items, max_rounds, !is.null(weights))
    }
    log_free = suppressWarnings(log(free))
  } else {
    pair_weight_total = sum(observed_weight)
    free = num_users * total - (if (reject_observed) pair_weight_total else 0)
    if (reject_observed) {
      acceptance = free / (num_users * total)
      if (!(acceptance > 0)) {
        abort_value("users", sprintf(paste0(
          "every (user, item) pair of positive weight is observed (num_users=%s, ",
          "num_items=%s), so pair_with='random' has no unobserved pair to draw. Set ",
          "reject_observed=False, or add users/items."), show_value(num_users),
          show_value(num_items)))
      }
      check_rounds(k * n_pairs * (1 - acceptance)^max_rounds, sprintf(
        "the observed pairs cover %.4f%% of the proposal's mass", 100 * (1 - acceptance)),
        acceptance, k * n_pairs, max_rounds)
    }
    log_free = log(free)
  }
  list(total = total, cumulative = cumulative, log_weights = log_weights, log_free = log_free)
}

check_user_acceptance = function(n_observed, acceptance, k, num_items, max_rounds, weighted) {
  users = which(n_observed > 0)
  acc = acceptance[users]
  dead = users[!(acc > 0)]
  if (length(dead)) {
    user = dead[1L]
    abort_value("users", sprintf(paste0(
      "user %s has observed %s (%d of num_items=%s), so it has no unobserved item to draw as ",
      "a negative (%d such user(s)). Drop its pairs from users/items, set ",
      "reject_observed=False, or use pair_with='random'."), format(user - 1, scientific = FALSE),
      if (weighted) "every item of positive item_weights" else "every item",
      n_observed[user], show_value(num_items), length(dead)))
  }
  failing = k * n_observed[users] * (1 - acc)^max_rounds
  if (sum(failing) > 1e-6) {
    worst = which.max(failing)
    user = users[worst]
    check_rounds(sum(failing), sprintf(
      "user %s has observed %d of num_items=%s items (acceptance %.4f%%)",
      format(user - 1, scientific = FALSE), n_observed[user], show_value(num_items),
      100 * acc[worst]), acc[worst], k * n_observed[user], max_rounds)
  }
}

check_rounds = function(expected_failures, who, acceptance, slots, max_rounds) {
  if (expected_failures <= 1e-6) {
    return(invisible(NULL))
  }
  needed = ceiling(log(1e-6 / max(slots, 1)) / log1p(-acceptance))
  abort_value("max_rounds", sprintf(paste0(
    "%s: drawing its negatives by rejection would exceed max_rounds=%s rounds for about %s ",
    "negatives per epoch. Raise max_rounds to at least %s, set reject_observed=False, or drop ",
    "the users who observed (nearly) every item."), who, show_value(max_rounds),
    format(signif(expected_failures, 3)), format(needed, scientific = FALSE)))
}

# 0-based ids: whole numbers >= 0 without missing values, returned as doubles.
assert_ids = function(x, name) {
  if (is.data.frame(x) || is.list(x) || !(is.integer(x) || is.double(x)) || is.factor(x)) {
    abort_type(name, sprintf(
      "%s must hold integer ids, got %s=%s of type %s. Map ids to integers 0..n-1 first.",
      name, name, show_value(x), type_name(x)))
  }
  missing = which(is.na(x) & !is.nan(x))
  nan = which(is.nan(x))
  if (length(nan)) {
    abort_value(name, sprintf(paste0(
      "%s must not hold NaN, got %s[%d]=nan (%d NaN value(s)). Drop the pairs with a missing ",
      "id."), name, name, nan[1L] - 1L, length(nan)))
  }
  if (length(missing)) {
    abort_value(name, sprintf(paste0(
      "%s must not hold missing values, got %s[%d]=NA. Drop the pairs with a missing id."),
      name, name, missing[1L] - 1L))
  }
  x = as.double(x)
  bad = which(!is.finite(x) | x != trunc(x))
  if (length(bad)) {
    abort_type(name, sprintf(
      "%s must hold whole-number ids, got %s[%d]=%s. Map ids to integers 0..n-1 first.",
      name, name, bad[1L] - 1L, format(x[bad[1L]])))
  }
  negative = which(x < 0)
  if (length(negative)) {
    abort_value(name, sprintf(paste0(
      "%s must hold ids >= 0 (0-based), got %s[%d]=%s. Map ids to 0..n-1 first (e.g. ",
      "match(x, unique(x)) - 1)."), name, name, negative[1L] - 1L,
      format(x[negative[1L]], scientific = FALSE)))
  }
  x
}

assert_ids_below = function(x, name, upper, upper_name) {
  high = max(x)
  if (high >= upper) {
    position = which(x >= upper)[1L]
    abort_value(name, sprintf(paste0(
      "%s must hold ids in [0, %s=%s), got %s[%d]=%s. Ids are 0-based: pass %s=%s (or more), ",
      "or remap the ids."), name, upper_name, show_value(upper), name, position - 1L,
      format(x[position], scientific = FALSE), upper_name, format(high + 1, scientific = FALSE)))
  }
  invisible(x)
}

assert_item_weights = function(item_weights, num_items) {
  if (is.null(item_weights)) {
    return(NULL)
  }
  if (!(is.integer(item_weights) || is.double(item_weights)) || is.object(item_weights)) {
    abort_type("item_weights", sprintf(paste0(
      "item_weights must be numbers (one non-negative weight per item), got item_weights=%s ",
      "of type %s."), show_value(item_weights), type_name(item_weights)))
  }
  if (length(item_weights) != num_items) {
    abort_value("item_weights", sprintf(paste0(
      "item_weights must hold one weight per item (length num_items=%s), got length %d. Pass ",
      "a vector indexed by item id + 1."), show_value(num_items), length(item_weights)))
  }
  weights = as.double(item_weights)
  bad = which(is.na(weights) | !is.finite(weights) | weights < 0)
  if (length(bad)) {
    abort_value("item_weights", sprintf(paste0(
      "item_weights must be finite and >= 0, got item_weights[%d]=%s. Clip or fix the ",
      "weights (e.g. popularity^0.75)."), bad[1L] - 1L, format(weights[bad[1L]])))
  }
  if (!(sum(weights) > 0)) {
    abort_value("item_weights", paste0(
      "item_weights are all zero: no item could be drawn. Give at least one item a positive ",
      "weight, or pass item_weights=NULL for uniform items."))
  }
  weights
}
