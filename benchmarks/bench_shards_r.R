# What the shard-blocked order (docs/SHARDS.md) costs in R: one epoch of
# pystratum::stratified_batches() with shards against the same epoch without,
# for every policy family that draws row sequences (rng = "R"), and for the
# lazy plans' keyed order (rng = "index", materialised as R does).
#
# Run from the repository root after `R CMD INSTALL r`:
#   Rscript benchmarks/bench_shards_r.R [N] [SHARD_ROWS] [REPEATS]
# (defaults 1e6 rows, shards of 1e4 rows, 3 repeats). The data: three strata
# (3%, 27%, 70%) shuffled over the rows, rows stored shard after shard
# (shards = shard_sizes(...)), window 1. Each line gives the median seconds
# of the plain epoch and of the shard-sorted one (timed alternately, after
# one warm-up call each) and their ratio (shards / plain). One epoch is
# epoch 0: the shard permutation, the policy's draws, the stable sorts.

suppressPackageStartupMessages(library(pystratum))

args = commandArgs(trailingOnly = TRUE)
n = if (length(args) >= 1L) as.integer(as.numeric(args[[1L]])) else 1000000L
shard_rows = if (length(args) >= 2L) as.integer(as.numeric(args[[2L]])) else 10000L
repeats = if (length(args) >= 3L) as.integer(args[[3L]]) else 3L

set.seed(1L)
strata = sample(c("rare", "mid", "common"), n, replace = TRUE, prob = c(0.03, 0.27, 0.70))
sizes = rep(shard_rows, n %/% shard_rows)
if (n %% shard_rows) sizes = c(sizes, n %% shard_rows)
shards = shard_sizes(sizes)

policies = list(
  min_per_stratum = policy_min_per_stratum(8),
  fixed_size = policy_fixed_size(256),
  targets = policy_targets(c(rare = 0.5, mid = 0.25, common = 0.25), 256),
  downsample = policy_downsample(c(common = 0.2), policy_min_per_stratum(8)),
  classes_per_batch = policy_classes_per_batch(2, 64)
)

seconds = function(f) system.time(f())[["elapsed"]]

cat(sprintf("R %s, N = %s rows, %d shards of %s rows, window 1, median of %d\n",
  getRversion(), format(n, big.mark = ","), length(sizes), format(shard_rows, big.mark = ","),
  repeats))
cat(sprintf("%-24s %10s %10s %8s\n", "policy", "plain s", "shards s", "ratio"))
runs = c(lapply(names(policies), function(name) list(name = name, policy = policies[[name]],
  rng = "R")), list(list(name = "index: min_per_stratum", policy = policies$min_per_stratum,
  rng = "index")))
for (run in runs) {
  name = run$name
  policy = run$policy
  rng = run$rng
  plain = function() stratified_batches(strata, policy, seed = 7, rng = rng)
  sharded = function() stratified_batches(strata, policy, seed = 7, rng = rng, shards = shards,
    window = 1)
  invisible(plain())
  invisible(sharded())
  times = vapply(seq_len(repeats), function(run) c(seconds(plain), seconds(sharded)),
    numeric(2L))
  t_plain = stats::median(times[1L, ])
  t_shards = stats::median(times[2L, ])
  cat(sprintf("%-24s %10.3f %10.3f %7.2fx\n", name, t_plain, t_shards, t_shards / t_plain))
}
