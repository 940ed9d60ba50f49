# Shard-blocked orders (R/shards.R, docs/SHARDS.md): the same per-batch
# counts as without shards, each row once, every drawn sequence stably sorted
# by the block of its rows' shards, and hostile shard arguments refused.

# Rows of `strata` in shards of random sizes (some empty), as ids and sizes.
random_shards = function(n, n_shards) {
  cuts = sort(sample.int(n + 1L, n_shards - 1L, replace = TRUE) - 1L)
  sizes = diff(c(0L, cuts, n))
  list(sizes = sizes, ids = rep.int(seq_along(sizes) - 1L, sizes))
}

# Per batch, the rows of each stratum (a batches x strata table).
batch_counts = function(batches, strata) {
  key = factor(strata_key(strata))
  t(vapply(batches, function(b) as.vector(table(key[b])), numeric(nlevels(key))))
}

# The blocks of every shard for a 1-based shard permutation and window W.
blocks_of = function(permutation, window) {
  block = integer(length(permutation))
  block[permutation] = (seq_along(permutation) - 1L) %/% window
  block
}

sharded_policies = list(
  min_per_stratum = policy_min_per_stratum(3),
  fixed_size = policy_fixed_size(16),
  targets = policy_targets(c(a = 0.25, b = 0.25, c = 0.5), 12),
  downsample = policy_downsample(c(c = 0.5), policy_min_per_stratum(2)),
  classes_per_batch = policy_classes_per_batch(2, 4),
  classes_repeat = policy_classes_per_batch(2, 4, small = "repeat")
)

test_that("every policy keeps its per-batch counts, weights and rows with shards", {
  for (seed in 1:6) {
    set.seed(seed)
    n = 40L + seed * 7L
    y = sample(c("a", "b", "c"), n, replace = TRUE, prob = c(0.2, 0.3, 0.5))
    y[1:9] = rep(c("a", "b", "c"), 3)
    shards = random_shards(n, 1L + seed)
    for (name in names(sharded_policies)) {
      policy = sharded_policies[[name]]
      for (window in c(1, 2, 100)) {
        for (epoch in c(0, 2)) {
          plain = stratified_batches(y, policy, seed = seed, epoch = epoch)
          for (form in list(shards$ids * 3L + 5L, shard_sizes(shards$sizes))) {
            sharded = stratified_batches(y, policy, seed = seed, epoch = epoch,
              shards = form, window = window)
            label = sprintf("%s seed %d W %d epoch %d", name, seed, window, epoch)
            expect_identical(lengths(sharded), lengths(plain), info = label)
            if (inherits(policy, "pystratum_policy_classes_per_batch")) {
              # The layout is drawn after the shards: each batch still holds P
              # strata of K rows each, not necessarily the same ones.
              expect_identical(t(apply(batch_counts(sharded, y), 1L, sort)),
                t(apply(batch_counts(plain, y), 1L, sort)), info = label)
            } else {
              expect_identical(batch_counts(sharded, y), batch_counts(plain, y), info = label)
            }
            rows = unlist(sharded)
            if (name %in% c("min_per_stratum", "fixed_size")) {
              expect_identical(sort(rows), seq_len(n), info = label)
            }
            if (name == "classes_per_batch") {  # every row at least once, slots topped up
              expect_setequal(rows, seq_len(n))
            }
            if (name == "downsample") {
              expect_false(anyDuplicated(rows) > 0, info = label)
              # Each stratum's weight, read off the plan without shards.
              weight = unlist(attr(plain, "weights"))[match(c("a", "b", "c"), y[unlist(plain)])]
              expect_identical(attr(sharded, "weights"),
                lapply(sharded, function(b) weight[match(y[b], c("a", "b", "c"))]), info = label)
            }
          }
        }
      }
    }
  }
})

