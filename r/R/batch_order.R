# The split-safe order inside a batch (batch_order = "split_safe"), the twin
# of pystratum/engine/_batch_order.py: rows interleaved by stratum so that
# cutting a batch of n rows into g equal contiguous chunks gives every chunk
# floor or ceil of (the stratum's rows in the batch) / g rows of each
# stratum, for every g in the chain p1, p1 p2, ... of n's prime factors (the
# 2s first, then the others increasing); other g: best effort. The places
# depend only on the batch's counts (strata in order of first appearance);
# within a stratum rows keep the assembled order, so nothing is drawn.

# The prime factors of n, the 2s first, then the others increasing.
split_chain = function(n) {
  chain = numeric(0)
  p = 2
  while (n > 1 && p * p <= n) {
    while (n %% p == 0) {
      chain = c(chain, p)
      n = n %/% p
    }
    p = if (p == 2) 3 else p + 2
  }
  if (n > 1) chain = c(chain, n)
  chain
}

# The stratum (1-based index into counts) at every place of a batch: cut into
# p parts, each stratum giving counts %/% p rows to every part; remainder unit
# u (strata one after the other, counted within the part being cut) goes to
# part u mod p; then each part by the next prime, and so on.
split_safe_labels = function(counts) {
  counts = as.double(counts)
  stratum = which(counts > 0)
  count = counts[stratum]
  part = numeric(length(stratum))
  for (p in split_chain(sum(counts))) {
    quotient = count %/% p
    remainder = count %% p
    running = cumsum(remainder) - remainder
    new_part = c(TRUE, part[-1L] != part[-length(part)])
    unit = running - cummax(ifelse(new_part, running, 0))
    child = rep(seq_len(p) - 1, times = length(stratum))
    entry = rep(seq_along(stratum), each = p)
    child_count = quotient[entry] + as.double((child - unit[entry]) %% p < remainder[entry])
    child_part = part[entry] * p + child
    keep = child_count > 0
    o = order(child_part[keep], method = "radix")
    part = child_part[keep][o]
    stratum = stratum[entry][keep][o]
    count = child_count[keep][o]
  }
  rep.int(stratum, count)
}

# Batches (integer vectors of rows) in the split-safe order: within each batch
# a stable sort by the stratum's turn (strata_order: the strata in turn order,
# by default their first appearance), then the stratum's k-th row to its k-th
# place. One pattern per distinct count vector.
split_safe_batches = function(batches, encoded, strata_order = first_appearance_turn(encoded)) {
  n_strata = length(encoded$sizes)
  turn = integer(n_strata)
  turn[strata_order] = seq_len(n_strata)
  patterns = new.env(hash = TRUE)
  out = lapply(batches, function(rows) {
    if (length(rows) < 2L) return(rows)
    t = turn[encoded$codes[rows]]
    grouped = rows[order(t, method = "radix")]
    counts = tabulate(t, nbins = n_strata)
    key = paste(counts, collapse = ",")
    places = patterns[[key]]
    if (is.null(places)) {
      places = order(split_safe_labels(counts), method = "radix")
      assign(key, places, envir = patterns)
    }
    result = grouped
    result[places] = grouped
    result
  })
  attributes(out) = attributes(batches)
  out
}

# Whether `policy`'s batches come in the split-safe order: its batch_order
# when given, else split-safe for Targets, Downsample, ClassesPerBatch and
# every rng = "index" plan (index = TRUE). Python: Policy.split_safe().
policy_split_safe = function(policy, index = FALSE) {
  order = policy$params$batch_order
  if (is.null(order)) {
    return(policy$name %in% c("targets", "downsample", "classes_per_batch") || index)
  }
  identical(order, "split_safe")
}

# batch_order checked (NULL: the policy's default), as Python's check_batch_order.
assert_batch_order = function(batch_order) {
  if (is.null(batch_order)) return(NULL)
  if (!is.character(batch_order) || length(batch_order) != 1L || is.na(batch_order) ||
    !batch_order %in% c("split_safe", "assembled")) {
    abort_value("batch_order", sprintf(paste0(
      "batch_order must be 'split_safe', 'assembled' or None, got batch_order=%s. Pass ",
      "'split_safe' (chunks of a split batch keep every stratum's share), 'assembled' (the ",
      "assembly's order) or None (the policy's default)."), show_value(batch_order)))
  }
  # Names and other attributes dropped: a named c(x = "split_safe") is the plain
  # value (policy_split_safe() compares with identical()).
  as.vector(batch_order, mode = "character")
}

# params plus batch_order when given (NULL is not recorded).
with_batch_order = function(params, batch_order) {
  if (!is.null(batch_order)) params$batch_order = assert_batch_order(batch_order)
  params
}
