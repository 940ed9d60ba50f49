"""The R package ``pystratum``, run from Python in embedded R (rpy2).

Install with ``pip install 'pystratum[r]'`` (rpy2), R itself (Debian/Ubuntu:
``apt-get install r-base-core r-base-dev``) and the R package from the
repository root (``R CMD INSTALL r``).

What this module guarantees:

* ``stratified_batches`` returns exactly what R's
  ``pystratum::stratified_batches`` returns, as 0-based int64 numpy arrays:
  with ``rng="R"`` the same batches as the Python core's
  ``pystratum.stratified_batches(..., rng="R")``.
* R's errors keep R's message: classed ``pystratum_type_error`` /
  ``pystratum_value_error`` become ``TypeError`` / ``ValueError`` (with
  ``.argument``, the argument R blames), other R errors become
  :class:`RError`. R's ``pystratum_stratum_too_small`` warning becomes
  :class:`pystratum.StratumTooSmallWarning`, other R warnings
  :class:`RWarning`.
* Arguments reach R as R would hold them (Python int -> R integer, float ->
  double, bool -> logical, str -> character, None -> NULL, pandas
  categorical -> factor, DataFrame -> data.frame) and R validates them. Only
  values R cannot hold fail here, with the reason: integer stratum labels
  outside R's signed 32-bit range (``-2**31`` is ``NA_integer_``), missing
  labels (NaN/None/NA), integers beyond 2**53 as scalars (R doubles stop
  being exact there), objects of mixed types. Integer scalars outside the
  32-bit range (e.g. ``seed=3_000_000_000``) go to R as doubles, exactly as an
  R user typing ``seed = 3e9`` would pass them, and R decides.

rpy2 and R start on the first call, not on import; importing ``pystratum``
never imports rpy2. Embedded R is one interpreter per process and is not
thread-safe: call this module from one thread at a time.
"""

from __future__ import annotations

import contextlib
import numbers
import threading
import warnings

import numpy as np

from ._plan import resolve_policy
from .policies import Policy, StratumTooSmallWarning
from ._strata import check_object_missing, is_column_like, is_dataframe, raise_missing

__all__ = [
    "RError",
    "RWarning",
    "batch_sampler_stratified",
    "r_package_available",
    "sampler_from_r_task",
    "strata_from_r_task",
    "stratified_batches",
]

R_PACKAGE = "pystratum"
INSTALL_RPY2 = "pip install 'pystratum[r]'"
INSTALL_R = "apt-get install r-base-core r-base-dev"
INSTALL_R_PACKAGE = "R CMD INSTALL r"

# R integers are signed 32-bit and -2**31 is NA_integer_.
_R_INT_MAX = 2**31 - 1
# Beyond this a double no longer holds every integer exactly.
_R_DOUBLE_EXACT_MAX = 2**53
# R's vectors are 1-based; every index crossing the boundary goes through
# _to_r_index / _from_r_index and nowhere else.
_R_INDEX_BASE = 1


class RError(RuntimeError):
    """An error raised in R that is not one of pystratum's classed argument errors.

    ``r_classes`` holds the R condition's class vector; ``argument`` the
    argument R blamed, when the condition carried one.
    """

    def __init__(self, message, r_classes=(), argument=None):
        super().__init__(message)
        self.r_classes = tuple(r_classes)
        self.argument = argument


class RWarning(UserWarning):
    """A warning raised in R other than ``pystratum_stratum_too_small``."""


# ---------------------------------------------------------------------------
# Index bases: the one place where 0-based and 1-based meet.


def _to_r_index(zero_based: np.ndarray) -> np.ndarray:
    """0-based int array -> 1-based int32 array (R positions, factor codes)."""
    return (np.asarray(zero_based, dtype=np.int64) + _R_INDEX_BASE).astype(np.int32)


def _from_r_index(one_based) -> np.ndarray:
    """1-based R integer/double vector -> 0-based int64 numpy array."""
    return np.asarray(one_based, dtype=np.int64) - _R_INDEX_BASE


# ---------------------------------------------------------------------------
# The embedded R session.

