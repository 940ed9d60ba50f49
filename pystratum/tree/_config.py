"""Tree configs: load (dict, YAML text or a path), validate against a schema, fill defaults.

The schema is a JSON Schema checked by ``jsonschema``; YAML is read with
PyYAML's safe loader. Every error names the place in the config as a node
path (``root.children[1].weight``), the value found and the fix, in the
project's message shape ``<path> must be <what>, got <path>=<value>. <fix>``.
Semantic checks the schema cannot express (a weight under a parent that
does not draw by weight, ``in`` without a list) are made here too, so a
config that loads is one the node builder can trust.
"""

from __future__ import annotations

import copy
import difflib
import os
import re
from pathlib import Path

from .._validation import _show

__all__ = ["TreeConfigError", "load_config", "node_path", "MODES", "OPS", "PRUNE"]

MODES = ("replacement", "shuffle", "sequential")
OPS = ("==", "!=", "<", "<=", ">", ">=", "in", "not in")
PRUNE = ("error", "individual", "parent")
AUX_KINDS = ("uniform", "normal", "choice", "cycle")

_PROPORTIONAL = re.compile(r"^proportional\((?P<what>[^()]+)\)$")
_PROPORTIONAL_PATTERN = r"^proportional\([^()]+\)$"


class TreeConfigError(ValueError):
    """A tree config that cannot be used; ``.path`` is where (``root.children[1].weight``)."""

    def __init__(self, message: str, path: str = "config"):
        super().__init__(message)
        self.path = path


_NODE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "column": {"type": "string", "minLength": 1},
        "op": {"enum": list(OPS)},
        "value": {},
        "for_each": {"type": "string", "minLength": 1},
        "mode": {"enum": list(MODES)},
        "weight": {"anyOf": [
            {"type": "number", "minimum": 0},
            {"type": "string", "pattern": _PROPORTIONAL_PATTERN},
        ]},
        "repeat": {"type": "integer", "minimum": 1},
        "prune": {"enum": list(PRUNE)},
        "children": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/node"}},
    },
    "dependentRequired": {"value": ["column"], "op": ["column"], "column": ["value"]},
}

_AUX_SCHEMA = {
    "type": "object",
    "required": ["kind"],
    "properties": {"kind": {"enum": list(AUX_KINDS)}},
    "allOf": [
        {"if": {"properties": {"kind": {"const": "uniform"}}},
         "then": {"additionalProperties": False,
                  "properties": {"kind": {}, "low": {"type": "number"},
                                 "high": {"type": "number"}},
                  "required": ["low", "high"]}},
        {"if": {"properties": {"kind": {"const": "normal"}}},
         "then": {"additionalProperties": False,
                  "properties": {"kind": {}, "mean": {"type": "number"},
                                 "std": {"type": "number", "minimum": 0}},
                  "required": ["mean", "std"]}},
        {"if": {"properties": {"kind": {"const": "choice"}}},
         "then": {"additionalProperties": False,
                  "properties": {"kind": {}, "values": {"type": "array", "minItems": 1},
                                 "p": {"type": "array", "minItems": 1,
                                       "items": {"type": "number", "minimum": 0}}},
                  "required": ["values"]}},
        {"if": {"properties": {"kind": {"const": "cycle"}}},
         "then": {"additionalProperties": False,
                  "properties": {"kind": {}, "values": {"type": "array", "minItems": 1}},
                  "required": ["values"]}},
    ],
}

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["root"],
    "properties": {
        "root": {"$ref": "#/$defs/node"},
        "epoch_length": {"type": "integer", "minimum": 1},
        "aux": {"type": "object", "additionalProperties": {"$ref": "#/$defs/aux"}},
    },
    "$defs": {"node": _NODE_SCHEMA, "aux": _AUX_SCHEMA},
}