test_that("the epoch is R's stream: sample.int(H) first, the permutation stably sorted by block", {
  m = 2
  for (seed in 1:8) {
    set.seed(100 + seed)
    n = 30L + 5L * seed
    y = sample(c("x", "y", "z"), n, replace = TRUE)
    y[1:6] = c("x", "y", "z", "x", "y", "z")
    shards = random_shards(n, 2L + seed %% 5L)
    n_shards = length(shards$sizes)
    shard_of_row = shards$ids + 1L
    for (window in c(1, 2, n_shards)) {
      for (epoch in c(0, 2)) {
        set.seed(seed)
        for (k in seq_len(epoch)) {
          sample.int(n_shards)
          sample.int(n)
        }
        block = blocks_of(sample.int(n_shards), window)
        permutation = sample.int(n)
        # order() is stable: rows keep their drawn order inside a block.
        sorted = permutation[order(block[shard_of_row[permutation]])]
        expected = reference_batches(y, sorted, m)
        got = stratified_batches(y, m, seed = seed, epoch = epoch,
          shards = shard_sizes(shards$sizes), window = window)
        expect_identical(got, expected, info = sprintf("seed %d W %d epoch %d", seed, window,
          epoch))
      }
    }
  }
})

test_that("sampling policies sort pass 0 by its rows and extra passes by the pool rows", {
  # One stratum recycled (Targets): pass 0 draws the whole stratum, each extra
  # pass indexes the pool. Rebuilt by hand from R's stream.
  y = rep(c("a", "b"), c(24, 6))
  shard_ids = rep(c(3, 1, 4, 1, 5, 9), each = 5)  # non-contiguous, repeated ids
  shard_of_row = match(shard_ids, sort(unique(shard_ids)))
  policy = policy_targets(c(a = 0.5, b = 0.5), 8)
  for (window in c(1, 2)) {
    set.seed(11)
    block = blocks_of(sample.int(5), window)
    row_block = block[shard_of_row]
    rows_a = which(y == "a")
    rows_b = which(y == "b")
    pass_a = sample.int(24, 24)
    pool_a = rows_a[pass_a[order(row_block[rows_a[pass_a]])]]
    pass_b = sample.int(6, 6)
    pool_b = rows_b[pass_b[order(row_block[rows_b[pass_b]])]]
    # b serves 24 ranks of its 6 rows: pass 0, then 3 extra passes of the pool.
    extra = lapply(1:3, function(pass) {
      picks = sample.int(6, 6)
      pool_b[picks[order(row_block[pool_b[picks]])]]
    })
    sequence_b = c(pool_b, unlist(extra))
    got = stratified_batches(y, policy, seed = 11, shards = shard_ids, window = window)
    expect_identical(unlist(lapply(got, function(b) b[y[b] == "a"])), pool_a)
    expect_identical(unlist(lapply(got, function(b) b[y[b] == "b"])), sequence_b)
  }
})

test_that("ClassesPerBatch sorts the permutation and each refill, and deals slots in order", {
  y = rep(c("a", "b", "c"), c(10, 7, 5))
  shard_ids = rep(c(20, 10, 30), c(8, 7, 7))
  shard_of_row = match(shard_ids, c(10, 20, 30))
  policy = policy_classes_per_batch(2, 4)
  got = stratified_batches(y, policy, seed = 4, shards = shard_ids)
  encoded = pystratum:::encode_strata(y)
  slots = pystratum:::policy_allocate(policy, encoded, 0)$slots
  expect_true(length(slots$refill_strata) > 0)
  set.seed(4)
  block = blocks_of(sample.int(3), 1)
  row_block = block[shard_of_row]
  permutation = sample.int(22)
  sorted = permutation[order(row_block[permutation])]
  layout = sample.int(3)
  # A refill picks pass-0 ranks of its stratum (its rows in the sorted
  # permutation's order): sorted by the block of the row each pick names.
  pass_0 = split(sorted, factor(y[sorted], levels = c("a", "b", "c")))
  refills = lapply(seq_along(slots$refill_strata), function(i) {
    picks = sample.int(slots$refill_sizes[[i]], slots$refill_takes[[i]])
    rows = pass_0[[slots$refill_strata[[i]]]][picks]
    picks[order(row_block[rows])]
  })
  # Step 5: every stratum's sequence (pass 0, then its refills in draw order)
  # is served slot after slot in batch order.
  for (s in 1:3) {
    mine = which(slots$refill_strata == s)
    sequence = c(pass_0[[s]], unlist(lapply(mine, function(i) pass_0[[s]][refills[[i]]])))
    served = unlist(lapply(got, function(b) b[y[b] == c("a", "b", "c")[[s]]]))
    expect_identical(served, sequence)
  }
  # The same slots per batch as the assembly without the deal.
  unsorted = pystratum:::assemble_slots(encoded, slots, c(list(sorted, layout), refills))
  expect_identical(lapply(got, function(b) sort(unique(y[b]))),
    lapply(unsorted, function(b) sort(unique(y[b]))))
})