# R code kept in one private environment (parent: base), so nothing lands in
# the user's global environment and nothing there can shadow it.
_R_HELPERS = r"""
local({
  condition_info = function(cond) {
    argument = cond[["argument"]]
    list(
      class = class(cond),
      message = conditionMessage(cond),
      argument = if (is.character(argument) && length(argument) == 1L) argument else NA_character_
    )
  }

  # Run fun(...) and return list(value, error, warnings) instead of signalling:
  # the Python side re-raises with the right Python classes.
  call_capturing = function(fun, args) {
    caught = list()
    outcome = tryCatch(
      list(value = withCallingHandlers(
        do.call(fun, args),
        warning = function(w) {
          caught[[length(caught) + 1L]] <<- condition_info(w)
          invokeRestart("muffleWarning")
        }
      ), error = NULL),
      error = function(e) list(value = NULL, error = condition_info(e))
    )
    outcome[["warnings"]] = caught
    outcome
  }

  # Batches travel as one flat vector plus lengths: one transfer, however
  # many batches there are.
  stratified_batches = function(...) {
    outcome = call_capturing(getExportedValue("pystratum", "stratified_batches"), list(...))
    if (is.null(outcome[["error"]])) {
      value = outcome[["value"]]
      outcome[["value"]] = NULL
      outcome[["is_list"]] = is.list(value)
      outcome[["r_type"]] = paste(class(value), collapse = "/")
      if (is.list(value)) {
        outcome[["flat"]] = unlist(value, use.names = FALSE)
        outcome[["sizes"]] = lengths(value)
        outcome[["all_integer"]] = all(vapply(value, is.integer, logical(1L)))
      }
    }
    outcome
  }

  batch_sampler_stratified = function(...) {
    call_capturing(getExportedValue("pystratum", "batch_sampler_stratified"), list(...))
  }

  make_data_frame = function(columns, names, nrow) {
    structure(columns, names = names, row.names = .set_row_names(nrow), class = "data.frame")
  }

  make_factor = function(codes, levels, ordered) {
    structure(codes, levels = levels, class = if (ordered) c("ordered", "factor") else "factor")
  }

  has_package = function(name) requireNamespace(name, quietly = TRUE)

  # The stratum columns of an mlr3 Task in task$row_ids order: position k
  # (0-based in Python) is the row with id task$row_ids[k + 1].
  task_strata = function(task) {
    columns = task$col_roles$stratum
    row_ids = task$row_ids
    if (length(columns) == 0L) {
      return(list(error = "empty", task_class = paste(class(task), collapse = "/")))
    }
    data = task$data(rows = row_ids, cols = columns)
    data = as.list(data)[columns]
    info = lapply(data, function(x) {
      kind = if (is.factor(x)) "factor" else if (is.object(x)) "other" else typeof(x)
      list(
        kind = kind,
        class = paste(class(x), collapse = "/"),
        first_na = if (anyNA(x)) which.max(is.na(x)) else 0L,
        levels = if (is.factor(x)) levels(x) else NULL,
        ordered = is.ordered(x),
        values = if (is.factor(x)) as.integer(x) else if (is.object(x)) NULL else x
      )
    })
    list(error = NULL, columns = columns, info = info,
      n_rows = length(row_ids), n_data = length(data[[1L]]))
  }

  task_strata_captured = function(task) call_capturing(task_strata, list(task))

  environment()
})
"""


