"""How a stratum label reads as text: the one rule for people and the one for matching.

* :func:`label_text`: what people read (tables, figures, the command line):
  ``str`` of the label, a multi-column label's parts joined by ``"/"``.
* :func:`shown_label`: ``label_text`` in a text table or a legend, quoted where
  it would not read as itself (empty, line breaks, edge spaces, ``", "``).
* :func:`label_key`: what a policy's parameters name a stratum by (JSON keys
  are strings), the same text in R: integers and integral floats print as
  integers (``1`` and ``1.0`` are ``"1"``), booleans as ``"TRUE"`` /
  ``"FALSE"``, other floats by ``repr``, parts joined by ``"/"``.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["label_key", "label_text", "shown_label"]


def label_text(label) -> str:
    """The label as people read it: ``str``, a tuple's parts joined by ``"/"``."""
    if isinstance(label, tuple):
        return "/".join(str(part) for part in label)
    return str(label)


def shown_label(label) -> str:
    """:func:`label_text` as a table cell or legend entry shows it: quoted (``repr``) when the
    plain text would not read as one label: empty (an invisible column), holding line breaks,
    tabs or other unprintable characters (a broken table), spaces at an end, or ``", "`` (the
    separator of a classes list). Other labels are their plain text."""
    text = label_text(label)
    if text == "" or not text.isprintable() or text != text.strip() or ", " in text:
        return repr(text)
    return text


def label_key(label) -> str:
    """The text that names a stratum in a policy's parameters, as R writes it too.

    Strings stay as they are; integers and integral floats print as integers
    (``1`` and ``1.0`` are ``"1"``, as R prints them); booleans are ``"TRUE"``
    / ``"FALSE"`` (R's spelling); other floats use ``repr``; a multi-column
    label joins its parts with ``"/"``. The R package uses the same rule, so
    a policy recorded in one language names the same strata in the other.
    """
    if isinstance(label, tuple):
        return "/".join(label_key(part) for part in label)
    if isinstance(label, (bool, np.bool_)):
        return "TRUE" if label else "FALSE"
    if isinstance(label, (numbers.Integral, np.integer)):
        return str(int(label))
    if isinstance(label, (float, np.floating)):
        value = float(label)
        if value.is_integer():
            return str(int(value))
        return repr(value)
    return str(label)