test_that("MultiLabel sorts the rows' permutation and deals each label set in batch order", {
  labels = cbind(u = rep(c(1, 0, 1, 0), 6), v = rep(c(0, 1, 1, 0), 6))
  ids = rep(c(7, 2), c(10, 14))
  policy = policy_multi_label(num_batches = 3)
  got = stratified_batches(labels, policy, seed = 9, shards = ids)
  set.seed(9)
  block = blocks_of(sample.int(2), 1)
  permutation = sample.int(24)
  sorted = permutation[order(block[match(ids, c(2, 7))][permutation])]
  ties = sample.int(3)
  assigned = pystratum:::multi_label_assign(labels == 1, sorted, ties, 1)
  # The rows of one label set, in the sorted order, take that set's batches ascending.
  label_set = paste(labels[, 1], labels[, 2])[sorted]
  batch = assigned$batch
  for (set in unique(label_set)) {
    at = which(label_set == set)
    batch[at] = sort(assigned$batch[at])
  }
  expected = unname(split(sorted, factor(batch, levels = 1:3)))
  expect_identical(unclass(got)[1:3], expected)
  expect_identical(attr(got, "label_counts"), {
    counts = assigned$counts
    colnames(counts) = c("u", "v")
    counts
  })
})

test_that("rng = 'index': the keyed shard order and per-block bijections of 'Lazy plans'", {
  set.seed(12)
  y = sample(c("p", "q", "r"), 70, replace = TRUE, prob = c(0.2, 0.3, 0.5))
  shards = random_shards(70, 6)
  n_shards = length(shards$sizes)
  shard_of_row = shards$ids + 1L
  index_permutation = pystratum:::index_permutation
  for (window in c(1, 2, n_shards)) {
    for (epoch in c(0, 3)) {
      policy = policy_min_per_stratum(3, batch_order = "assembled")
      got = stratified_batches(y, policy, seed = 99, rng = "index", epoch = epoch,
        shards = shard_sizes(shards$sizes), window = window)
      # A plain reading of the specification.
      shard_at = index_permutation(n_shards, 99, epoch, 2^52 - 1) + 1
      n_blocks = ceiling(n_shards / window)
      turn_order = unique(y)
      sequences = lapply(seq_along(turn_order), function(t) {
        rows = unlist(lapply(shard_at, function(h) which(y == turn_order[[t]] &
          shard_of_row == h)))
        position = match(shard_of_row[rows], shard_at) - 1
        block = position %/% window
        unlist(lapply(sort(unique(block)), function(j) {
          in_block = rows[block == j]
          in_block[index_permutation(length(in_block), 99, epoch,
            2^51 + (t - 1) * n_blocks + j) + 1]
        }))
      })
      names(sequences) = turn_order
      encoded = pystratum:::encode_strata(y)
      cuts = pystratum:::policy_allocate(policy, encoded, epoch)$cuts
      expected = lapply(seq_len(ncol(cuts) - 1L), function(b) {
        unlist(lapply(turn_order, function(label) {
          s = encoded$codes[[match(label, y)]]
          sequences[[label]][seq_len(cuts[s, b + 1L] - cuts[s, b]) + cuts[s, b]]
        }), use.names = FALSE)
      })
      expect_identical(got, expected, info = sprintf("W %d epoch %d", window, epoch))
    }
  }
  # Served epochs equal the epochs selected directly.
  epochs = pystratum:::stratified_epochs(y, policy_fixed_size(10), seed = 5, rng = "index",
    shards = shards$ids, window = 2)
  for (epoch in 0:2) {
    expect_identical(epochs$next_epoch(), stratified_batches(y, policy_fixed_size(10), seed = 5,
      rng = "index", epoch = epoch, shards = shards$ids, window = 2))
  }
})

