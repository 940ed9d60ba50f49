# The single-batch guard (the twin of pystratum/engine/_single_batch.py): a
# plan whose only batch holds every row is refused unless
# allow_single_batch = TRUE. One batch is not stratified batching (every
# stratum is in it because every row is) and usually exhausts GPU memory at
# the first step. The count is the plan's batches per epoch (before any
# sharding across processes). Several 0/1 columns passed as strata
# (multi-label indicators) get their own message: each combination of the
# columns became a stratum.

# What a multi-label user should do: the one place naming the multi-label
# policy (Python's twin: MULTI_LABEL_FIX in pystratum/engine/_single_batch.py).
multi_label_fix = paste0("use the multi-label policy, policy_multi_label(batch_size = ...), ",
  "with the 0/1 columns as its labels, or stratify by one label column (e.g. the rarest ",
  "label) or by fewer columns")

# How many of the smallest strata the message names.
single_batch_shown = 3L

# allocation_epoch() of epoch 0 with the too-small warning silenced when a
# single batch will be refused anyway (the warning only comes with one batch,
# and the error explains it).
allocate_checked_epoch = function(policy, encoded, epoch, allow_single_batch) {
  allocation = if (allow_single_batch) {
    allocate_epoch(policy, encoded, epoch)
  } else {
    suppressWarnings(allocate_epoch(policy, encoded, epoch),
      classes = "pystratum_stratum_too_small")
  }
  check_several_batches(encoded, policy, length(allocation_batch_sizes(allocation)),
    allow_single_batch)
  allocation
}

# A pystratum_single_batch error (a pystratum_value_error) for a one-batch
# plan unless allow_single_batch; blames `strata` for 0/1 indicator columns,
# else `policy`.
check_several_batches = function(encoded, policy, n_batches, allow_single_batch) {
  if (allow_single_batch || n_batches >= 2L) {
    return(invisible(NULL))
  }
  sizes = encoded$sizes
  n_rows = encoded$n_rows
  smallest = order(sizes)[seq_len(min(single_batch_shown, length(sizes)))]
  shown = paste(vapply(smallest, function(s) sprintf("%s with %s row%s",
    stratum_label(encoded, s), format(sizes[[s]], scientific = FALSE),
    if (sizes[[s]] == 1) "" else "s"), ""), collapse = ", ")
  more = if (length(sizes) <= single_batch_shown) "" else sprintf(" of %d", length(sizes))
  allow = "or pass allow_single_batch = TRUE if one batch per epoch is really meant"
  shown_policy = paste0("policy_", policy_call_text(policy))
  columns = indicator_columns(encoded)
  if (columns > 0L) {
    need = rows_for_two_batches(policy)
    abort_single_batch("strata", sprintf(paste0(
      "strata has %d columns of 0/1 values, which look like multi-label indicators: each ",
      "combination of the columns became a stratum (%d strata, %d of them with fewer than %s ",
      "rows, too few for two batches of %s), so the plan is a single batch holding all %s ",
      "rows. The smallest strata%s: %s. Fix: %s; %s."),
      columns, length(sizes), sum(sizes < need), format(need, scientific = FALSE),
      shown_policy, format(n_rows, scientific = FALSE), more, shown, multi_label_fix, allow))
  }
  abort_single_batch("policy", sprintf(paste0(
    "policy=%s gives a single batch holding all %s rows, which is not stratified batching ",
    "(and a whole-dataset batch usually exhausts GPU memory). The smallest strata%s: %s. ",
    "Fix: %s; %s."), shown_policy, format(n_rows, scientific = FALSE), more, shown,
    policy_fix(policy, n_rows, min(sizes)), allow))
}

# Number of stratum columns when there are two or more and every one holds
# only 0/1 (logical, or numbers 0 and 1), else 0.
indicator_columns = function(encoded) {
  columns = encoded$columns
  if (length(columns) < 2L) {
    return(0L)
  }
  zero_one = vapply(columns, function(column) {
    if (is.logical(column)) return(TRUE)
    if (is.factor(column) || !is.numeric(column)) return(FALSE)
    all(column == 0 | column == 1)
  }, logical(1L))
  if (all(zero_one)) length(columns) else 0L
}

# Rows a stratum needs to be in two batches under `policy`.
rows_for_two_batches = function(policy) {
  params = policy$params
  per = switch(policy$name,
    min_per_stratum = params$m,
    fixed_size = params$min_per_stratum,
    classes_per_batch = params$per_class,
    1)
  2 * per
}

policy_fix = function(policy, n_rows, n_min) {
  if (identical(policy$name, "min_per_stratum")) {
    if (n_min >= 2) {
      return(sprintf(paste0("lower m (policy_min_per_stratum(%s) gives at least 2 batches), ",
        "or use policy_fixed_size(batch_size) for batches of a chosen size"),
        format(n_min %/% 2, scientific = FALSE)))
    }
    return(paste0("merge or drop the one-row strata (a stratum of one row fits one batch ",
      "only), or use policy_fixed_size(batch_size) once every stratum has 2 rows or more"))
  }
  if (identical(policy$name, "fixed_size")) {
    return(sprintf("use a smaller batch_size (below %s for 2 batches)",
      format(n_rows %/% 2 + 1, scientific = FALSE)))
  }
  paste0("use a policy giving more batches (a smaller batch_size, or ",
    "policy_fixed_size(batch_size))")
}

# The guard for a label-matrix plan (policy_multi_label(); Python's twin:
# check_several_label_batches in pystratum/engine/_single_batch.py): a
# pystratum_single_batch error naming the rows and the rarest labels unless
# allow_single_batch. `names`: the label names; `sizes`: each label's
# positive rows.
check_several_label_batches = function(names, sizes, n_rows, policy, n_batches,
  allow_single_batch) {
  if (allow_single_batch || n_batches >= 2L) {
    return(invisible(NULL))
  }
  rarest = order(sizes)[seq_len(min(single_batch_shown, length(sizes)))]
  shown = paste(vapply(rarest, function(j) sprintf("'%s' in %s row%s", names[[j]],
    format(sizes[[j]], scientific = FALSE), if (sizes[[j]] == 1) "" else "s"), ""),
    collapse = ", ")
  more = if (length(sizes) <= single_batch_shown) "" else sprintf(" of %d", length(sizes))
  n = format(n_rows, scientific = FALSE)
  fix = if (n_rows >= 2) {
    sprintf(paste0("pass batch_size below %s or num_batches from 2 to %s (each label's ",
      "positives are then spread over the batches)"), n, n)
  } else {
    "pass a label matrix of 2 rows or more (one row fits one batch only)"
  }
  abort_single_batch("policy", sprintf(paste0(
    "policy=%s gives a single batch holding all %s rows of the label matrix (%d label%s), ",
    "which is not stratified batching (and a whole-dataset batch usually exhausts GPU ",
    "memory). The rarest labels%s: %s. Fix: %s; or pass allow_single_batch = TRUE if one ",
    "batch per epoch is really meant."), paste0("policy_", policy_call_text(policy)), n,
    length(sizes), if (length(sizes) == 1L) "" else "s", more, shown, fix))
}