class _Session:
    """rpy2 modules, the R helpers, and the check that the R package is there."""

    def __init__(self):
        try:
            import rpy2  # noqa: F401
        except ImportError as error:
            raise ImportError(
                f"pystratum.r needs rpy2 (the Python-R bridge), which is not installed. "
                f"Install it with: {INSTALL_RPY2}"
            ) from error
        try:
            import rpy2.rinterface as ri
            import rpy2.robjects as ro
            from rpy2.robjects.conversion import localconverter
        except Exception as error:  # rpy2 raises ImportError, OSError, RuntimeError, ffi.error
            hint = ""
            if "R_getVar" in str(error):
                hint = (
                    " This rpy2 needs R >= 4.5 (rpy2-rinterface >= 3.6.6 calls R_getVar); "
                    "with an older R install rpy2 3.5: pip install 'rpy2>=3.5,<3.6'."
                )
            raise RuntimeError(
                f"rpy2 is installed but could not start R ({type(error).__name__}: {error}). "
                f"Install R with: {INSTALL_R} (Debian/Ubuntu), then reinstall rpy2 so it "
                f"finds that R: pip install --force-reinstall 'pystratum[r]'.{hint}"
            ) from error
        self.ri = ri
        self.ro = ro
        self.localconverter = localconverter
        # Results come back as plain rpy2 vectors whatever converters the user
        # activated globally (pandas2ri, numpy2ri): every call runs in this.
        self.converter = ro.default_converter
        with localconverter(self.converter):
            self.helpers = ro.r(_R_HELPERS)
        self.package_checked = False

    def helper(self, name):
        return self.helpers[name]

    @contextlib.contextmanager
    def calling(self):
        """One call into R: serialised across threads, with this module's converter."""
        with _R_LOCK, self.localconverter(self.converter):
            yield

    def has_package(self, name: str) -> bool:
        with self.calling():
            return bool(self.helper("has_package")(self.ri.StrSexpVector([name]))[0])

    def require_package(self, name: str = R_PACKAGE):
        if name == R_PACKAGE and self.package_checked:
            return
        if not self.has_package(name):
            with self.calling():
                paths = list(self.ro.r(".libPaths()"))
            raise RuntimeError(
                f"The R package '{name}' is not installed in R's libraries "
                f"({', '.join(paths)}). Install it from the root of the pystratum "
                f"repository with: {INSTALL_R_PACKAGE}"
            )
        if name == R_PACKAGE:
            self.package_checked = True


_SESSION = None
_SESSION_LOCK = threading.Lock()
# Embedded R is single-threaded: calls from several Python threads take turns.
_R_LOCK = threading.RLock()


def _session(require: str | None = R_PACKAGE) -> _Session:
    """The R session, started on first use; raises with the install command if absent.

    A failure is not cached, so installing the missing piece and calling
    again works without restarting Python (except R itself, once rpy2 has
    failed to load it).
    """
    global _SESSION
    with _SESSION_LOCK:
        if _SESSION is None:
            _SESSION = _Session()
    if require is not None:
        _SESSION.require_package(require)
    return _SESSION


def r_package_available(name: str = R_PACKAGE) -> bool:
    """True if embedded R can load the R package ``name`` (starts R if needed)."""
    return _session(require=None).has_package(name)


# ---------------------------------------------------------------------------
# Python -> R. Every function returns an rpy2 rinterface object and must be
# called inside ``_Session.calling()`` (a ``localconverter`` block).


def _scalar_to_r(ri, value, name):
    """One Python scalar as a length-1 R vector, or None if ``value`` is not a scalar."""
    if value is None:
        return ri.NULL
    if isinstance(value, np.generic) and not isinstance(value, (np.str_, np.bytes_)):
        value = value.item()
    if isinstance(value, bool):
        return ri.BoolSexpVector([value])
    if isinstance(value, numbers.Integral):
        value = int(value)
        if -_R_INT_MAX <= value <= _R_INT_MAX:
            return ri.IntSexpVector([value])
        if abs(value) <= _R_DOUBLE_EXACT_MAX:
            # R's own integers stop at 2**31 - 1; R users write such numbers
            # as doubles (3e9), so that is how they reach R, which decides.
            return ri.FloatSexpVector([float(value)])
        raise ValueError(
            f"{name}={value} cannot be passed to R exactly: R numbers are signed 32-bit "
            f"integers or doubles, and doubles hold integers exactly only up to 2**53."
        )
    if isinstance(value, numbers.Real):
        return ri.FloatSexpVector([float(value)])
    if isinstance(value, str):
        _check_r_string(value, name, None)
        return ri.StrSexpVector([value])
    return None


