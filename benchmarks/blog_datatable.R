# The blog's allocation written with data.table, as a baseline for the R
# package (sourced by bench_r.R and report_r.R):
#   dt[, i := seq_len(.N), by = stratum]; batch = ceiling(i * B / N_s); split
#
# i * B / N_s is computed as one product then one division, which is exact
# while i * B < 2^53: the float defect of the original code comes from
# (B / N_s) * i, which rounds twice.
datatable_batches = function(stratum, min_samples_per_stratum, permutation) {
  dt = data.table::data.table(row = permutation, stratum = stratum[permutation])
  dt[, i := seq_len(.N), by = stratum]
  dt[, n_s := .N, by = stratum]
  n_batches = max(1, min(dt[, .N, by = stratum]$N) %/% min_samples_per_stratum)
  dt[, batch := ceiling(i * n_batches / n_s)]
  unname(split(dt$row, dt$batch))
}
