#' Per-batch count table and composition plot
#'
#' `batch_count_table()` counts the rows of every stratum in every batch of
#' any list of batches: the batches of [stratified_batches()], or plain
#' shuffled ones to compare with (the blog's `dcast` table). Its `plot()`
#' method draws stacked bars with base graphics: one bar per batch, one band
#' per stratum; with more than `max_strata` strata the `max_strata - 1`
#' largest are drawn and the rest summed into one grey "other" band, and a
#' triangle above a bar marks a batch that misses at least one stratum.
#'
#' Batches are numbered from 1, as R lists are (the Python package numbers
#' them from 0).
#'
#' @param strata The strata the batches were made from, in any form
#'   [stratified_batches()] accepts.
#' @param batches (`list` of `integer`)\cr
#'   Batches of 1-based row positions, e.g. the value of
#'   [stratified_batches()].
#' @return An integer matrix of class `pystratum_count_table` (and `table`),
#'   one row per batch and one column per stratum, with dimnames `batch`
#'   (1, 2, ...) and `stratum` (labels; `a/b` for several columns).
#' @export
#' @examples
#' y = rep(c("M", "R"), c(111, 12))
#' batches = stratified_batches(y, 1, seed = 42)
#' counts = batch_count_table(y, batches)
#' counts[1:3, ]
#' plot(counts)
#'
#' # Plain shuffling, cut into as many batches: some miss class "R".
#' plain = split(sample(length(y)), rep(seq_along(batches), length.out = length(y)))
#' summary(batch_count_table(y, plain))
batch_count_table = function(strata, batches) {
  encoded = encode_strata(strata)
  if (!is.list(batches) || !all(vapply(batches, is.numeric, logical(1L)))) {
    abort_type("batches", sprintf(paste0(
      "batches must be a list of integer vectors of row positions, got batches=%s of type %s. ",
      "Pass the value of stratified_batches()."), show_value(batches), type_name(batches)))
  }
  rows = unlist(batches, use.names = FALSE)
  if (length(rows) && (anyNA(rows) || any(rows < 1) || any(rows > encoded$n_rows) ||
                       any(rows != round(rows)))) {
    abort_value("batches", sprintf(paste0(
      "batches must hold row positions in 1..%d (1-based), got values from %s to %s."),
      encoded$n_rows, format(min(rows)), format(max(rows))))
  }
  n_strata = length(encoded$sizes)
  batch_ids = rep.int(seq_along(batches), lengths(batches))
  flat = (batch_ids - 1L) * n_strata + encoded$codes[rows]
  counts = matrix(tabulate(flat, length(batches) * n_strata), nrow = length(batches),
                  ncol = n_strata, byrow = TRUE)
  labels = vapply(seq_len(n_strata), function(code) stratum_plain_label(encoded, code),
                  character(1L))
  dimnames(counts) = list(batch = seq_along(batches), stratum = labels)
  class(counts) = c("pystratum_count_table", "table")
  counts
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

#' @describeIn batch_count_table The share of batches missing a stratum and
#'   each stratum's smallest and largest count in a batch.
#' @param object,x A `pystratum_count_table`.
#' @param ... Ignored.
#' @export
summary.pystratum_count_table = function(object, ...) {
  counts = unclass(object)
  missing = rowSums(counts == 0L) > 0L
  structure(list(
    num_batches = nrow(counts),
    batches_missing_a_stratum = sum(missing),
    per_stratum = data.frame(stratum = colnames(counts), rows = colSums(counts),
                             min_per_batch = apply(counts, 2L, min),
                             max_per_batch = apply(counts, 2L, max), row.names = NULL)),
    class = "summary.pystratum_count_table")
}

#' @export
print.summary.pystratum_count_table = function(x, ...) {
  cat(sprintf("%d batches, %d missing a stratum\n", x$num_batches,
              x$batches_missing_a_stratum))
  print(x$per_stratum, row.names = FALSE)
  invisible(x)
}

#' @describeIn batch_count_table Stacked bars of the table (base graphics).
#' @param max_strata (`integer(1)`)\cr
#'   Strata drawn one by one; the others are summed into "other".
#' @param main (`character(1)`)\cr
#'   Title; the count of batches missing a stratum is appended.
#' @param legend (`logical(1)`)\cr
#'   Draw a legend at the right.
#' @export
plot.pystratum_count_table = function(x, max_strata = 8L, main = NULL, legend = TRUE, ...) {
  max_strata = assert_whole_number(max_strata, "max_strata", minimum = 2)
  counts = unclass(x)
  missing = rowSums(counts == 0L) > 0L
  totals = colSums(counts)
  if (ncol(counts) > max_strata) {
    keep = sort(order(-totals)[seq_len(max_strata - 1L)])
    rest = setdiff(seq_len(ncol(counts)), keep)
    drawn = cbind(counts[, keep, drop = FALSE], rowSums(counts[, rest, drop = FALSE]))
    colnames(drawn) = c(colnames(counts)[keep], sprintf("other (%d strata)", length(rest)))
    colours = c(grDevices::hcl.colors(length(keep), "Dark 3"), "grey75")
  } else {
    drawn = counts
    colours = grDevices::hcl.colors(ncol(counts), "Dark 3")
  }
  heading = sprintf("%d of %d batches miss a stratum", sum(missing), nrow(counts))
  if (!is.null(main)) heading = paste0(main, ": ", heading)
  top = max(rowSums(counts), 1)
  old = graphics::par(mar = c(4, 4, 2, if (legend) 9 else 1), xpd = FALSE)
  on.exit(graphics::par(old))
  centres = graphics::barplot(t(drawn), col = colours, border = NA,
                              space = if (nrow(drawn) > 60) 0 else 0.2,
                              ylim = c(0, top * 1.12), xlab = "batch", ylab = "rows",
                              main = heading, cex.main = 0.9, font.main = 1,
                              names.arg = rownames(drawn))
  if (any(missing)) {
    graphics::points(centres[missing], rowSums(counts)[missing] + 0.04 * top, pch = 25,
                     bg = "black", cex = 0.7)
  }
  if (legend) {
    graphics::par(xpd = TRUE)
    usr = graphics::par("usr")
    graphics::legend(usr[2L], usr[4L], legend = rev(colnames(drawn)), fill = rev(colours),
                     border = NA, bty = "n", cex = 0.75, title = "stratum")
  }
  invisible(x)
}