def _argument_to_r(ri, value, name):
    """One argument for R; a value R cannot hold raises with ``.argument = name``."""
    try:
        if name == "strata":
            return _strata_to_r(ri, value, name)
        return _value_to_r(ri, value, name)
    except (TypeError, ValueError) as error:
        if getattr(error, "argument", None) is None:
            error.argument = name
        raise


def _value_to_r(ri, value, name):
    """A scalar argument (or a vector of them) as R holds it; R validates it."""
    converted = _scalar_to_r(ri, value, name)
    if converted is not None:
        return converted
    if is_dataframe(value) or is_column_like(value):
        return _strata_to_r(ri, value, name)
    raise TypeError(
        f"{name}={value!r} of type {type(value).__name__} cannot be passed to R; "
        f"use None, a bool, an int, a float, a str or a 1-D array of them."
    )


def _strata_to_r(ri, strata, name="strata"):
    """Strata as R holds them: a vector or factor (one column) or a data.frame.

    Accepts what the Python core accepts: a 1-D array-like, a pandas
    Series/Categorical/DataFrame, a 2-D array (one column per variable) or a
    list/tuple of 1-D columns. A scalar goes to R as a length-1 vector.
    """
    if is_dataframe(strata):
        names = [str(col) for col in strata.columns]
        columns = [strata[col] for col in strata.columns]
        labels = [f"{name}[{col!r}]" for col in strata.columns]
        return _data_frame_to_r(ri, columns, names, labels, n_rows=len(strata))
    scalar = _scalar_to_r(ri, strata, name)
    if scalar is not None:
        return scalar
    if isinstance(strata, (list, tuple)) and len(strata) > 0 and all(
        is_column_like(item) for item in strata
    ):
        names = [f"V{k + 1}" for k in range(len(strata))]
        labels = [f"{name}[{k}]" for k in range(len(strata))]
        return _data_frame_to_r(ri, list(strata), names, labels, n_rows=None)
    if _is_pandas(strata):
        return _column_to_r(ri, strata, name)
    array = strata if isinstance(strata, np.ndarray) else np.asarray(strata)
    if array.ndim == 1:
        return _column_to_r(ri, array, name)
    if array.ndim == 2:
        columns = [array[:, k] for k in range(array.shape[1])]
        names = [f"V{k + 1}" for k in range(array.shape[1])]
        labels = [f"{name}[:, {k}]" for k in range(array.shape[1])]
        return _data_frame_to_r(ri, columns, names, labels, n_rows=array.shape[0])
    raise ValueError(
        f"{name} must be 1-D (one label per row) or 2-D (one column per stratum variable), "
        f"got an array with shape {array.shape}."
    )


def _data_frame_to_r(ri, columns, names, labels, n_rows):
    converted = [_column_to_r(ri, column, label) for column, label in zip(columns, labels)]
    lengths = {len(c) for c in converted}
    if n_rows is None:
        n_rows = len(converted[0]) if converted else 0
    if lengths - {n_rows}:
        shown = ", ".join(f"{label}: {len(c)}" for label, c in zip(labels, converted))
        raise ValueError(
            f"{labels[0].split('[')[0]} columns must all have the same length to form an R "
            f"data.frame, got {shown}."
        )
    make = _SESSION.helper("make_data_frame")
    return make(ri.ListSexpVector(converted), ri.StrSexpVector(names), n_rows)


