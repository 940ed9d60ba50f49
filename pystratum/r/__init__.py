"""The R package ``pystratum``, run from Python in embedded R (rpy2).

Install with ``pip install 'stratabatch[r]'`` (rpy2), R itself (Debian/Ubuntu:
``apt-get install r-base-core r-base-dev``) and the R package: from the
repository root ``bash .ci/dev setup`` builds it with its vignette and
installs it into R's user library (``R_LIBS_USER``), which R, rpy2 and the
``pystratum`` command search by themselves in any new shell.

What this module guarantees:

* ``stratified_batches`` returns exactly what R's
  ``pystratum::stratified_batches`` returns, as 0-based int64 numpy arrays:
  with ``rng="R"`` the same batches as the Python core's
  ``pystratum.stratified_batches(..., rng="R")``. Its default stream is R's
  (``"R"``), the core's is ``"numpy"``: a seed without ``rng`` warns
  (:class:`StreamDefaultWarning`) because the same call in the two faces
  gives different batches.
* R's errors keep R's message: classed ``pystratum_type_error`` /
  ``pystratum_value_error`` become ``TypeError`` / ``ValueError`` (with
  ``.argument``, the argument R blames), other R errors become
  :class:`RError`. R's ``pystratum_stratum_too_small`` warning becomes
  :class:`pystratum.StratumTooSmallWarning`, other R warnings
  :class:`RWarning`.
* Arguments reach R as R would hold them (Python int -> R integer, float ->
  double, bool -> logical, str -> character, None -> NULL, pandas
  categorical -> factor, DataFrame / dict of columns / 2-D array ->
  data.frame, numpy datetime64/timedelta64 -> their text) and R validates
  them. Strata take exactly the forms the Python core takes (the core's own
  splitter decides, so a scalar or a string such as ``"Class"`` is the same
  TypeError). Python types the core refuses for integer arguments (e.g.
  ``epoch=1.0``) are refused here as in the core. Only values R cannot hold
  fail here, with the reason: integer stratum labels outside R's signed
  32-bit range (``-2**31`` is ``NA_integer_``), missing labels (NaN/None/NA),
  integers beyond 2**53 as scalars or among floats (R doubles stop being
  exact there), objects of mixed types, strings with NUL, bytes that are not
  UTF-8 and strings that are not valid Unicode (lone surrogates). Integer
  scalars outside the 32-bit range (e.g. ``seed=3_000_000_000``) go to R as
  doubles, exactly as an R user typing ``seed = 3e9`` would pass them, and R
  decides.

rpy2 and R start on the first call, not on import; importing ``pystratum``
never imports rpy2. Embedded R is one interpreter per process and is not
thread-safe: call this module from one thread at a time.

Layout: ``_session`` (starting R, loading the package), ``_to_r`` and
``_from_r`` (conversions), ``_conditions`` (R conditions as Python
exceptions), ``_wrappers`` (the functions below); the R code they call is
the R package's internal bridge, ``r/R/python_bridge.R``.
"""
from ._conditions import RError, RWarning
from ._session import r_package_available
from ._wrappers import (
    StreamDefaultWarning,
    batch_count_table,
    batch_sampler_stratified,
    negative_pair_batches,
    sampler_from_r_task,
    strata_from_r_task,
    stratified_batches,
)

__all__ = [
    "RError",
    "RWarning",
    "StreamDefaultWarning",
    "batch_count_table",
    "batch_sampler_stratified",
    "negative_pair_batches",
    "r_package_available",
    "sampler_from_r_task",
    "strata_from_r_task",
    "stratified_batches",
]
