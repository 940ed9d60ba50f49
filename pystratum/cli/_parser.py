"""The argparse definitions of ``pystratum`` and its subcommands, with the help's examples."""

from __future__ import annotations

import argparse

from .. import __version__
from ..policies import registered_policies
from ..streams._base import RNG_CHOICES
from ._commands import cmd_check, cmd_crosscheck, cmd_plan, cmd_plot

EXAMPLES = {
    "plan": """examples:
  pystratum plan train.csv --stratum label --min 10 --seed 1
  pystratum plan train.csv --stratum label --stratum site --batch-size 64 --format csv -o counts.csv
  pystratum plan train.parquet --stratum label --min 5 --seed 1 --batches --format json -o batches.json
  pystratum plan train.csv --stratum label --policy fixed_size --param batch_size=64 --param min_per_stratum=2
  # --param values are JSON where they parse (numbers, true/false, lists, objects; quote
  # them for the shell), else plain text:
  pystratum plan train.csv --stratum label --policy targets --param 'shares={"pos": 0.5, "neg": 0.5}' --param batch_size=32 --seed 1
  # downsample's base is the policy that batches the kept rows: an int m, or {"name", "params"}:
  pystratum plan train.csv --stratum label --policy downsample --param 'keep={"neg": 0.2}' --param base=5 --seed 1
  pystratum plan train.csv --stratum label --policy downsample --param 'keep={"neg": 0.2}' --param 'base={"name": "fixed_size", "params": {"batch_size": 64}}' --seed 1
  # multi-label data: one 0/1 column per label, or one column of ';'-separated labels:
  pystratum plan train.csv --label cat --label dog --label bird --policy multi_label --batch-size 64 --seed 1
  pystratum plan train.csv --label-list tags --label-sep ';' --policy multi_label --num-batches 40 --min-per-label 2 --seed 1
  # sharded storage: the row groups of a Parquet file, or a shard id column:
  pystratum plan train.parquet --stratum label --batch-size 256 --window 4 --seed 1 --batches --format json -o batches.json
  pystratum plan train.csv --stratum label --min 8 --shard-column shard --window 2 --seed 1
""",
    "check": """examples:
  pystratum check train.csv --stratum label --min 10
  pystratum check train.csv --stratum label --stratum site --batch-size 32
""",
    "crosscheck": """examples:
  pystratum crosscheck train.csv --stratum label --min 10 --seed 42
  pystratum crosscheck train.csv --stratum label --batch-size 64 --seed 7 --epochs 3
""",
    "plot": """examples:
  pystratum plot train.csv --stratum label --min 10 --seed 1 -o composition.png
  pystratum plot train.csv --stratum label --batch-size 64 --compare-plain -o composition.png
""",
}


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def _positive_int(text: str) -> int:
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value