# What each field must be, and how to fix it, for messages about that field.
_FIELD_HELP = {
    "root": ("a node (a mapping)", "Start the config with `root:` followed by a node."),
    "epoch_length": ("a positive integer", "Set epoch_length: <draws per epoch>, or leave it "
                                           "out to draw forever."),
    "aux": ("a mapping of names to generators",
            "e.g. aux: {angle: {kind: uniform, low: 0, high: 360}}."),
    "name": ("a non-empty string", "e.g. name: actives."),
    "column": ("the name of a metadata column (a string)", "e.g. column: active."),
    "op": ("one of " + ", ".join(repr(o) for o in OPS), "Leave op out for equality."),
    "value": ("the value to compare the column with", ""),
    "for_each": ("the name of a metadata column (a string)", "e.g. for_each: protein."),
    "mode": ("one of " + ", ".join(repr(m) for m in MODES),
             "replacement draws by weight, shuffle goes through a shuffled order, sequential "
             "goes in order."),
    "weight": ("a number >= 0, 'proportional(count)' or 'proportional(COLUMN)'",
               "e.g. weight: 0.3, or weight: proportional(count) for the node's row count."),
    "repeat": ("a positive integer", "e.g. repeat: 4 serves each choice 4 times in a row."),
    "prune": ("one of " + ", ".join(repr(p) for p in PRUNE),
              "individual drops an empty node; parent drops its parent too, and so on up to "
              "the first node with prune: individual; error (the default) refuses an empty "
              "node."),
    "children": ("a non-empty list of nodes", "Leave children out for a leaf."),
    "kind": ("one of " + ", ".join(repr(k) for k in AUX_KINDS), ""),
    "low": ("a number", ""), "high": ("a number", ""), "mean": ("a number", ""),
    "std": ("a number >= 0", ""), "values": ("a non-empty list", ""),
    "p": ("a list of numbers >= 0, one per value", ""),
}