def _column_to_r(ri, column, name):
    """One stratum column as an R vector: integer, double, logical, character or factor."""
    if _is_categorical(column):
        return _categorical_to_r(ri, column, name)
    if _is_pandas(column) and not isinstance(getattr(column, "dtype", None), np.dtype):
        # pandas extension dtypes (Int64, boolean, string, ...): check for NA,
        # then take the plain values.
        values = column.to_numpy(dtype=object)
        check_object_missing(values, name)
        values = np.asarray(values.tolist())
        if values.dtype.kind == "O":
            return _object_column_to_r(ri, values, name)
    else:
        values = column.to_numpy() if hasattr(column, "to_numpy") else np.asarray(column)
    if values.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got an array with shape {values.shape}.")
    kind = values.dtype.kind
    if kind == "b":
        return ri.BoolSexpVector.from_memoryview(memoryview(values.astype(np.int32)))
    if kind in "iu":
        return _int_column_to_r(ri, values, name)
    if kind == "f":
        values = values.astype(np.float64)
        missing = np.isnan(values)
        if missing.any():
            raise_missing(name, int(np.argmax(missing)), "NaN")
        return ri.FloatSexpVector.from_memoryview(memoryview(np.ascontiguousarray(values)))
    if kind == "c":
        # R has complex vectors; the R package decides whether they are labels.
        missing = np.isnan(values)
        if missing.any():
            raise_missing(name, int(np.argmax(missing)), "NaN")
        return ri.ComplexSexpVector([complex(v) for v in values.tolist()])
    if kind == "U":
        return _strings_to_r(ri, values.tolist(), name)
    if kind == "S":
        return _strings_to_r(ri, [v.decode("utf-8") for v in values.tolist()], name)
    if kind == "O":
        return _object_column_to_r(ri, values, name)
    if kind in "mM":
        raise TypeError(
            f"{name} has dtype {values.dtype}, which pystratum.r does not pass to R: R "
            f"date-times are doubles counting seconds, which cannot keep every numpy "
            f"date-time apart. Convert the labels first, e.g. .astype(str) or to a pandas "
            f"categorical."
        )
    raise TypeError(
        f"{name} has dtype {values.dtype}, which pystratum.r cannot pass to R as stratum "
        f"labels; use ints, floats, strings, bools or a pandas categorical."
    )


def _int_column_to_r(ri, values, name):
    if values.size:
        outside = (values < -_R_INT_MAX) | (values > _R_INT_MAX)
        if outside.any():
            row = int(np.argmax(outside))
            raise ValueError(
                f"{name} holds {int(values[row])} at row {row} (0-based), which R cannot hold: "
                f"R integers are signed 32-bit, from -{_R_INT_MAX} to {_R_INT_MAX} "
                f"(-2**31 is R's NA_integer_). Renumber the labels, or pass them as strings "
                f"or a pandas categorical."
            )
    return ri.IntSexpVector.from_memoryview(memoryview(values.astype(np.int32)))


def _object_column_to_r(ri, values, name):
    """Object arrays: all bools, all ints, all reals or all strings (R vectors hold one type)."""
    items = values.tolist()
    check_object_missing(values, name)
    if all(isinstance(v, (bool, np.bool_)) for v in items):
        return ri.BoolSexpVector([bool(v) for v in items])
    if all(isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) for v in items):
        return _int_column_to_r(ri, _ints_array(items, name), name)
    if all(isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)) for v in items):
        return ri.FloatSexpVector([float(v) for v in items])
    if all(isinstance(v, str) for v in items):
        return _strings_to_r(ri, items, name)
    kinds = sorted({type(v).__name__ for v in items})
    raise TypeError(
        f"{name} mixes values of types {', '.join(kinds)}, which one R vector cannot hold "
        f"(R vectors have a single type). Convert the labels to one type, e.g. .astype(str)."
    )


def _ints_array(items, name):
    """Python ints (possibly huge) as an int64 array, failing with the reason if they don't fit."""
    for row, value in enumerate(items):
        if not -_R_INT_MAX <= int(value) <= _R_INT_MAX:
            raise ValueError(
                f"{name} holds {int(value)} at row {row} (0-based), which R cannot hold: "
                f"R integers are signed 32-bit, from -{_R_INT_MAX} to {_R_INT_MAX} "
                f"(-2**31 is R's NA_integer_). Renumber the labels, or pass them as strings "
                f"or a pandas categorical."
            )
    return np.asarray([int(v) for v in items], dtype=np.int64)


def _strings_to_r(ri, items, name):
    for row, value in enumerate(items):
        _check_r_string(value, name, row)
    return ri.StrSexpVector(items)


def _check_r_string(value, name, row):
    if "\x00" in value:
        where = "" if row is None else f" at row {row} (0-based)"
        raise ValueError(
            f"{name} holds a string with a NUL character{where}: {value!r}; R strings "
            f"cannot contain NUL."
        )