test_that("no shuffle: the identity shard order, rows grouped by shard id", {
  y = rep(c("a", "b"), 10)
  ids = rep(c(9, 4), 10)
  got = stratified_batches(y, 5, shuffle = FALSE, shards = ids)
  # Shard 4 (even rows) is block 0, shard 9 block 1: each stratum's sequence
  # is its rows of shard 4, then those of shard 9.
  expect_identical(got, list(c(2L, 4L, 6L, 8L, 10L, 1L, 3L, 5L, 7L, 9L),
    c(12L, 14L, 16L, 18L, 20L, 11L, 13L, 15L, 17L, 19L)))
  # Rows stored shard after shard are already in block order.
  expect_identical(stratified_batches(y, 5, shuffle = FALSE, shards = shard_sizes(c(7, 0, 13))),
    stratified_batches(y, 5, shuffle = FALSE))
})

test_that("ids are labels: relabelling them keeps the batches, sizes match contiguous ids", {
  set.seed(3)
  y = sample(c("p", "q"), 60, replace = TRUE)
  shards = random_shards(60, 5)
  nonempty = shards$sizes[shards$sizes > 0]
  ids = rep.int(seq_along(nonempty) - 1L, nonempty)
  base = stratified_batches(y, 3, seed = 2, shards = ids, window = 2)
  expect_identical(stratified_batches(y, 3, seed = 2, shards = ids * 1000 + 17, window = 2), base)
  expect_identical(stratified_batches(y, 3, seed = 2, shards = as.double(ids), window = 2), base)
  expect_identical(stratified_batches(y, 3, seed = 2, shards = shard_sizes(nonempty),
    window = 2), base)
})

test_that("shard_sizes() prints its shards and rows", {
  expect_output(print(shard_sizes(c(4L, 0L, 6L))), "<pystratum_shard_sizes> 3 shards, 10 rows")
  expect_identical(unclass(shard_sizes(c(a = 2L, b = 3L))), list(sizes = c(2, 3)))
})

test_that("an empty shard keeps its place in the shard order", {
  y = rep(c("a", "b"), 6)
  set.seed(5)
  block = blocks_of(sample.int(3), 1)  # shards of 6, 0 and 6 rows
  permutation = sample.int(12)
  row_block = block[rep(c(1L, 3L), each = 6)]
  expected = reference_batches(y, permutation[order(row_block[permutation])], 2)
  expect_identical(stratified_batches(y, 2, seed = 5, shards = shard_sizes(c(6, 0, 6))),
    expected)
})

test_that("epochs served in turn equal each epoch selected directly", {
  y = rep(c("a", "b", "c"), c(12, 8, 20))
  ids = rep(0:7, each = 5)
  for (policy in list(policy_min_per_stratum(2), policy_targets(c(a = 0.3, b = 0.3, c = 0.4), 6),
    policy_classes_per_batch(2, 3))) {
    epochs = pystratum:::stratified_epochs(y, policy, seed = 8, shards = ids, window = 2)
    for (epoch in 0:3) {
      expect_identical(epochs$next_epoch(),
        stratified_batches(y, policy, seed = 8, epoch = epoch, shards = ids, window = 2))
    }
    later = pystratum:::stratified_epochs(y, policy, seed = 8, shards = ids, window = 2)
    later$start_at(3)
    expect_identical(later$next_epoch(),
      stratified_batches(y, policy, seed = 8, epoch = 3, shards = ids, window = 2))
  }
})

