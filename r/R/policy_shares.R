# The exact share arithmetic of the sampling policies (policy_targets(),
# policy_downsample()): the twin of pystratum/policies/_shares.py. Every count
# is exact whole-number arithmetic in doubles below 2^53 (mul_mod for
# products that could pass it), so both languages allocate the same ranks on
# every input; strata are named by their label text, by the Python rule.

SHARE_SCALE = 1e6

SHARE_TOLERANCE = 1e-9

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

weyl_step = function(total) {
  step = max(1, (total * 618034) %/% 1e6)
  while (whole_gcd(step, total) != 1) step = step + 1
  step
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
