# The epoch-jump guard prices the draws an epoch really makes (issue 18, item 3):
# a sampling policy's epoch draws pass 0 of every stratum plus one draw per
# extra pass of a recycled stratum, and each call has its own overhead. Not
# timed: refusals come before any draw, and the price is compared with the
# draws a stream is really asked for (counted by wrapping it).

recycled = rep(c("a", "b"), c(20000, 1))
recycling = policy_targets(c(a = 0.5, b = 0.5), 2)

test_that("jumps over epochs recycling a one-row stratum are refused before drawing", {
  for (epoch in c(5, 1000, 5000, 2^31 - 1)) {
    error = expect_pystratum_error(stratified_batches(recycled, recycling, seed = 3,
      epoch = epoch), "value_error", "epoch", sprintf(paste0("^epoch=%s with rng='R' means ",
      "drawing the %s earlier epoch\\(s\\) of these 20,001 rows first"),
      format(epoch, scientific = FALSE), format(epoch, big.mark = ",", scientific = FALSE)))
    expect_match(conditionMessage(error), "rng='index'", fixed = TRUE)
    expect_match(conditionMessage(error), "keep one sampler and walk the epochs in order",
      fixed = TRUE)
  }
  error = expect_pystratum_error(stratified_batches(recycled, recycling, seed = 3, epoch = 5),
    "value_error", "epoch")
  # Priced epoch by epoch until past the limit: 3 epochs of 20,001 calls each.
  expect_match(conditionMessage(error),
    "at least 60,003 draw(s) of at least 120,000 rows, a cost of at least 120,126,000", fixed = TRUE)
})

test_that("the torch stream is priced by the same rule (nothing is drawn to refuse)", {
  encoded = pystratum:::encode_strata(recycled)
  price = pystratum:::epoch_skip_cost(5, "torch", encoded$n_rows, function(k)
    pystratum:::skipped_epoch_draw_group(recycling, encoded, k, TRUE))
  expect_null(price$groups)
  expect_identical(c(price$calls, price$rows), c(60003, 120000))
})

test_that("many epochs of few rows are refused for their calls", {
  y = rep(c("a", "b"), 10)
  error = expect_pystratum_error(stratified_batches(y, 1, seed = 1, epoch = 99999),
    "value_error", "epoch", "^epoch=99999 with rng='R'")
  expect_match(conditionMessage(error),
    "99,999 draw(s) of 1,999,980 rows, a cost of 201,997,980 row draws", fixed = TRUE)
  # Cheap jumps pass: 40,000 epochs of 20 rows cost 80,800,000 row draws.
  price = pystratum:::epoch_skip_cost(40000, "R", 20)
  expect_identical(price$cost, 40000 * 2020)
  expect_length(price$groups, 40000)
  expect_length(stratified_batches(y, 1, seed = 1, epoch = 3), 10L)
})

test_that("negative_pair_batches prices its epoch jumps by the same rule", {
  expect_pystratum_error(negative_pair_batches(0:19, 0:19, num_items = 20, negatives = 1,
    batch_size = 5, seed = 1, epoch = 99999), "value_error", "epoch",
    "^epoch=99999 with rng='R' means drawing the 99,999 earlier epoch")
})

# A torch backend that only records the sizes torch_randperm() is asked for.
counting_backend = function(log) {
  list(
    randperm = function(n) {
      log$sizes = c(log$sizes, n)
      sample.int(n)
    },
    get_state = function() NULL,
    set_state = function(state) NULL,
    local_manual_seed = function(seed, envir) NULL
  )
}

test_that("the price is the draws the sampler's stream makes, over random configurations", {
  set.seed(20261125)
  policies = list(policy_min_per_stratum(2), policy_fixed_size(30),
    policy_targets("balanced", 6), policy_targets(c(a = 0.2, b = 0.3, c = 0.5), 10, epoch = 3),
    policy_targets("balanced", 4, epoch = "smallest"), policy_downsample(c(a = 0.5), 3),
    policy_downsample(c(a = 0.4, c = 0.5), policy_targets("balanced", 5)))
  tried = 0L
  for (case in seq_len(40)) {
    sizes = sample(2:40, 3, replace = TRUE)
    y = sample(rep(c("a", "b", "c"), sizes))
    policy = policies[[sample.int(length(policies), 1L)]]
    epoch = sample(0:6, 1L)
    encoded = pystratum:::encode_strata(y)
    by_stratum = pystratum:::assembles_by_stratum(policy,
      suppressWarnings(pystratum:::checked_allocation(policy, encoded, 0)))
    price = pystratum:::epoch_skip_cost(epoch, "torch", encoded$n_rows,
      if (by_stratum) function(k) pystratum:::skipped_epoch_draw_group(policy, encoded, k, TRUE))
    log = new.env()
    log$sizes = numeric(0)
    epochs = suppressWarnings(pystratum:::stratified_epochs(y, policy, seed = 7, rng = "torch",
      torch_backend = counting_backend(log), allow_single_batch = TRUE))
    for (k in seq_len(epoch)) suppressWarnings(epochs$next_epoch())
    expect_identical(c(length(log$sizes), sum(log$sizes)), c(price$calls, price$rows))
    expect_identical(price$cost, price$rows + 2000 * price$calls)
    tried = tried + 1L
  }
  expect_identical(tried, 40L)
})

