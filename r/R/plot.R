#' Per-batch count table and composition plot, in the form of the policy
#'
#' `batch_count_table()` counts what every batch of any list of batches holds,
#' in the form that fits the policy (one report per policy family, as the
#' Python package's `BatchPlan.report()`):
#' * stratum policies (and no policy): rows of every stratum in every batch
#'   (the blog's `dcast` table), a `pystratum_count_table`;
#' * [policy_multi_label()] (or batches carrying attribute `"label_counts"`):
#'   positives of every label in every batch, a `pystratum_label_table` (a row
#'   counts once per label it carries; never the label combinations);
#' * [policy_classes_per_batch()]: the P classes of every batch, a
#'   `pystratum_class_table` (a batches x P character matrix, never a batches
#'   x classes table), with how often each class appears.
#'
#' `summary()` gives the headline (the policy's promise and how many batches
#' keep it; without a policy, how many batches miss a stratum) and one record
#' per stratum, label or number of appearances. `plot()` draws stacked bars
#' with base graphics (one bar per batch, one band per stratum or label; with
#' more than `max_strata` the `max_strata - 1` largest are drawn and the rest
#' summed into "other"); past 300 batches the spread of each column's
#' per-batch counts; for classes, how often each class appears.
#'
#' Past 20 strata (labels), `print()` of a table or of its summary no longer
#' gives each stratum its own column (line): it shows the 10 least served
#' (fewest in a batch first) with their least, median and most count in a batch,
#' then "... and N more strata"; the table and `summary()$records` keep every
#' count, and the Python package prints the same lines.
#'
#' Batches are numbered from 1, as R lists are (the Python package numbers
#' them from 0).
#'
#' @param strata The strata (or label matrix) the batches were made from, in
#'   any form [stratified_batches()] accepts.
#' @param batches (`list` of `integer`)\cr
#'   Batches of 1-based row positions, e.g. the value of
#'   [stratified_batches()].
#' @param policy (`pystratum_policy` or `NULL`)\cr
#'   The policy the batches were made with: it picks the table's form and the
#'   promise the headline checks. `NULL`: a label table when `batches` carry
#'   attribute `"label_counts"`, else a stratum table of plain batches.
#' @return A `pystratum_count_table` (an integer matrix, dimnames `batch` and
#'   `stratum`, labels `a/b` for several columns), a `pystratum_label_table`
#'   (dimnames `batch` and `label`) or a `pystratum_class_table`.
#' @export
#' @examples
#' y = rep(c("M", "R"), c(111, 12))
#' batches = stratified_batches(y, 1, seed = 42)
#' counts = batch_count_table(y, batches, policy = 1)
#' counts[1:3, ]
#' summary(counts)
#' plot(counts)
#'
#' # Plain shuffling, cut into as many batches: some miss class "R".
#' plain = split(sample(length(y)), rep(seq_along(batches), length.out = length(y)))
#' summary(batch_count_table(y, plain))
#'
#' # Several labels per row: positives of each label per batch.
#' labels = data.frame(a = rep(c(1, 0, 1, 0), 25), b = rep(c(0, 1, 1, 0), 25))
#' summary(batch_count_table(labels, stratified_batches(labels,
#'   policy_multi_label(batch_size = 10), seed = 1)))
batch_count_table = function(strata, batches, policy = NULL) {
  if (!is.list(batches) || !all(vapply(batches, is.numeric, logical(1L)))) {
    abort_type("batches", sprintf(paste0(
      "batches must be a list of integer vectors of row positions, got batches=%s of type %s. ",
      "Pass the value of stratified_batches()."), show_value(batches), type_name(batches)))
  }
  if (!is.null(policy)) policy = as_policy(policy)
  # The one dispatch by policy family (Python: pystratum.engine._report.report_of).
  switch(report_family(policy, batches),
    labels = label_count_table(strata, batches, policy),
    classes = class_count_table(strata, batches, policy),
    stratum_count_table(strata, batches, policy))
}

