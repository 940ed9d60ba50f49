#' pystratum: mini-batches that contain every stratum
#'
#' Every batch holds at least `min_samples_per_stratum` rows of every
#' stratum, every row appears once per epoch, each epoch is a new shuffle,
#' and with a seed and `rng = "R"` (the default of [stratified_batches()])
#' the batches equal those of the Python package (`pip install stratabatch`,
#' imported as `pystratum`) with `rng = "R"`, plus one (R counts from 1).
#'
#' * [batch_count_table()]: rows of every stratum in every batch, with
#'   `summary()` and `plot()` methods.
#'
#' * [stratified_batches()]: the batches of one epoch, as a list of row
#'   positions.
#' * [batch_sampler_stratified()]: a torch batch sampler class for the
#'   `batch_sampler` parameter of mlr3torch learners.
#'
#' The package needs only base R; torch is needed for `rng = "torch"` and
#' the batch sampler.
#'
#' @keywords internal
#' @importFrom utils globalVariables
"_PACKAGE"

# The torch sampler's methods use `self`, which R6 binds when the class is
# instantiated.
globalVariables("self")
