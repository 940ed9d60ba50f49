"""Run the code blocks of the project's markdown documents, so they cannot rot.

Rules for README.md and vignettes/*.md (checked here, stated in the
vignettes' README section "Documentation that runs"):

* A fenced block tagged ``python``, ``r`` or ``bash`` is run. Python blocks
  of one document share one namespace, in order (a vignette reads like a
  notebook); in README.md every block stands alone (fresh process), since
  readers copy single snippets from it. R blocks of a document run, in
  order, in one ``Rscript`` session. Bash blocks run with ``bash -eu`` in the
  document's scratch folder, where the Python blocks ran before them.
* ``python file=NAME`` writes the block to ``NAME`` in the scratch folder
  instead of running it (a script that a later bash block launches, e.g.
  with ``torchrun``).
* ``text`` blocks are output, shown and never run.
* Any block may be kept from running only by the line right before its
  fence being ``<!-- not run: REASON -->``; a block in another language
  without that line is an error, so nothing is skipped silently.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

RUN_LANGUAGES = {"python", "r", "bash"}
SHOWN_ONLY = {"text"}
_FENCE = re.compile(r"^(```+)\s*([A-Za-z]*)\s*(.*)$")
_NOT_RUN = re.compile(r"^<!--\s*not run:\s*\S.*-->$")


@dataclass
class Block:
    doc: str
    line: int  # 1-based line of the opening fence
    language: str
    options: dict
    code: str
    not_run: bool


class DocError(Exception):
    pass


def parse_blocks(text: str, doc: str) -> list:
    blocks = []
    lines = text.splitlines()
    k = 0
    previous = ""
    while k < len(lines):
        match = _FENCE.match(lines[k])
        if not match:
            if lines[k].strip():
                previous = lines[k].strip()
            k += 1
            continue
        fence, language, rest = match.group(1), match.group(2).lower(), match.group(3)
        options = dict(item.split("=", 1) for item in rest.split() if "=" in item)
        start = k
        k += 1
        body = []
        while k < len(lines) and not lines[k].startswith(fence):
            body.append(lines[k])
            k += 1
        if k == len(lines):
            raise DocError(f"{doc}:{start + 1}: code block never closed")
        k += 1
        not_run = bool(_NOT_RUN.match(previous))
        if language not in RUN_LANGUAGES | SHOWN_ONLY and not not_run:
            raise DocError(
                f"{doc}:{start + 1}: a ```{language or '(no language)'} block must be python, "
                f"r, bash or text, or be marked with '<!-- not run: REASON -->' on the line "
                f"before it")
        blocks.append(Block(doc, start + 1, language, options, "\n".join(body) + "\n", not_run))
        previous = ""
    return blocks


def _environment(root: Path) -> dict:
    from tests._env import subprocess_environ

    bin_dir = str(Path(sys.executable).parent)
    env = subprocess_environ()
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env.setdefault("MPLBACKEND", "Agg")
    return env


def _python_driver(blocks) -> str:
    """One script running the python/file/bash blocks in order, tracebacks naming doc:line."""
    parts = ["import subprocess, sys", "from pathlib import Path", "__namespace = {'__name__': "
             "'__main__'}"]
    for block in blocks:
        where = f"{block.doc}:{block.line}"
        if block.language == "python" and "file" in block.options:
            parts.append(f"Path({block.options['file']!r}).write_text({block.code!r})")
        elif block.language == "python":
            parts.append(f"exec(compile({block.code!r}, {where!r}, 'exec'), __namespace)")
        elif block.language == "bash":
            parts.append(
                f"__done = subprocess.run(['bash', '-euo', 'pipefail', '-c', {block.code!r}])\n"
                f"if __done.returncode:\n"
                f"    sys.exit('bash block at {where} failed with exit code ' + "
                f"str(__done.returncode))")
    return "\n".join(parts) + "\n"


def run_document(path: Path, root: Path, scratch: Path, *, standalone: bool,
                 timeout: float = 600, output: list | None = None) -> dict:
    """Run every runnable block of ``path``; raise DocError naming the failing block.

    ``output``: a list that receives the standard output of each run, in order.
    """
    doc = str(path.relative_to(root))
    blocks = [b for b in parse_blocks(path.read_text(encoding="utf-8"), doc)
              if not b.not_run and b.language in RUN_LANGUAGES]
    env = _environment(root)
    scratch.mkdir(parents=True, exist_ok=True)
    flow = [b for b in blocks if b.language in ("python", "bash")]
    r_blocks = [b for b in blocks if b.language == "r"]
    groups = [[b] for b in flow] if standalone else ([flow] if flow else [])
    for group in groups:
        script = scratch / "doc_blocks.py"
        script.write_text(_python_driver(group))
        done = subprocess.run([sys.executable, str(script)], cwd=scratch, env=env,
                              capture_output=True, text=True, timeout=timeout)
        if done.returncode:
            raise DocError(f"{doc}: block(s) at line(s) {[b.line for b in group]} failed:\n"
                           f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        if output is not None:
            output.append(done.stdout)
    r_groups = [[b] for b in r_blocks] if standalone else ([r_blocks] if r_blocks else [])
    for group in r_groups:
        script = scratch / "doc_blocks.R"
        script.write_text("".join(f"# {b.doc}:{b.line}\n{b.code}" for b in group))
        done = subprocess.run(["Rscript", str(script)], cwd=scratch, env=env,
                              capture_output=True, text=True, timeout=timeout)
        if done.returncode:
            raise DocError(f"{doc}: R block(s) at line(s) {[b.line for b in group]} failed:\n"
                           f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return {"python": sum(b.language == "python" for b in blocks),
            "r": len(r_blocks), "bash": sum(b.language == "bash" for b in blocks)}