# "labels", "classes" or "strata": the report that fits the policy's promise;
# without a policy, batches of policy_multi_label() (attr "label_counts") are labels.
report_family = function(policy, batches) {
  if (is.null(policy)) return(if (is.null(attr(batches, "label_counts"))) "strata" else "labels")
  if (inherits(policy, "pystratum_policy_multi_label")) return("labels")
  if (inherits(policy, "pystratum_policy_classes_per_batch")) return("classes")
  "strata"
}

# Every row position of `batches` checked against n_rows (1-based).
checked_batch_rows = function(batches, n_rows) {
  rows = unlist(batches, use.names = FALSE)
  if (length(rows) && (anyNA(rows) || any(rows < 1) || any(rows > n_rows) ||
                       any(rows != round(rows)))) {
    abort_value("batches", sprintf(paste0(
      "batches must hold row positions in 1..%d (1-based), got values from %s to %s."),
      n_rows, format(min(rows)), format(max(rows))))
  }
  rows
}

stratum_count_table = function(strata, batches, policy) {
  encoded = encode_strata(strata)
  rows = checked_batch_rows(batches, encoded$n_rows)
  n_strata = length(encoded$sizes)
  batch_ids = rep.int(seq_along(batches), lengths(batches))
  flat = (batch_ids - 1L) * n_strata + encoded$codes[rows]
  counts = matrix(tabulate(flat, length(batches) * n_strata), nrow = length(batches),
                  ncol = n_strata, byrow = TRUE)
  labels = vapply(seq_len(n_strata), function(code) stratum_plain_label(encoded, code),
                  character(1L))
  dimnames(counts) = list(batch = seq_along(batches), stratum = labels)
  attr(counts, "policy") = policy
  class(counts) = c("pystratum_count_table", "table")
  counts
}

# Positives of every label in every batch (a row counts once per label it carries).
label_count_table = function(strata, batches, policy) {
  labels = check_label_matrix(strata)
  rows = checked_batch_rows(batches, nrow(labels$matrix))
  batch_ids = rep.int(seq_along(batches), lengths(batches))
  # One tabulate per label: empty batches keep their row of zeros.
  counts = matrix(vapply(seq_along(labels$names), function(label) {
    tabulate(batch_ids[labels$matrix[rows, label]], length(batches))
  }, integer(length(batches))), nrow = length(batches),
  dimnames = list(batch = seq_along(batches), label = labels$names))
  attr(counts, "policy") = policy
  attr(counts, "batch_rows") = lengths(batches)
  class(counts) = c("pystratum_label_table", "pystratum_count_table", "table")
  counts
}

# The classes of every batch, in order of first row (a batches x P character
# matrix, NA where a batch holds fewer), and each class's rows per batch.
class_count_table = function(strata, batches, policy) {
  encoded = encode_strata(strata)
  checked_batch_rows(batches, encoded$n_rows)
  labels = vapply(seq_along(encoded$sizes), function(code) stratum_plain_label(encoded, code),
                  character(1L))
  held = lapply(batches, function(rows) unique(encoded$codes[rows]))
  width = max(c(lengths(held), policy$params$classes_per_batch))
  classes = t(vapply(held, function(codes) c(labels[codes], rep(NA_character_,
    width - length(codes))), character(width)))
  dim(classes) = c(length(batches), width)
  dimnames(classes) = list(batch = seq_along(batches), slot = seq_len(width))
  per_class = vapply(seq_along(batches), function(b) {
    tab = tabulate(encoded$codes[batches[[b]]], length(labels))
    all(tab[held[[b]]] == policy$params$per_class)
  }, logical(1L))
  structure(classes, policy = policy, appearances = stats::setNames(
    tabulate(unlist(held, use.names = FALSE), length(labels)), labels),
    k_rows = per_class, class = "pystratum_class_table")
}

# The label of stratum `code` for tables and legends: the value as text,
# several columns joined by "/" (as the Python package's tables show them).
stratum_plain_label = function(encoded, code) {
  row = match(code, encoded$codes)
  parts = vapply(encoded$columns, function(column) {
    value = column[[row]]
    if (is.factor(column)) as.character(value) else format(value, digits = 15L)
  }, character(1L))
  paste(unname(parts), collapse = "/")
}