test_that("the epoch-jump guard counts the shard permutation of every skipped epoch", {
  y = rep(c("a", "b"), 10)
  # Without shards epoch 30000 costs 30,000 draws of 20 rows, 60,600,000:
  # allowed. With 5 shards every epoch is two draws (5 shards, then 20 rows),
  # 4,025 each, so pricing passes the limit after 24,845 epochs.
  price = pystratum:::epoch_skip_cost(30000, "R", 20)
  expect_identical(price$cost, 60600000)
  error = expect_pystratum_error(stratified_batches(y, 1, seed = 1, epoch = 30000,
    shards = rep(0:4, 4)), "value_error", "epoch", "^epoch=30000 with rng='R'")
  expect_match(conditionMessage(error), paste0("at least 49,690 draw(s) of at least 621,125 ",
    "rows, a cost of at least 100,001,125 row draws"), fixed = TRUE)
  encoded = pystratum:::encode_strata(y)
  shards = pystratum:::resolve_shards(rep(0:4, 4), 1, 20)
  allocation = pystratum:::allocate_epoch(policy_min_per_stratum(1), encoded, 0)
  group_of = pystratum:::epoch_group_of(policy_min_per_stratum(1), encoded, allocation, shards)
  expect_equal(group_of(3), list(sizes = c(5, 20), takes = c(5, 20)))
})

test_that("a session's stream (seed = NULL) and torch's stream draw the shards first", {
  y = rep(c("a", "b"), 10)
  ids = rep(0:3, 5)
  set.seed(77)
  expected = stratified_batches(y, 2, seed = 77, shards = ids)
  set.seed(77)
  expect_identical(stratified_batches(y, 2, shards = ids), expected)
  backend = fake_torch_backend()
  epochs = pystratum:::stratified_epochs(y, 2, seed = 5, rng = "torch", torch_backend = backend,
    shards = ids)
  got = epochs$next_epoch()
  expect_identical(sort(unlist(got)), 1:20)
})

