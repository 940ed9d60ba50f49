"""The embedded R session: starting rpy2 and R, loading the R package, checking what is there.

rpy2 and R start on the first call, not on import. Embedded R is one
interpreter per process and is not thread-safe: every call into R goes
through :meth:`Session.calling`, which serialises threads and applies this
package's converter.
"""

from __future__ import annotations

import contextlib
import os
import threading

__all__ = ["INSTALL_R", "INSTALL_R_PACKAGE", "INSTALL_RPY2", "R_PACKAGE", "Session",
           "r_package_available", "session"]

R_PACKAGE = "pystratum"
INSTALL_RPY2 = "pip install 'stratabatch[r]'"
INSTALL_R = "apt-get install r-base-core r-base-dev"
# The R package goes into R's user library (R_LIBS_USER), which R searches by
# itself: nothing to export in a new shell. The set-up builds it first so the
# vignette is installed too.
INSTALL_R_PACKAGE = ("bash .ci/dev setup (from the root of the pystratum repository: builds "
                     "the R package with its vignette and installs it into R's user library, "
                     "which R searches by itself)")

# Embedded R is single-threaded: calls from several Python threads take turns.
_R_LOCK = threading.RLock()


class Session:
    """rpy2's modules, R's base functions, and the R package's bridge functions.

    The bridge functions (``bridge_*`` in the R package's
    ``R/python_bridge.R``) are looked up in the package namespace once the
    package is known to be installed.
    """

    def __init__(self):
        try:
            import rpy2  # noqa: F401
        except ImportError as error:
            raise ImportError(
                f"pystratum.r needs rpy2 (the Python-R bridge), which is not installed. "
                f"Install it with: {INSTALL_RPY2}"
            ) from error
        # Starting R, rpy2 puts R's library folders in front of LD_LIBRARY_PATH
        # (/usr/lib/R/lib:/usr/lib/x86_64-linux-gnu:...). R is loaded by then, so it
        # needs none of it, but every child process would inherit it: a Python started
        # from this one would load the system's libpython instead of its own and fail
        # on its first compiled module (`import ssl`: undefined symbol). Restored below.
        library_path = os.environ.get("LD_LIBRARY_PATH")
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
                f"finds that R: pip install --force-reinstall 'stratabatch[r]'.{hint}"
            ) from error
        finally:
            _restore_environment("LD_LIBRARY_PATH", library_path)
        self.ri = ri
        self.ro = ro
        self.localconverter = localconverter
        # Results come back as plain rpy2 vectors whatever converters the user
        # activated globally (pandas2ri, numpy2ri): every call runs in this.
        self.converter = ro.default_converter
        self.package_checked = False
        self._namespace = None

    @contextlib.contextmanager
    def calling(self):
        """One call into R: serialised across threads, with this package's converter."""
        with _R_LOCK, self.localconverter(self.converter):
            yield

    def base(self, name: str):
        """A function of R's base package (never shadowed by the user's workspace)."""
        with self.calling():
            return self.ro.baseenv[name]

    def has_package(self, name: str) -> bool:
        """Whether R can use the package ``name``; only this package's own R package is loaded.

        Any other package is looked up on disk and never loaded into this
        process: R's torch bundles a libtorch that cannot share a process
        with PyTorch's, so even asking must not load it.
        """
        with self.calling():
            if name == R_PACKAGE:
                found = self.ro.baseenv["requireNamespace"](name, quietly=True)
            else:
                found = self.ro.baseenv["nzchar"](
                    self.ro.baseenv["system.file"](package=name))
            return bool(found[0])

    def require_package(self, name: str = R_PACKAGE):
        if name == R_PACKAGE and self.package_checked:
            return
        if not self.has_package(name):
            with self.calling():
                paths = list(self.ro.baseenv[".libPaths"]())
            install = (INSTALL_R_PACKAGE if name == R_PACKAGE
                       else f'install.packages("{name}") in R')
            raise RuntimeError(
                f"The R package '{name}' is not installed in any library R searched "
                f"(.libPaths(): {', '.join(paths)}). Install it with: {install}"
            )
        if name == R_PACKAGE:
            self.package_checked = True

    def bridge(self, name: str):
        """The R package's internal function ``name`` (``pystratum:::name``)."""
        if self._namespace is None:
            self.require_package(R_PACKAGE)
            with self.calling():
                self._namespace = self.ro.baseenv["asNamespace"](R_PACKAGE)
        with self.calling():
            return self._namespace[name]


def _restore_environment(name: str, value) -> None:
    """Set ``name`` back to ``value`` (None: unset) for this process and its children."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


_SESSION = None
_SESSION_LOCK = threading.Lock()


def session(require: str | None = R_PACKAGE) -> Session:
    """The R session, started on first use; raises with the install command if absent.

    A failure is not cached, so installing the missing piece and calling
    again works without restarting Python (except R itself, once rpy2 has
    failed to load it).
    """
    global _SESSION
    with _SESSION_LOCK:
        if _SESSION is None:
            _SESSION = Session()
    if require is not None:
        _SESSION.require_package(require)
    return _SESSION


def r_package_available(name: str = R_PACKAGE) -> bool:
    """True if embedded R finds the R package ``name`` (starts R if needed).

    ``pystratum`` is loaded to check it; any other package (e.g. ``torch``)
    is only looked up in R's libraries, never loaded into this process.
    """
    return session(require=None).has_package(name)