# The promise of a stratum policy as Python's _stratum_promise() words it:
# list(floor = rows per stratum per batch or NULL, words = ).
stratum_promise = function(name, params) {
  number = function(x) format(x, scientific = FALSE, trim = TRUE)
  switch(name,
    min_per_stratum = list(floor = params$m, words = sprintf(
      "every batch holds >= %s row(s) of every stratum", number(params$m))),
    fixed_size = list(floor = params$min_per_stratum, words = sprintf(
      "batches of %s holding >= %s row(s) of every stratum",
      if (identical(params$sizes, "balanced")) {
        sprintf("floor or ceil of N / ceil(N / %s) rows", number(params$batch_size))
      } else {
        sprintf("exactly %s rows (the last batch the rest)", number(params$batch_size))
      }, number(params$min_per_stratum))),
    targets = list(floor = NULL, words = sprintf(
      "batches of %s rows in the target shares (%s)", number(params$batch_size),
      if (identical(params$shares, "balanced")) "balanced" else "as given")),
    downsample = {
      base = stratum_promise(params$base$name, params$base$params)
      list(floor = base$floor, words = paste0(
        "downsampled rows (weights N_s / kept_s), then: ", base$words))
    },
    list(floor = NULL, words = sprintf("the batches of %s", name)))
}

# "all 50" or "3 of 50", as Python's _share_of().
share_of = function(kept, n) {
  if (kept == n) sprintf("all %s", big_number(n)) else
    sprintf("%s of %s", big_number(kept), big_number(n))
}

# The headline of a count table: the policy's promise and how many batches keep
# it (the same words as Python's reports); without a policy, how many batches
# miss a stratum (plain batches, to compare).
count_table_headline = function(x) {
  counts = unclass(x)
  policy = attr(x, "policy")
  n = nrow(counts)
  least = if (length(counts)) min(counts) else 0L
  if (inherits(x, "pystratum_label_table")) {
    floor = policy$params$min_per_label
    if (is.null(floor)) floor = 1
    short = counts < floor
    kept = n - sum(rowSums(short) > 0L)
    words = sprintf("every batch holds >= %s positive(s) of every label%s",
                    format(floor, scientific = FALSE, trim = TRUE),
                    if (isTRUE(policy$params$strict)) "" else " (best effort: strict=False)")
    text = sprintf("%s: %s batches do", words, share_of(kept, n))
    if (kept < n) {
      names = colnames(counts)[colSums(short) > 0L]
      text = sprintf("%s (short: %s%s)", text, paste(utils::head(names, 8L), collapse = ", "),
                     if (length(names) > 8L) ", ..." else "")
    }
    return(text)
  }
  if (is.null(policy)) {
    return(sprintf("%d of %d batches miss a stratum", sum(rowSums(counts == 0L) > 0L), n))
  }
  promise = stratum_promise(policy$name, policy$params)
  if (is.null(promise$floor)) {
    return(sprintf("%s: fewest rows of a stratum in a batch: %d", promise$words, least))
  }
  kept = sum(apply(counts, 1L, min) >= promise$floor)
  sprintf("%s: %s batches do (fewest rows of a stratum in a batch: %d)", promise$words,
          share_of(kept, n), least)
}

#' @describeIn batch_count_table The headline (the policy's promise and how many
#'   batches keep it; without a policy, the batches missing a stratum) and each
#'   stratum's (label's) rows (positives), smallest and largest count in a batch.
#' @param object,x A `pystratum_count_table`, `pystratum_label_table` or
#'   `pystratum_class_table`.
#' @param ... Ignored.
#' @export
summary.pystratum_count_table = function(object, ...) {
  counts = unclass(object)
  missing = rowSums(counts == 0L) > 0L
  labels = inherits(object, "pystratum_label_table")
  records = data.frame(column = colnames(counts), total = colSums(counts),
                       min_per_batch = apply(counts, 2L, min),
                       max_per_batch = apply(counts, 2L, max), row.names = NULL)
  names(records)[1:2] = if (labels) c("label", "positives") else c("stratum", "rows")
  structure(list(
    num_batches = nrow(counts),
    headline = count_table_headline(object),
    batches_missing_a_stratum = if (labels) NULL else sum(missing),
    per_stratum = if (labels) NULL else records,
    per_label = if (labels) records else NULL,
    records = records),
    class = "summary.pystratum_count_table")
}