def _nonnegative_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    data = argparse.ArgumentParser(add_help=False)
    group = data.add_argument_group("data")
    group.add_argument("data", metavar="DATA",
                       help="CSV file (header line first), or Parquet (.parquet) / Arrow IPC "
                            "(.arrow, .feather) with pyarrow installed")
    group.add_argument("--stratum", action="append", metavar="COL",
                       help="stratum column; repeat for several (every combination of values "
                            "is one stratum). Give --stratum, or --label/--label-list")
    group.add_argument("--label", action="append", metavar="COL",
                       help="a 0/1 label column (multi-label data, --policy multi_label); "
                            "repeat for every label")
    group.add_argument("--label-list", metavar="COL",
                       help="one column listing each row's labels, separated by --label-sep "
                            "(multi-label data, --policy multi_label); empty: no label")
    group.add_argument("--label-sep", default=";", metavar="SEP",
                       help="separator of --label-list (default ';')")
    group.add_argument("--input-format", choices=["csv", "parquet", "arrow"],
                       help="override the format guessed from DATA's extension")
    group.add_argument("--encoding", default="utf-8-sig",
                       help="CSV text encoding (default utf-8, with or without a byte-order "
                            "mark as Excel writes)")
    group.add_argument("--delimiter", help="CSV delimiter (default: guessed from the header "
                                           "among , ; tab |)")
    policy = data.add_argument_group("policy (give exactly one)")
    policy.add_argument("--min", type=_positive_int, metavar="M",
                        help="MinPerStratum(M): at least M rows of every stratum in every batch")
    policy.add_argument("--batch-size", type=_positive_int, metavar="B",
                        help="FixedSize(B): batches of exactly B rows but a shorter last one, "
                             "every stratum spread evenly (round(N / B) batches of about B rows: "
                             "--policy fixed_size --param batch_size=B --param sizes=balanced)")
    policy.add_argument("--policy", metavar="NAME",
                        help=f"any registered policy by name "
                             f"({', '.join(sorted(registered_policies()))}), with --param")
    policy.add_argument("--num-batches", type=_positive_int, metavar="B",
                        help="--policy multi_label: B batches (instead of --batch-size)")
    policy.add_argument("--min-per-label", type=_positive_int, metavar="M",
                        help="--policy multi_label: at least M positives of every label that "
                             "has enough (default 1)")
    policy.add_argument("--strict", action="store_true",
                        help="--policy multi_label: a label short of its minimum in some batch "
                             "is an error")
    policy.add_argument("--batch-order", choices=("split_safe", "assembled"),
                        help="the order of rows inside a batch, for any policy: split_safe "
                             "(equal chunks of a split batch keep every stratum's share) or "
                             "assembled; default: the policy's (docs/BATCH_ORDER.md)")
    policy.add_argument("--param", action="append", default=[], metavar="K=V",
                        help="a parameter of --policy (value parsed as JSON where it can be, "
                             "e.g. batch_size=64)")
    policy.add_argument("--allow-single-batch", action="store_true",
                        help="accept a plan of one batch holding every row (refused by "
                             "default: a stratum too small for two batches, a batch size at "
                             "least the data's, 0/1 indicator columns as strata)")
    stream = data.add_argument_group("random stream")
    stream.add_argument("--seed", type=_int, metavar="S",
                        help="seed (default: fresh entropy; the plan reports the seed used)")
    stream.add_argument("--rng", choices=list(RNG_CHOICES),
                        help="random stream (default numpy; crosscheck: R); R and torch give "
                             "the R package's batches")
    stream.add_argument("--epoch", type=_nonnegative_int, default=0, metavar="K",
                        help="which epoch's shuffle, 0 first (default 0)")
    stream.add_argument("--no-shuffle", action="store_true",
                        help="keep row order (no seed then)")
    output = data.add_argument_group("output")
    output.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    output.add_argument("-q", "--quiet", action="store_true",
                        help="no progress messages on stderr")
    output.add_argument("-v", "--verbose", action="store_true",
                        help="progress messages on stderr even for small inputs")

    parser = argparse.ArgumentParser(
        prog="pystratum",
        description="Mini-batches that contain every stratum: plan them, check a policy is "
                    "feasible, compare Python with the R package, draw the composition.",
        epilog="Batches and rows are numbered from 0. Exit codes: 0 ok; 1 the answer is no "
               "(check: not feasible; crosscheck: different); 2 usage or input error; "
               "3 a needed optional package is missing.\n\n"
               + EXAMPLES["plan"] + "\n" + EXAMPLES["check"] + "\n" + EXAMPLES["crosscheck"]
               + "\n" + EXAMPLES["plot"],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"pystratum {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name, help_text, function):
        sub = commands.add_parser(name, parents=[data], help=help_text, description=help_text,
                                  epilog=EXAMPLES[name],
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
        sub.set_defaults(function=function)
        return sub

    plan = add("plan", "per-batch x per-stratum counts (or the batches themselves)", cmd_plan)
    plan.add_argument("--format", choices=["table", "json", "csv"], default="table",
                      help="output format (default table)")
    plan.add_argument("--batches", action="store_true",
                      help="output every row's batch (csv: row,batch[,weight]; json: list of "
                           "batches [and weights]) instead of counts; weights appear for "
                           "policies with importance weights")
    plan.add_argument("--max-rows", type=_nonnegative_int, default=20, metavar="N",
                      help="table format: show at most N batches, 0 for all (default 20)")
    shards = plan.add_argument_group(
        "shards (docs/SHARDS.md)",
        "Where each row is stored, so that a batch reads few shards. Without these options "
        "the plan has no shards. A Parquet file's row groups are its default shards, used "
        "when --window is given alone; CSV and Arrow files need --shard-column or "
        "--shard-sizes.")
    shards.add_argument("--shard-column", metavar="COL",
                        help="a column of integer shard ids, one per row")
    shards.add_argument("--shard-sizes", metavar="N,N,...",
                        help="rows stored shard after shard: the rows of each shard, in order")
    shards.add_argument("--window", type=_positive_int, metavar="W",
                        help="shards per block (default 1 with shards): larger mixes more "
                             "shards into a batch and needs a larger cache")
    add("check", "is the policy feasible on DATA; the largest m, the smallest batch size",
        cmd_check)
    cross = add("crosscheck", "run the Python core and the R package on DATA; exit 0 if "
                              "identical", cmd_crosscheck)
    cross.add_argument("--epochs", type=_positive_int, default=1, metavar="N",
                       help="compare N consecutive epochs from --epoch (default 1)")
    plot = add("plot", "stacked bars of per-batch composition, written to a PNG", cmd_plot)
    plot.add_argument("--max-strata", type=_positive_int, default=8, metavar="K",
                      help="draw the K-1 largest strata and sum the rest as 'other' (default 8)")
    plot.add_argument("--compare-plain", action="store_true",
                      help="add a panel of plain shuffled batches of the same mean size")
    return parser