def _categorical_to_r(ri, column, name):
    """A pandas categorical as an R factor with the same levels, in the same order."""
    cat = column.cat if hasattr(column, "cat") else column
    codes = np.asarray(cat.codes, dtype=np.int64)
    missing = codes < 0
    if missing.any():
        raise_missing(name, int(np.argmax(missing)), "missing category (NaN)")
    categories = list(cat.categories)
    levels = [str(c) for c in categories]
    if len(set(levels)) != len(levels):
        raise ValueError(
            f"{name} has categories that read the same as text ({categories!r}); R factor "
            f"levels are strings and must be distinct. Rename the categories."
        )
    for level in levels:
        _check_r_string(level, name, None)
    # Attributes are set in R (structure()), which also marks the vector as
    # an S3 object so that R dispatches factor methods on it.
    make = _SESSION.helper("make_factor")
    return make(ri.IntSexpVector.from_memoryview(memoryview(_to_r_index(codes))),
                ri.StrSexpVector(levels),
                ri.BoolSexpVector([bool(getattr(cat, "ordered", False))]))


def _is_pandas(obj) -> bool:
    return type(obj).__module__.startswith("pandas")


def _is_categorical(obj) -> bool:
    dtype = getattr(obj, "dtype", None)
    return dtype is not None and getattr(dtype, "name", "") == "category"


# ---------------------------------------------------------------------------
# Calling R and mapping its conditions.


def _field(r_list, name):
    """Element ``name`` of an R list, or None if absent or NULL."""
    names = r_list.names
    names = [] if names is None or names is _SESSION.ri.NULL else list(names)
    if name not in names:
        return None
    value = r_list[names.index(name)]
    return None if value is _SESSION.ri.NULL else value


def _first_string(value):
    if value is None:
        return None
    text = value[0]
    return None if text is _SESSION.ri.NA_Character or text is None else str(text)


def _raise_r_conditions(outcome, stacklevel):
    """Re-emit R's warnings as Python warnings, then raise R's error if there was one."""
    caught = _field(outcome, "warnings")
    for warning in caught if caught is not None else []:
        classes = list(_field(warning, "class"))
        message = _first_string(_field(warning, "message"))
        category = StratumTooSmallWarning if "pystratum_stratum_too_small" in classes else RWarning
        warnings.warn(message, category, stacklevel=stacklevel + 1)
    error = _field(outcome, "error")
    if error is None:
        return
    classes = list(_field(error, "class"))
    message = _first_string(_field(error, "message"))
    argument = _first_string(_field(error, "argument"))
    if "pystratum_type_error" in classes:
        exception = TypeError(message)
    elif "pystratum_value_error" in classes:
        exception = ValueError(message)
    else:
        raise RError(message, classes, argument)
    exception.argument = argument
    exception.r_classes = tuple(classes)
    raise exception