#' @describeIn batch_count_table Prints the headline and the records; past 20
#'   strata (labels), the 10 least served (fewest in a batch first), then
#'   "... and N more strata" (`$records` keeps every record).
#' @export
print.summary.pystratum_count_table = function(x, ...) {
  cat(x$headline, "\n", sep = "")
  records = x$records
  noun = switch(names(records)[[1L]], stratum = "strata", label = "labels", NULL)
  if (is.null(noun) || nrow(records) <= wide_from) {
    print(records, row.names = FALSE)
    return(invisible(x))
  }
  shown = least_served(records$min_per_batch)
  cells = vapply(records[shown, , drop = FALSE], function(column) {
    if (is.numeric(column)) sprintf("%.0f", column) else as.character(column)
  }, character(length(shown)))
  cells[, 1L] = shown_label(cells[, 1L])  # the stratum (label) column
  cat(sprintf("%s %s, more than %d to show: the least served first", big_number(nrow(records)),
              noun, wide_from),
      text_table(rbind(names(records), matrix(cells, nrow = length(shown)))),
      more_line(nrow(records) - length(shown), noun), sep = "\n")
  invisible(x)
}

# Past wide_from strata (labels) a printed table or summary no longer gives each its
# own column (line): the strata_shown least served (fewest in a batch first, ties in
# stratum order), then "... and N more strata"; the object keeps every count.
# Python: pystratum.engine._report.WIDE_FROM and STRATA_SHOWN, with the same words.
wide_from = 20L
strata_shown = 10L

big_number = function(x) format(x, big.mark = ",", scientific = FALSE, trim = TRUE)

# A label as a table cell shows it (Python: strata/_labels.py, shown_label()): quoted,
# with escapes, when its plain text would not read as one label: empty, holding line
# breaks, tabs or other control characters (a broken table), spaces at an end, or ", ".
shown_label = function(text) {
  odd = !nzchar(text) | grepl("[[:cntrl:]]", text) | text != trimws(text) |
    grepl(", ", text, fixed = TRUE)
  text[odd] = encodeString(text[odd], quote = "'")
  text
}

# The strata_shown strata (labels) with the fewest in a batch, fewest first, ties in
# stratum order (order() is stable): what a compact table or summary shows (Python:
# _least_served()).
least_served = function(least) utils::head(order(least), strata_shown)

more_line = function(n, noun) sprintf("... and %s more %s", big_number(n), noun)

# The lines of a character matrix (first row the header), cells right-aligned in
# columns two spaces apart, as Python's _text_table() lays them out.
text_table = function(cells) {
  widths = apply(cells, 2L, function(column) max(nchar(column)))
  padded = vapply(seq_len(ncol(cells)), function(k) {
    paste0(strrep(" ", widths[[k]] - nchar(cells[, k])), cells[, k])
  }, character(nrow(cells)))
  apply(matrix(padded, nrow = nrow(cells)), 1L, paste, collapse = "  ")
}

# The compact form of a wide count table: per stratum (label), its count in a batch
# (least, median, most) and total, the least served first (Python: _wide_table()).
wide_table_lines = function(x) {
  counts = unclass(x)
  attributes(counts) = list(dim = dim(counts), dimnames = dimnames(counts))
  labels = inherits(x, "pystratum_label_table")
  noun = if (labels) "labels" else "strata"
  singular = if (labels) "label" else "stratum"
  value_name = if (labels) "positives" else "rows"
  shown = least_served(apply(counts, 2L, min))
  # Median, most and total of the shown columns only: the others are not printed.
  kept = counts[, shown, drop = FALSE]
  median = apply(kept, 2L, stats::median)
  cells = cbind(shown_label(colnames(counts)[shown]), sprintf("%.0f", apply(kept, 2L, min)),
                ifelse(median == floor(median), sprintf("%.0f", median), sprintf("%.1f", median)),
                sprintf("%.0f", apply(kept, 2L, max)), sprintf("%.0f", colSums(kept)))
  c(sprintf(paste0("%s %s over %s batches, more than %d to show as columns: %s of each %s ",
                   "in a batch, the least served first"), big_number(ncol(counts)), noun,
            big_number(nrow(counts)), wide_from, value_name, singular),
    text_table(rbind(c(singular, "min", "median", "max", value_name), cells)),
    more_line(ncol(counts) - length(shown), noun))
}

