"""Griffe extension: the docstrings' reStructuredText markup, read as Markdown.

The docstrings are written for ``help()`` and Sphinx-style readers: roles
(:func:`name`), ``::`` before literal blocks. mkdocstrings renders Markdown,
so a role becomes a code span (``~a.b`` shows ``b``, as in Sphinx) and a
trailing ``::`` a colon; the indented block after it stays a code block.
Nothing in the sources changes.
"""

from __future__ import annotations

import re

from griffe import Extension, Object

_ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|data|exc|obj|const):`(~?)([^`]+)`")


def _role(match: re.Match) -> str:
    short, target = match.group(1), match.group(2)
    return f"`{target.rsplit('.', 1)[-1] if short else target}`"


def markdown(text: str) -> str:
    text = _ROLE.sub(_role, text)
    lines = []
    for line in text.split("\n"):
        if line.strip() == "::":
            continue  # an RST literal-block marker alone on its line
        if line.endswith("::"):
            line = line[:-1]  # "Example::" reads "Example:"
        lines.append(line)
    return "\n".join(lines)


class RstToMarkdown(Extension):
    # on_instance: every object as it is created, modules and packages included
    # (on_object skips the package being loaded).
    def on_instance(self, *, obj: Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