def stratified_batches(strata, policy=None, *, seed=None, rng="R", epoch=0,
                       shuffle=True, min_samples_per_stratum=None) -> list:
    """R's ``pystratum::stratified_batches``, with batches as 0-based int64 arrays.

    Same arguments and guarantees as :func:`pystratum.stratified_batches`
    (``policy``: a :mod:`pystratum.policies` object, rebuilt in R by name and
    parameters, or a number, R's shorthand for ``policy_min_per_stratum``), computed by the R
    package in embedded R. With ``rng="R"`` (the default here, as in R) the
    batches equal the Python core's ``rng="R"`` batches for the same seed and
    epoch; R's own ``.Random.seed`` is left untouched.

    Raises TypeError/ValueError for R's argument errors (R's message;
    ``.argument`` names the argument) and for values R cannot hold (raised
    before R runs, ``.argument`` set the same way), :class:`RError` for other
    R errors, and ImportError/RuntimeError naming the install command when
    rpy2, R or the R package is missing.
    """
    session = _session()
    ri = session.ri
    with session.calling():
        given = {"strata": strata, "seed": seed, "rng": rng, "epoch": epoch, "shuffle": shuffle}
        arguments = {name: _argument_to_r(ri, value, name) for name, value in given.items()}
        arguments.update(_policy_arguments(session, policy, min_samples_per_stratum))
        outcome = session.helper("stratified_batches")(**arguments)
        _raise_r_conditions(outcome, stacklevel=2)
        if not bool(_field(outcome, "is_list")[0]):
            raise RError(
                f"R's pystratum::stratified_batches returned an object of class "
                f"{_first_string(_field(outcome, 'r_type'))}, not a list of batches."
            )
        flat = _field(outcome, "flat")
        sizes = _field(outcome, "sizes")
        if flat is not None and not bool(_field(outcome, "all_integer")[0]):
            raise RError("R's pystratum::stratified_batches returned batches that are not "
                         "integer vectors.")
        positions = _from_r_index(flat) if flat is not None else np.empty(0, dtype=np.int64)
        sizes = np.asarray(sizes, dtype=np.int64) if sizes is not None else np.empty(0, np.int64)
    if sizes.size == 0:
        return []
    return np.split(positions, np.cumsum(sizes[:-1]))


def _policy_arguments(session, policy, min_samples_per_stratum):
    """The policy as R arguments: a policy object rebuilt in R, a number as R reads it."""
    if policy is not None and min_samples_per_stratum is not None:
        resolve_policy(policy, min_samples_per_stratum)  # raises the core's "not both" error
    if min_samples_per_stratum is not None:
        policy = min_samples_per_stratum
    if not isinstance(policy, Policy):
        # R validates the number (or refuses the value) as min_samples_per_stratum.
        return {"min_samples_per_stratum": _argument_to_r(session.ri, policy,
                                                          "min_samples_per_stratum")}
    record = policy.to_dict()
    params = session.ro.vectors.ListVector({
        key: _argument_to_r(session.ri, value, key) for key, value in record["params"].items()
    })
    rebuild = session.ro.r("pystratum:::policy_from_params")
    return {"policy": rebuild(session.ri.StrSexpVector([record["name"]]), params)}


def batch_sampler_stratified(min_samples_per_stratum, *, shuffle=True, seed=None, rng="torch"):
    """R's ``pystratum::batch_sampler_stratified()``: a torch sampler *class*, as an R object.

    The result is an rpy2 object ready to be assigned in embedded R to an
    mlr3torch learner's ``batch_sampler`` parameter. It needs R's torch
    package; without it R's error (naming ``install.packages("torch")``) is
    raised here as :class:`RError` (or the mapped TypeError/ValueError for bad
    arguments).
    """
    session = _session()
    ri = session.ri
    with session.calling():
        given = {"min_samples_per_stratum": min_samples_per_stratum, "shuffle": shuffle,
                 "seed": seed, "rng": rng}
        arguments = {name: _argument_to_r(ri, value, name) for name, value in given.items()}
        outcome = session.helper("batch_sampler_stratified")(**arguments)
        _raise_r_conditions(outcome, stacklevel=2)
        return _field(outcome, "value")


# ---------------------------------------------------------------------------
# mlr3 tasks.