test_that("hostile shards are refused naming the argument, the value and the fix", {
  # Classes and arguments as the Python core's: a vector of the wrong type is
  # a type error; entries that are not whole numbers >= 0, a matrix, a wrong
  # length or sizes not adding up are value errors, all naming `shards`.
  y = rep(c("a", "b"), 5)
  bad_type = list(as.character(0:9), rep(TRUE, 10), factor(0:9), list(0:9),
    structure(0:9, class = "Date"))
  for (shards in bad_type) {
    expect_pystratum_error(stratified_batches(y, 1, seed = 1, shards = shards),
      "type_error", "shards", "^shards must hold whole numbers \\(a shard id per row\\)")
  }
  bad_entry = list(c(0:8, 1.5), c(0:8, NaN), c(0:8, Inf), c(0:8, NA), c(0:8, -1), 0.5 + 0:9)
  for (shards in bad_entry) {
    expect_pystratum_error(stratified_batches(y, 1, seed = 1, shards = shards),
      "value_error", "shards", "^shards must hold (whole numbers|ids >= 0)")
  }
  expect_pystratum_error(stratified_batches(y, 1, seed = 1, shards = c(0:8, NA)),
    "value_error", "shards", "shards\\[10\\]=NA")
  expect_pystratum_error(stratified_batches(y, 1, seed = 1, shards = c(0:8, -1)),
    "value_error", "shards", "shards\\[10\\]=-1")
  expect_pystratum_error(stratified_batches(y, 1, seed = 1, shards = c(0:8, 2^60)),
    "value_error", "shards", "^shards must hold whole numbers below 2\\*\\*53")
  expect_pystratum_error(stratified_batches(y, 1, seed = 1, shards = matrix(0:9, ncol = 1)),
    "value_error", "shards", "^shards must be 1-D")
  for (shards in list(0:8, 0:10, integer(0))) {
    expect_pystratum_error(stratified_batches(y, 1, seed = 1, shards = shards),
      "value_error", "shards", "^shards must hold one shard id per row: got [0-9]+ ids for 10 rows")
  }
  expect_pystratum_error(stratified_batches(y, 1, seed = 1, shards = shard_sizes(c(4, 5))),
    "value_error", "shards", "sums to 9 rows, got 10 rows of strata")
  # shard_sizes() blames `shards`, the argument its result is for.
  expect_pystratum_error(shard_sizes(c(4, -1, 7)), "value_error", "shards",
    "shard_sizes\\(...\\)\\[2\\]=-1")
  expect_pystratum_error(shard_sizes(c(4, 2.5)), "value_error", "shards",
    "shard_sizes\\(...\\)\\[2\\]=2.5")
  expect_pystratum_error(shard_sizes(integer(0)), "value_error", "shards", "at least one shard")
  expect_pystratum_error(shard_sizes(matrix(1:4, 2)), "value_error", "shards", "1-D")
  for (sizes in list("4", TRUE, NULL, list(4, 6), factor(4))) {
    expect_pystratum_error(shard_sizes(sizes), "type_error", "shards",
      "^shards must hold whole numbers \\(shard_sizes\\(sizes\\)\\)")
  }
  for (window in list(1.5, TRUE, "2", NA, NaN, c(1, 2))) {
    expect_pystratum_error(stratified_batches(y, 1, seed = 1, shards = 0:9, window = window),
      "type_error", "window", "^window must be")
  }
  for (window in list(0, -2, NA_integer_)) {
    expect_pystratum_error(stratified_batches(y, 1, seed = 1, shards = 0:9, window = window),
      "value_error", "window", "^window must be")
  }
  expect_pystratum_error(stratified_batches(y, 1, seed = 1, window = 2), "value_error", "window",
    "^window=2 has no effect without shards")
  expect_pystratum_error(stratified_batches(rep(c("a", "b"), 8), policy_classes_per_batch(2, 2),
    seed = 1, shards = 0:15, rng = "index"), "value_error", "shards",
    "^shards cannot be honoured with rng='index' by ClassesPerBatch")
  for (policy in list(policy_downsample(c(a = 0.5), policy_min_per_stratum(1)),
    policy_targets(c(a = 0.9, b = 0.1), 5))) {
    expect_pystratum_error(stratified_batches(y, policy, seed = 1, shards = 0:9, rng = "index"),
      "value_error", "shards", "^shards cannot be honoured with rng='index' by policy=")
  }
  expect_pystratum_error(stratified_batches(cbind(a = rep(0:1, 5)), policy_multi_label(
    num_batches = 2), seed = 1, shards = 0:9, rng = "index"), "value_error", "rng",
    "^rng='index' cannot serve MultiLabel")
  expect_pystratum_error(stratified_batches(rep(c("a", "b"), 8),
    policy_classes_per_batch(2, 2, classes = "uniform"), seed = 1, shards = 0:15),
    "value_error", "shards", "classes='uniform'")
  expect_pystratum_error(pystratum:::stratified_epochs(y, 1, seed = 1, shards = 0:8),
    "value_error", "shards", "^shards must hold one shard id per row")
  # Served epochs (the mlr3torch sampler) refuse a keyed pool when made, not at epoch 0.
  expect_pystratum_error(pystratum:::stratified_epochs(y,
    policy_downsample(c(a = 0.5), policy_min_per_stratum(1)), seed = 1, rng = "index",
    shards = 0:9), "value_error", "shards", "^shards cannot be honoured with rng='index' by")
  # A window of the shard count or more is one block: accepted as it stands.
  expect_identical(stratified_batches(y, 1, seed = 1, shards = 0:9, window = 10),
    stratified_batches(y, 1, seed = 1, shards = 0:9, window = 2^40))
})

# --- golden vectors (tests/vectors/shards.json, read by pytest too) ---------------------------

# The inverses of generate_shards.R's column_spec() and shards as stored.
shard_column_from_spec = function(spec) {
  values = unlist(lapply(spec$values, function(v) if (is.null(v)) NA else v))
  if (is.null(values)) values = logical(0)
  switch(spec$type, integer = as.integer(values), double = as.double(values),
    character = as.character(values), logical = as.logical(values))
}

