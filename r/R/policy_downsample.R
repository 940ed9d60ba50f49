# Downsample, policy_downsample(): the twin of
# pystratum/policies/_downsample.py. A fresh random subset of some strata each
# epoch, batched by a base policy, with importance weights; documented with
# policy_targets() (?sampling_policies, policy_targets.R).

#' @rdname sampling_policies
#' @export
policy_downsample = function(keep, base, batch_order = NULL) {
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
  new_policy("downsample", with_batch_order(list(keep = keep, base = list(name = base$name,
    params = base$params)), batch_order))
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

# As its base: the base recycles the kept rows or it does not.
#' @export
policy_may_recycle.pystratum_policy_downsample = function(policy) {
  base = policy$params$base
  policy_may_recycle(policy_from_params(base$name, base$params))
}
