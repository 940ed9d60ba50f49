"""Put the repository's documents into the mkdocs build (run by the gen-files plugin).

Each page is the repository's own file, written into the build at its
repository path (README.md is the home page: mkdocs serves a README.md as
the folder's index), so the relative links between them need no rewriting
and nothing is copied into the repository. The navigation (SUMMARY.md, read
by literate-nav) lists every vignette found, so a new vignette is a page
without editing any configuration; the CLI reference is the command's own
argparse help, rendered at build time.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[2]

# (page title, repository path): the pages besides the vignettes.
GUIDES = [
    ("Benchmarks", "benchmarks/results.md"),
    ("Focused benchmarks", "benchmarks/results_focused.md"),
    ("Architecture", "docs/ARCHITECTURE.md"),
    ("Accepted inputs", "docs/INPUTS.md"),
    ("Order inside a batch", "docs/BATCH_ORDER.md"),
    ("Sharded storage", "docs/SHARDS.md"),
]
# (page title, reference page in docs/website/reference/).
REFERENCE = [
    ("pystratum", "reference/pystratum.md"),
    ("pystratum.policies", "reference/policies.md"),
    ("pystratum.torch", "reference/torch.md"),
    ("pystratum.tree", "reference/tree.md"),
    ("pystratum.negatives", "reference/negatives.md"),
    ("pystratum.shards", "reference/shards.md"),
    ("pystratum.r", "reference/r.md"),
    ("pystratum.integrations", "reference/integrations.md"),
    ("The pystratum command", "reference/cli.md"),
]
FIRST_VIGNETTE = "quickstart.md"


def vignettes() -> list:
    """vignettes/*.md, the quick start first: (title from the first heading, path)."""
    found = sorted((ROOT / "vignettes").glob("*.md"),
                   key=lambda p: (p.name != FIRST_VIGNETTE, p.name))
    return [(title_of(p), f"vignettes/{p.name}") for p in found]


def title_of(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            # Markdown link text: backticks kept, brackets would end the link.
            return re.sub(r"[\[\]]", "", line[2:].strip())
    raise ValueError(f"{path.relative_to(ROOT)} has no '# ' title line; every page needs one")


def mirror(path: str) -> None:
    with mkdocs_gen_files.open(path, "wb") as out:
        out.write((ROOT / path).read_bytes())
    if path.endswith(".md"):
        mkdocs_gen_files.set_edit_path(path, f"../../{path}")


def cli_page() -> str:
    from pystratum.cli._parser import build_parser

    parser = build_parser()
    parser.prog = "pystratum"
    parts = ["# The `pystratum` command\n",
             "The command's own `--help` texts (generated from its argument parser when the "
             "site is built). Reading and checking the input: "
             "[Accepted inputs](../docs/INPUTS.md).\n",
             "```text\n" + parser.format_help() + "```\n"]
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for action in subparsers:
        for name, sub in action.choices.items():
            parts.append(f"## `pystratum {name}`\n")
            parts.append("```text\n" + sub.format_help() + "```\n")
    return "\n".join(parts)


def r_placeholder() -> str:
    # pkgdown's site replaces this page: `bash .ci/dev docs` builds it into r/.
    return ("# R package\n\nThe R package's site (reference, vignette, news) is built by "
            "pkgdown into this folder: run `bash .ci/dev docs`.\n")


def summary(pages_vignettes: list) -> str:
    lines = ["* [Home](README.md)", "* Vignettes"]
    lines += [f"    * [{title}]({path})" for title, path in pages_vignettes]
    lines.append("* API reference")
    lines += [f"    * [{title}]({path})" for title, path in REFERENCE]
    lines += [f"* [{title}]({path})" for title, path in GUIDES]
    lines.append("* [R package](r/index.md)")
    return "\n".join(lines) + "\n"


def main() -> None:
    found = vignettes()
    for path in ["README.md"] + [p for _, p in found] + [p for _, p in GUIDES]:
        mirror(path)
    for figure in sorted((ROOT / "docs" / "figures").rglob("*")):
        if figure.is_file():
            mirror(str(figure.relative_to(ROOT)))
    with mkdocs_gen_files.open("reference/cli.md", "w") as out:
        out.write(cli_page())
    with mkdocs_gen_files.open("r/index.md", "w") as out:
        out.write(r_placeholder())
    with mkdocs_gen_files.open("SUMMARY.md", "w") as out:
        out.write(summary(found))


main()
