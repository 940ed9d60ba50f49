#' pystratum: mini-batches that contain every stratum
#'
#' Every batch holds what its policy promises (a number `m`: at least `m`
#' rows of every stratum; see [policies]), every row appears once per epoch
#' (for [policy_min_per_stratum()] and [policy_fixed_size()];
#' [policy_targets()] and [policy_downsample()] recycle or leave out rows on
#' purpose), each epoch is a new shuffle, and with a seed and `rng = "R"`
#' (the default of [stratified_batches()]) the batches equal those of the
#' Python package (`pip install stratabatch`, imported as `pystratum`) with
#' `rng = "R"`, plus one (R counts from 1).
#'
#' * [batch_count_table()]: rows of every stratum in every batch, with
#'   `summary()` and `plot()` methods.
#'
#' * [stratified_batches()]: the batches of one epoch, as a list of row
#'   positions.
#' * [batch_sampler_stratified()]: a torch batch sampler class for the
#'   `batch_sampler` parameter of mlr3torch learners.
#' * [negative_pair_batches()]: observed (user, item) pairs with sampled
#'   unobserved ones, as the Python package's `NegativePairSampler`.
#'
#' The package needs only base R; torch is needed for `rng = "torch"` and
#' the batch sampler.
#'
#' @keywords internal
#' @importFrom utils globalVariables
#' @importFrom stats runif
"_PACKAGE"

# The torch sampler's methods use `self`, which R6 binds when the class is
# instantiated.
globalVariables("self")