run_shard_vector_case = function(case) {
  input = case$input
  tryCatch({
    shards = input$shards
    if (!is.null(shards)) {
      shards = if (!is.null(shards$sizes)) shard_sizes(shard_column_from_spec(shards$sizes)) else
        shard_column_from_spec(shards$ids)
    }
    data = if (!is.null(input$labels)) {
      do.call(rbind, lapply(input$labels, function(row) as.integer(unlist(row))))
    } else {
      shard_column_from_spec(input$strata$columns[[1L]])
    }
    stratified_batches(data, pystratum:::policy_from_params(input$policy$name,
      input$policy$params), seed = input$seed, rng = input$rng, epoch = input$epoch,
      shuffle = input$shuffle, shards = shards, window = input$window)
  }, pystratum_error = function(e) e)
}

test_that("golden vectors: R reproduces every case of tests/vectors/shards.json", {
  vectors = read_vectors("shards.json")
  expect_identical(vectors$index_base, 1L)
  for (field in c("description", "generator", "r_version", "regenerate", "rng")) {
    expect_true(is.character(vectors[[field]]) && nzchar(vectors[[field]]), label = field)
  }
  ids = vapply(vectors$cases, function(case) case$id, "")
  expect_false(anyDuplicated(ids) > 0)
  expect_gte(length(ids), 80L)
  for (case in vectors$cases) {
    result = run_shard_vector_case(case)
    if (!is.null(case$expected_error)) {
      expect_s3_class(result, paste0("pystratum_", case$expected_error$class))
      expect_identical(result$argument, case$expected_error$argument, label = case$id)
      next
    }
    expect_false(inherits(result, "error"), label = case$id)
    expected = lapply(case$expected$batches, function(batch) as.integer(unlist(batch)))
    expect_identical(unname(unclass(result))[seq_along(result)], expected, label = case$id)
    if (!is.null(case$expected$weights)) {
      expect_equal(attr(result, "weights"),
        lapply(case$expected$weights, function(w) as.double(unlist(w))), tolerance = 1e-13,
        label = case$id)
    }
  }
})

test_that("shard refusals say the fix in the Python core's words", {
  # Negative ids or sizes, a matrix and ids R cannot hold exactly: the messages named the
  # fault but not always the fix, in words of their own (tests/r/test_shards_r.py compares
  # them with the core's).
  y = rep(c("a", "b"), 5)
  says = function(expr, message) {
    error = expect_pystratum_error(expr, "value_error", "shards")
    expect_identical(conditionMessage(error), message)
  }
  says(stratified_batches(y, 1, seed = 1, shards = c(0, -1, rep(0, 8))), paste0(
    "shards must hold ids >= 0, got shards[2]=-1. Shard ids are labels: pass non-negative ",
    "integers (they need not be contiguous)."))
  says(shard_sizes(c(3, -1)), paste0("shards must have sizes >= 0, got shard_sizes(...)[2]=-1. ",
    "Pass the number of rows each shard holds (0 for an empty shard)."))
  says(stratified_batches(y, 1, seed = 1, shards = matrix(0L, 2, 5)), paste0(
    "shards must be 1-D (a shard id per row), got an array of shape (2, 5). Pass one value ",
    "per entry, e.g. a column or as.vector(x)."))
  says(shard_sizes(matrix(1:4, 2)), paste0("shards must be 1-D (shard_sizes(sizes)), got an ",
    "array of shape (2, 2). Pass one value per entry, e.g. a column or as.vector(x)."))
  says(stratified_batches(y, 1, seed = 1, shards = c(2^60, rep(0, 9))), paste0(
    "shards must hold whole numbers below 2**53 when given as floats, got ",
    "shards[1]=1152921504606846976 (R holds it as a double, inexactly). Number the shards ",
    "with smaller integers."))
  says(shard_sizes(c(1, 2^53)), paste0("shards must hold whole numbers below 2**53 when given ",
    "as floats, got shard_sizes(...)[2]=9007199254740992 (R holds it as a double, inexactly). ",
    "Number the shards with smaller integers."))
})
