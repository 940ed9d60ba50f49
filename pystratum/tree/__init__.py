"""Declarative sampling trees: a sampler configured by a dict or a YAML file.

A tree's nodes select subsets of a metadata table (one row per example) by
conditions on its columns and choose among their children by ``mode``
(``replacement`` by weight, ``shuffle``, ``sequential``); ``for_each``
clones a node per distinct value, ``repeat`` serves a choice several times
in a row, ``prune`` says what to do with empty nodes, and ``aux`` declares
values drawn with every row (augmentation parameters).

Layout (each part usable and testable alone):

* ``_config``: load (dict, YAML text, path) and validate against the schema.
* ``_nodes``: the DataFrame work: selection, ``for_each``, pruning, weights.
* ``_engine``: the compiled sampler over integer arrays and per-node streams.
* ``_aux``: the auxiliary value generators.
* ``_sampler``: :class:`TreeSampler`, iteration, batches, state, describe.
* ``pystratum.tree.torch``: batch sampler for ``DataLoader``/DDP (imports torch;
  this package does not).

Needs the optional extra ``stratabatch[tree]`` (PyYAML, jsonschema, pandas).
"""

from ._config import TreeConfigError, load_config
from ._sampler import TreeDraws, TreeSampler

__all__ = ["TreeConfigError", "TreeDraws", "TreeSampler", "load_config"]
