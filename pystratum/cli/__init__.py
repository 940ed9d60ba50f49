"""The ``pystratum`` command: plan, check, crosscheck and plot stratified batches of a file.

Installed as the console script ``pystratum`` (and ``python -m pystratum``).
Reads the stratum column(s) of a CSV file (standard library ``csv``) or a
Parquet / Arrow IPC file (pyarrow, the ``arrow`` extra), builds the plan with
the core and prints or writes it. A CSV file is read the same way with or
without pyarrow: a row with another number of fields than the header is
refused naming its line, a cell of any length is read (the ``csv`` module's
field limit is lifted), and ``--encoding`` takes text encodings only (not
codecs such as ``rot13`` or ``base64``).

Exit codes: 0 success; 1 the answer is "no" (``check``: the policy is not
feasible; ``crosscheck``: Python and R differ); 2 a usage or input error
(bad option, unreadable file, missing column, bad value); 3 a needed
optional component is missing (pyarrow, matplotlib, R or rpy2).
User errors print one ``pystratum: error: ...`` line, never a traceback.

The modules by job: ``_parser`` (the argparse definitions and the help's
examples), ``_commands`` (the subcommands), ``_data`` (reading DATA),
``_policy`` (the policy from the flags), ``_labels`` (multi-label input:
``--label``/``--label-list`` -> a label matrix, ``--policy multi_label``), ``_output`` (writing a plan),
``_errors`` (``UserError``, the exit codes), ``_progress`` (stage messages).
"""

from __future__ import annotations

import atexit
import os
import sys

from ._data import read_strata
from ._errors import EXIT_OK, EXIT_USAGE, UserError, cli_wording
from ._parser import EXAMPLES, build_parser  # noqa: F401 - EXAMPLES re-exported
from ._progress import _Progress

__all__ = ["main", "read_strata", "run"]


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.rng is None:
        # crosscheck compares with R, whose streams are "R" and "torch".
        args.rng = "R" if args.command == "crosscheck" else "numpy"
    if not args.stratum and not args.label and args.label_list is None:
        parser.error("give the stratum column(s) with --stratum COL, or for multi-label data "
                     "the labels with --label COL (repeated) or --label-list COL")
    if args.stratum and (args.label or args.label_list is not None):
        parser.error("give either --stratum (strata) or --label/--label-list (multi-label "
                     "data), not both")
    if args.command == "plot" and not args.output:
        parser.error("plot needs --output FILE.png")
    if args.no_shuffle and args.seed is not None:
        parser.error("--seed has no effect with --no-shuffle (batches follow row order): "
                     "drop one of them")
    progress = _Progress(args.verbose and not args.quiet)
    try:
        return args.function(args, progress)
    except UserError as error:
        print(f"pystratum: error: {error}", file=sys.stderr)
        return error.code
    except (ValueError, TypeError) as error:
        # The core's argument and data checks: their messages name the value and the fix.
        print(f"pystratum: error: {cli_wording(str(error))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("pystratum: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `pystratum plan ... | head` closes the pipe early: not an error.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK


def run() -> None:
    """The console script and ``python -m pystratum``: :func:`main`, whose exit code the
    process ends with once the ``atexit`` hooks have run (coverage, logging) and the output
    is flushed, skipping the interpreter's and native libraries' teardown. pyarrow's
    thread pools can abort that teardown ("terminate called without an active exception",
    SIGABRT, apache/arrow#34314) after every line is written: 1 in 200 ``pystratum plan``
    calls of a small CSV here, exit code 134 for a finished command."""
    code = main()  # argparse's own exits (--help, usage errors) come before any pyarrow
    atexit._run_exitfuncs()  # what sys.exit would run first; exiting runs none twice
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):  # a reader gone, a stream closed: as main
            pass
    os._exit(code)


if __name__ == "__main__":
    run()