# Served epochs are priced by the same model (issue 30, item 1): each repeat draw
# (a recycled stratum's pass after its first, a slot refill after a stratum's first)
# counts its rows plus CALL_COST; past EPOCH_COST_MAX the epoch is refused before
# any draw, naming the policy, in every rng.
test_that("an epoch recycling one-row strata pass after pass is refused for its calls", {
  policy = policy_targets("balanced", 2, epoch = 60000)
  for (rng in c("R", "index")) {
    error = expect_pystratum_error(stratified_batches(c(0, 1), policy, seed = 1, rng = rng),
      "value_error", "policy", paste0("^policy=targets\\(shares = 'balanced', batch_size = 2, ",
        "epoch = 60000\\) makes an epoch of 60,000 batches: 119,998 draw\\(s\\) beyond the ",
        "first of each stratum"))
    expect_match(conditionMessage(error),
      "a cost of 240,115,998 row draws (each draw counts its rows plus 2,000", fixed = TRUE)
    expect_match(conditionMessage(error), "Serve fewer rows of the smallest strata", fixed = TRUE)
  }
  # Within the price: 1 + 8,000 rows, 7,999 extra passes of the one-row stratum.
  y = c(0, rep(1, 8000))
  batches = stratified_batches(y, policy_targets(c("0" = 0.5, "1" = 0.5), 2), seed = 1)
  expect_length(batches, 8000L)
})

test_that("recycled passes of a large epoch are priced by the rows it serves", {
  # policy_targets(c("0" = .5, "1" = .5), 256) on 10^8 rows with a 3% stratum: 757,813
  # batches, a second pass of the 97% stratum and 32 more of the 3%: 193,066,000 row
  # draws for 194,000,128 rows served. Linear in the epoch: within 10^8 plus the rows
  # served (refused by a fixed 10^8). The allocation only, from the O(strata) fields it
  # reads (codes: the first row of each stratum): no plan built.
  encoded = list(sizes = c(97e6, 3e6), codes = c(1L, 2L), columns = list(strata = c(0, 1)),
    n_rows = 1e8)
  policy = policy_targets(c("0" = 0.5, "1" = 0.5), 256)
  allocation = pystratum:::policy_allocate(policy, encoded, 0)
  cuts = allocation$cuts
  expect_identical(ncol(cuts) - 1L, 757813L)
  expect_identical(cuts[, ncol(cuts)], c(97000064, 97000064))
  expect_identical(ceiling(cuts[, ncol(cuts)] / encoded$sizes), c(2, 33))
  expect_null(pystratum:::check_recycled_passes(policy, allocation, encoded))
})

test_that("the repeat draws' limit is the fixed limit plus the rows the epoch serves", {
  # 970 + 30 rows, balanced batches of 256: 8 batches serve 2,048 rows; a second pass of
  # the large stratum and 34 more of the small cost 1,990 rows + 35 calls = 71,990 row
  # draws. With the fixed part at 71,990 - 2,048 the epoch is served, one less refused
  # (Python: test_repeat_draws_limit_is_the_fixed_limit_plus_the_rows_served).
  y = rep(c(0, 1), c(970, 30))
  policy = policy_targets(c("0" = 0.5, "1" = 0.5), 256)
  # EPOCH_COST_MAX set for one test (testthat 3.1.6 has no local_mocked_bindings).
  namespace = environment(stratified_batches)
  set_cost_max = function(value) {
    locked = bindingIsLocked("EPOCH_COST_MAX", namespace)
    if (locked) unlockBinding("EPOCH_COST_MAX", namespace)
    assign("EPOCH_COST_MAX", value, envir = namespace)
    if (locked) lockBinding("EPOCH_COST_MAX", namespace)
  }
  withr::defer(set_cost_max(1e8))
  for (rng in c("R", "index")) {
    set_cost_max(71990 - 2048)
    batches = stratified_batches(y, policy, seed = 3, rng = rng)
    expect_length(batches, 8L)
    expect_identical(sum(lengths(batches)), 2048L)
    set_cost_max(71990 - 2048 - 1)
    error = expect_pystratum_error(stratified_batches(y, policy, seed = 3, rng = rng),
      "value_error", "policy", paste0("^policy=targets\\(shares = .* makes an epoch of 8 ",
        "batches: 35 draw\\(s\\) beyond the first of each stratum"))
    expect_match(conditionMessage(error), paste0("a cost of 71,990 row draws (each draw ",
      "counts its rows plus 2,000 for the call), over the limit of 69,941 plus the 2,048 ",
      "rows the epoch serves (71,989). Serve fewer rows"), fixed = TRUE)
  }
})

test_that("small classes' refills are priced, and served under one save of the RNG", {
  error = expect_pystratum_error(stratified_batches(c(0, 1, 2),
    policy_classes_per_batch(2, 10^6, small = "repeat"), seed = 1), "value_error", "policy",
    "^policy=classes_per_batch\\(classes_per_batch = 2, per_class = 1000000")
  expect_match(conditionMessage(error), paste0("3,999,994 draw(s) beyond the first of each ",
    "stratum (recycled passes or refills) of 3,999,994 rows, a cost of 8,003,987,994"),
    fixed = TRUE)
  # 39,994 one-row refills: one save and restore of the caller's RNG for the whole group
  # (it was one per draw: 16 s). Counted, not timed.
  counter = new.env()
  counter$n = 0L
  namespace = environment(stratified_batches)
  suppressMessages(trace("stash_random_seed", tracer = function() counter$n = counter$n + 1L,
    print = FALSE, where = namespace))
  withr::defer(suppressMessages(untrace("stash_random_seed", where = namespace)))
  batches = stratified_batches(c(0, 1, 2), policy_classes_per_batch(2, 10^4, small = "repeat"),
    seed = 1)
  expect_length(batches, 2L)
  expect_true(all(lengths(batches) == 2 * 10^4))
  expect_lte(counter$n, 2L)
})