def strata_from_r_task(task):
    """The stratum columns of an mlr3 ``Task`` held in embedded R, as a pandas DataFrame.

    Row k of the result (0-based) is the task row with id ``task$row_ids[k + 1]``:
    positions follow ``task$row_ids`` order, which is the order mlr3torch's
    dataset indexes rows in, so batches computed on the result index that
    dataset directly. The columns are ``task$col_roles$stratum`` (several
    allowed, the target may be one); factors become pandas categoricals with
    the same levels, logicals bools, integers int64, doubles float64,
    characters str.

    ``task`` is an rpy2 object for the R task (e.g. ``robjects.r("task")``).
    Only the fields an mlr3 Task has are used: ``col_roles$stratum``,
    ``row_ids`` and ``data(rows, cols)``. (The tests run it on a minimal R6
    stand-in with those fields, since mlr3 is not installable there.)

    Raises ValueError when the stratum role is empty or a label is missing
    (NA), TypeError when ``task`` is not an R object, :class:`RError` when R
    fails (e.g. the object has no ``data()`` method).
    """
    session = _session(require=None)
    pandas = _import_pandas("strata_from_r_task")
    if not isinstance(task, session.ri.Sexp):
        raise TypeError(
            f"task must be an rpy2 object holding an R mlr3 Task (e.g. "
            f"rpy2.robjects.r['task']), got task={task!r} of type {type(task).__name__}."
        )
    with session.calling():
        outcome = session.helper("task_strata_captured")(task)
        _raise_r_conditions(outcome, stacklevel=2)
        found = _field(outcome, "value")
        error = _first_string(_field(found, "error"))
        if error == "empty":
            raise ValueError(
                f"task has no stratum columns: task$col_roles$stratum is empty (task class "
                f"{_first_string(_field(found, 'task_class'))}). Set it in R, e.g. "
                f"task$col_roles$stratum = \"target_column\" (several columns allowed), "
                f"or pass the strata to StratifiedBatchSampler yourself."
            )
        n_rows = int(_field(found, "n_rows")[0])
        n_data = int(_field(found, "n_data")[0])
        if n_rows != n_data:
            raise RError(
                f"task$data(rows = task$row_ids) returned {n_data} rows, but the task has "
                f"{n_rows} row ids."
            )
        names = [str(v) for v in _field(found, "columns")]
        info = _field(found, "info")
        frame = {}
        for name, column in zip(names, info):
            frame[name] = _column_from_r(column, name, pandas)
    return pandas.DataFrame(frame, index=pandas.RangeIndex(n_rows))


def _column_from_r(column, name, pandas):
    kind = _first_string(_field(column, "kind"))
    r_class = _first_string(_field(column, "class"))
    first_na = int(_field(column, "first_na")[0])
    if first_na:
        position = int(_from_r_index([first_na])[0])
        raise ValueError(
            f"task column {name!r} has a missing value (NA) at position {position} (0-based, "
            f"task$row_ids order). Every row needs a stratum: fill or drop the missing labels "
            f"in R before batching."
        )
    values = _field(column, "values")
    if kind == "factor":
        codes = _from_r_index(values) if values is not None else np.empty(0, np.int64)
        levels = [str(v) for v in _field(column, "levels") or []]
        ordered = bool(_field(column, "ordered")[0])
        return pandas.Categorical.from_codes(codes, categories=levels, ordered=ordered)
    if values is None:
        return np.empty(0, dtype=np.int64) if kind == "integer" else np.empty(0)
    if kind == "integer":
        return np.asarray(values, dtype=np.int64)
    if kind == "double":
        return np.asarray(values, dtype=np.float64)
    if kind == "logical":
        return np.asarray(values, dtype=bool)
    if kind == "character":
        return np.asarray([str(v) for v in values], dtype=object)
    raise TypeError(
        f"task column {name!r} has R class {r_class}, which pystratum.r cannot turn into "
        f"stratum labels; use a factor, character, integer, double or logical column."
    )


def sampler_from_r_task(task, min_samples_per_stratum, **kwargs):
    """A :class:`pystratum.torch.StratifiedBatchSampler` over an R mlr3 task's strata.

    ``StratifiedBatchSampler(strata_from_r_task(task), min_samples_per_stratum,
    **kwargs)``: batches are 0-based positions in ``task$row_ids`` order (add
    one for R positions). Imports PyTorch only when called.
    """
    try:
        from .torch import StratifiedBatchSampler
    except ImportError as error:
        raise ImportError(
            f"sampler_from_r_task needs pystratum.torch and PyTorch ({error}). Install it "
            f"with: pip install 'pystratum[torch]'"
        ) from error
    return StratifiedBatchSampler(strata_from_r_task(task), min_samples_per_stratum, **kwargs)


def _import_pandas(what):
    try:
        import pandas
    except ImportError as error:
        raise ImportError(
            f"{what} returns a pandas DataFrame and needs pandas: pip install "
            f"'pystratum[pandas]'"
        ) from error
    return pandas