is_wide_table = function(x) length(dim(x)) == 2L && ncol(x) > wide_from && nrow(x) > 0L

#' @describeIn batch_count_table Prints the table; past 20 strata (labels), one
#'   line per stratum (label) instead of a column each: its least, median and
#'   most in a batch and its total, the 10 least served first, then "... and N
#'   more strata" (the table itself keeps every count).
#' @export
print.pystratum_count_table = function(x, ...) {
  if (!is_wide_table(x)) return(NextMethod())
  cat(wide_table_lines(x), sep = "\n")
  invisible(x)
}

#' @describeIn batch_count_table The printed lines of a wide table (past 20
#'   strata or labels, see `print()`); otherwise the usual character matrix.
#' @export
format.pystratum_count_table = function(x, ...) {
  if (!is_wide_table(x)) return(NextMethod())
  wide_table_lines(x)
}

#' @describeIn batch_count_table ClassesPerBatch: the headline and how many
#'   classes appear in how many batches (`batches_per_class`, `classes`,
#'   `rows_per_class`).
#' @export
summary.pystratum_class_table = function(object, ...) {
  policy = attr(object, "policy")
  appearances = attr(object, "appearances")
  p = policy$params$classes_per_batch
  k = policy$params$per_class
  distinct = rowSums(!is.na(unclass(object))) == p & attr(object, "k_rows")
  served = appearances[appearances > 0L]
  headline = sprintf(paste0("every batch holds %s distinct classes x %s rows: %s batches do; ",
    "%s of %s classes served, each in %s batches"), big_number(p), big_number(k),
    share_of(sum(distinct), nrow(object)), big_number(length(served)),
    big_number(length(appearances)),
    if (length(served)) sprintf("%d-%d", min(served), max(served)) else "0")
  times = sort(unique(appearances))
  records = data.frame(batches_per_class = times,
                       classes = vapply(times, function(t) sum(appearances == t), integer(1L)),
                       rows_per_class = times * k)
  structure(list(num_batches = nrow(object), headline = headline, records = records,
                 appearances = appearances), class = "summary.pystratum_count_table")
}

#' @export
print.pystratum_class_table = function(x, ...) {
  classes = unclass(x)
  cat(sprintf("classes of each batch (%s rows each)\n",
              format(attr(x, "policy")$params$per_class, scientific = FALSE)))
  lines = apply(classes, 1L, function(row) paste(row[!is.na(row)], collapse = ", "))
  shown = seq_along(lines)
  text = sprintf("%5s  %s", rownames(classes), lines)
  if (length(lines) > 20L) text = c(text[1:10], "  ...", text[length(lines) - 9:0])
  cat(text, sep = "\n")
  if (length(lines) > 20L) cat(sprintf("(%d of %d batches shown)\n", 20L, length(lines)))
  invisible(x)
}

#' @describeIn batch_count_table ClassesPerBatch: how often each class appears
#'   (classes most frequent first; a log scale when the counts span more than a
#'   factor 20).
#' @export
plot.pystratum_class_table = function(x, main = NULL, ...) {
  appearances = sort(attr(x, "appearances"), decreasing = TRUE)
  heading = summary(x)$headline
  if (!is.null(main)) heading = paste0(main, ": ", heading)
  heading = wrapped_heading(heading)
  served = appearances[appearances > 0L]
  log_scale = length(served) && max(served) > 20 * min(served)
  old = graphics::par(mar = c(4, 4, 1 + length(heading), 1))
  on.exit(graphics::par(old))
  graphics::plot(seq_along(appearances), pmax(appearances, if (log_scale) 0.5 else 0),
                 type = "s", log = if (log_scale) "y" else "",
                 ylim = if (log_scale) NULL else c(0, max(appearances, 1) * 1.12),
                 xlab = "classes, most frequent first", ylab = "batches a class appears in",
                 col = "#4c72b0")
  graphics::title(main = paste(heading, collapse = "\n"), cex.main = 0.8, font.main = 1)
  invisible(x)
}