def node_path(parts) -> str:
    """``['root', 'children', 1, 'weight']`` -> ``'root.children[1].weight'``."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + str(part)
    return text or "config"


def load_config(config) -> dict:
    """The validated config with defaults filled in (a new dict; the input is not changed).

    ``config``: a dict, YAML text, or a path (``str`` or ``os.PathLike``) to a
    YAML file. Raises TypeError for other types and :class:`TreeConfigError`
    (a ValueError) naming the node path for an invalid config.
    """
    raw = _read(config)
    _validate_schema(raw)
    config = copy.deepcopy(raw)
    config.setdefault("epoch_length", None)
    config.setdefault("aux", {})
    _check_node(config["root"], ["root"], parent_mode=None)
    _check_aux(config["aux"])
    return config


# ---------------------------------------------------------------- reading

def _read(config):
    if isinstance(config, dict):
        return config
    if isinstance(config, os.PathLike):
        return _parse_yaml(_read_file(Path(config)), f"file {os.fspath(config)!r}")
    if isinstance(config, str):
        if "\n" not in config and ":" not in config.split(os.sep)[-1]:
            # One line without a mapping colon: a path, not YAML.
            return _parse_yaml(_read_file(Path(config)), f"file {config!r}")
        return _parse_yaml(config, "YAML text")
    raise TypeError(
        f"config must be a dict, YAML text or a path to a YAML file, got config={_show(config)} "
        f"of type {type(config).__name__}."
    )


def _read_file(path: Path) -> str:
    if not path.is_file():
        raise FileNotFoundError(
            f"config file {os.fspath(path)!r} does not exist. Pass an existing path, YAML text "
            f"(a string with a newline or 'key: value'), or a dict."
        )
    return path.read_text(encoding="utf-8")


INSTALL_TREE = "pip install 'stratabatch[tree]'"


def _parse_yaml(text: str, where: str):
    try:
        import yaml  # PyYAML, the optional extra stratabatch[tree]
    except ImportError as error:  # pragma: no cover - PyYAML is in the tree and dev extras
        raise ImportError(f"YAML configs need PyYAML: {INSTALL_TREE} (or pass a dict).") \
            from error

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error)
        raise TreeConfigError(
            f"config ({where}) is not valid YAML{at}: {problem}. Fix the YAML (indent children "
            f"under their node, quote values with ':' or '#')."
        ) from None
    if not isinstance(data, dict):
        raise TreeConfigError(
            f"config ({where}) must be a YAML mapping with a `root:` node, got a "
            f"{type(data).__name__}: {_show(data)}."
        )
    return data


# ----------------------------------------------------------- schema check

def _validator():
    try:
        import jsonschema
    except ImportError as error:  # pragma: no cover - jsonschema is in the tree and dev extras
        raise ImportError(f"pystratum.tree checks configs with jsonschema: {INSTALL_TREE}.") \
            from error

    return jsonschema.Draft202012Validator(SCHEMA)


def _validate_schema(raw: dict) -> None:
    errors = list(_validator().iter_errors(raw))
    if not errors:
        return
    # Deepest first is the most specific: "root.children[1].weight" before "root".
    errors.sort(key=lambda e: (-len(e.absolute_path), list(map(str, e.absolute_path))))
    messages = []
    seen = set()
    for error in errors:
        message, path = _message(error)
        if message not in seen:
            seen.add(message)
            messages.append((path, message))
    first_path = messages[0][0]
    text = messages[0][1]
    if len(messages) > 1:
        text += "\nAlso:\n" + "\n".join(f"  - {m}" for _, m in messages[1:6])
        if len(messages) > 6:
            text += f"\n  ... and {len(messages) - 6} more"
    raise TreeConfigError(text, first_path)


def _message(error):
    """(message, path) for one jsonschema error, in the project's shape."""
    parts = list(error.absolute_path)
    path = node_path(parts)
    kind = error.validator
    if kind == "additionalProperties":
        allowed = list(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        hints = []
        for key in extra:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        return (f"{path} has unknown key(s) {', '.join(hints)}. Allowed keys: "
                f"{', '.join(allowed)}.", path)
    if kind == "required":
        missing = re.findall(r"'([^']+)' is a required property", error.message)
        name = missing[0] if missing else error.message
        what = _FIELD_HELP.get(name, ("given", ""))
        return (f"{path} needs {name!r} ({what[0]}). {what[1]}".rstrip(), f"{path}.{name}"
                if path != "config" else name)
    if kind == "dependentRequired":
        needed = re.findall(r"'([^']+)'", error.message)
        need, because = (needed + ["?", "?"])[:2]
        if because == "column":
            fix = ("A condition is `column:` plus `value:` (and optionally `op:`); for one "
                   "node per distinct value use for_each instead.")
        else:
            fix = "A condition needs both `column:` and `value:` (and optionally `op:`)."
        return f"{path} has {because!r} but no {need!r}. {fix}", path
    if kind == "minItems" and isinstance(error.instance, list) and not error.instance:
        field = parts[-1] if parts else "config"
        what, fix = _FIELD_HELP.get(field, ("a non-empty list", ""))
        return f"{path} must be {what}, got {path}=[]. {fix}".rstrip(), path
    field = _field_of(parts)
    if field is not None:
        what, fix = _FIELD_HELP[field]
        return f"{path} must be {what}, got {path}={_show(error.instance)}. {fix}".rstrip(), path
    return f"{path}: {error.message}.", path


def _field_of(parts):
    for part in reversed(parts):
        if isinstance(part, str) and part in _FIELD_HELP:
            # Inside a node's children list the field is the node itself.
            return part if part == parts[-1] else None
    return None


# --------------------------------------------------------- semantic check

def _check_node(node: dict, parts: list, parent_mode) -> None:
    path = node_path(parts)
    if "weight" in node and parent_mode is not None and parent_mode != "replacement":
        raise TreeConfigError(
            f"{path}.weight is used only under a parent with mode 'replacement', but the "
            f"parent {node_path(parts[:-2])} has mode {parent_mode!r}. Remove the weight, or "
            f"set the parent's mode: replacement.", f"{path}.weight")
    if "weight" in node and parent_mode is None:
        raise TreeConfigError(
            f"{path}.weight has no effect on the root (there is nothing to choose it "
            f"against). Remove it.", f"{path}.weight")
    op = node.get("op", "==")
    if "column" in node:
        value = node["value"]
        if op in ("in", "not in"):
            if not isinstance(value, list) or not value:
                raise TreeConfigError(
                    f"{path}.value must be a non-empty list for op {op!r}, got "
                    f"{path}.value={_show(value)}. e.g. value: [a, b].", f"{path}.value")
        elif isinstance(value, (list, dict)) or value is None:
            raise TreeConfigError(
                f"{path}.value must be a single value (number, string or bool) for op {op!r}, "
                f"got {path}.value={_show(value)}. Use op: in for a list of values.",
                f"{path}.value")
    mode = node.get("mode", "replacement")
    for index, child in enumerate(node.get("children", ())):
        _check_node(child, parts + ["children", index], mode)


def _check_aux(aux: dict) -> None:
    for name, spec in aux.items():
        path = f"aux.{name}"
        if spec["kind"] == "uniform" and not spec["low"] < spec["high"]:
            raise TreeConfigError(
                f"{path} must have low < high, got low={spec['low']!r}, high={spec['high']!r}.",
                path)
        if spec["kind"] == "choice" and "p" in spec:
            p = spec["p"]
            if len(p) != len(spec["values"]) or sum(p) <= 0:
                raise TreeConfigError(
                    f"{path}.p must hold one weight >= 0 per value (sum > 0), got "
                    f"{path}.p={_show(p)} for {len(spec['values'])} values.", f"{path}.p")


def parse_weight(weight):
    """``None`` (default, equal), a float, ``('count',)`` or ``('column', NAME)``."""
    if weight is None:
        return None
    if isinstance(weight, str):
        what = _PROPORTIONAL.match(weight).group("what").strip()
        return ("count",) if what == "count" else ("column", what)
    return float(weight)