# The heading's lines, wrapped to the device's width (base graphics never wrap a
# title, and a long headline would run off both sides); `right`: the right margin
# in lines (the legend's room).
wrapped_heading = function(heading, right = 1) {
  inches = graphics::par("din")[[1L]] - (4 + right) * graphics::par("csi")
  width = max(20L, floor(inches / (0.8 * graphics::par("cin")[[1L]])))
  strwrap(heading, width = width)
}

# Past this many batches a plot draws the spread of each column's per-batch
# counts instead of one bar per batch (Python: pystratum.plot.AGGREGATE_FROM).
aggregate_from = 300L

#' @describeIn batch_count_table Stacked bars of the table (base graphics); past
#'   300 batches, the spread of each stratum's (label's) per-batch counts.
#' @param max_strata (`integer(1)`)\cr
#'   Strata (labels) drawn one by one; the others are summed into "other".
#' @param main (`character(1)`)\cr
#'   Title; the summary's headline is appended.
#' @param legend (`logical(1)`)\cr
#'   Draw a legend at the right.
#' @export
plot.pystratum_count_table = function(x, max_strata = 8L, main = NULL, legend = TRUE, ...) {
  max_strata = assert_whole_number(max_strata, "max_strata", minimum = 2)
  counts = unclass(x)
  labels = inherits(x, "pystratum_label_table")
  value_name = if (labels) "positives" else "rows"
  missing = if (labels || !is.null(attr(x, "policy"))) rep(FALSE, nrow(counts)) else
    rowSums(counts == 0L) > 0L
  totals = colSums(counts)
  if (ncol(counts) > max_strata) {
    keep = sort(order(-totals)[seq_len(max_strata - 1L)])
    rest = setdiff(seq_len(ncol(counts)), keep)
    drawn = cbind(counts[, keep, drop = FALSE], rowSums(counts[, rest, drop = FALSE]))
    colnames(drawn) = c(colnames(counts)[keep], sprintf("other (%d %s)", length(rest),
                                                        if (labels) "labels" else "strata"))
    colours = c(grDevices::hcl.colors(length(keep), "Dark 3"), "grey75")
  } else {
    drawn = counts
    colours = grDevices::hcl.colors(ncol(counts), "Dark 3")
  }
  heading = count_table_headline(x)
  if (!is.null(main)) heading = paste0(main, ": ", heading)
  if (nrow(drawn) > aggregate_from) {
    heading = wrapped_heading(sprintf("%s. %d batches, spread of each column's counts per batch",
                                      heading, nrow(drawn)))
    old = graphics::par(mar = c(6, 4, 1 + length(heading), 1))
    on.exit(graphics::par(old))
    graphics::boxplot(drawn, col = colours, border = "grey30", range = 0, las = 2,
                      ylim = c(0, max(drawn, 1) * 1.12), ylab = paste(value_name, "per batch"),
                      cex.axis = 0.75)
    graphics::title(main = paste(heading, collapse = "\n"), cex.main = 0.8, font.main = 1)
    return(invisible(x))
  }
  heading = wrapped_heading(heading, right = if (legend) 9 else 1)
  top = max(rowSums(drawn), 1)
  old = graphics::par(mar = c(4, 4, 1 + length(heading), if (legend) 9 else 1), xpd = FALSE)
  on.exit(graphics::par(old))
  centres = graphics::barplot(t(drawn), col = colours, border = NA,
                              space = if (nrow(drawn) > 60) 0 else 0.2,
                              ylim = c(0, top * 1.12), xlab = "batch", ylab = value_name,
                              names.arg = rownames(drawn))
  graphics::title(main = paste(heading, collapse = "\n"), cex.main = 0.8, font.main = 1)
  if (any(missing)) {
    graphics::points(centres[missing], rowSums(counts)[missing] + 0.04 * top, pch = 25,
                     bg = "black", cex = 0.7)
  }
  if (legend) {
    graphics::par(xpd = TRUE)
    usr = graphics::par("usr")
    graphics::legend(usr[2L], usr[4L], legend = rev(colnames(drawn)), fill = rev(colours),
                     border = NA, bty = "n", cex = 0.75, title = if (labels) "label" else "stratum")
  }
  invisible(x)
}
