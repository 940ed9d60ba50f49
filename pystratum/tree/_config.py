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
import math
import os
import re
from pathlib import Path

from ..base._validation import _show

__all__ = ["TreeConfigError", "load_config", "node_path", "MODES", "OPS", "PRUNE", "LIMITS"]

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


class TreeConfigFileNotFound(TreeConfigError, FileNotFoundError):
    """A config path that names no file (a ValueError like every config error, and a
    FileNotFoundError as before)."""


# Bounds checked before a config is expanded or validated. A tree config is a
# few kilobytes; these are far above any real one and far below what exhausts
# memory, time or the stack (YAML anchors and aliases can make a 300-byte text
# expand to gigabytes; a deep or cyclic structure overflows recursive checkers).
LIMITS = {
    "bytes": 1 << 20,        # YAML text (characters)
    "aliases": 1_000,        # YAML aliases (*name)
    "values": 100_000,       # mappings, lists and scalars, aliases expanded
    "depth": 64,             # nesting of mappings and lists
}
# Draws one entry into the root may yield (the product of the repeats along a
# path): the engine builds a segment whole, 8 bytes per draw.
MAX_SEGMENT = 1 << 24
MAX_EPOCH_LENGTH = (1 << 63) - 1  # len() must fit in a C ssize_t


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
    _check_bounds(raw)
    _check_keys(raw)
    _validate_schema(raw)
    config = copy.deepcopy(raw)
    config.setdefault("epoch_length", None)
    config.setdefault("aux", {})
    if config["epoch_length"] is not None:
        config["epoch_length"] = _whole(config["epoch_length"], "epoch_length", MAX_EPOCH_LENGTH,
                                        "a count of draws")
    _check_node(config["root"], ["root"], parent_mode=None, segment=1)
    _check_aux(config["aux"])
    return config


def _whole(value, path: str, most: int, what: str) -> int:
    """An integer-valued field as an int (JSON Schema counts 2.0 as an integer), bounded."""
    value = int(value)
    if value > most:
        raise TreeConfigError(
            f"{path} must be at most {most:,} ({what}), got {path}={value}. Use a smaller "
            f"value.", path)
    return value


# ----------------------------------------------------------------- bounds

def _check_bounds(data, where: str = "config") -> None:
    """Refuse cycles, nesting deeper than LIMITS['depth'] and more than
    LIMITS['values'] values (shared sub-structures counted at every use), before
    anything walks the config recursively or copies it."""
    sizes = {}     # id -> values in the expanded sub-structure (shared ones counted once here)
    enclosing = set()

    def visit(value, parts, depth):
        if not isinstance(value, (dict, list, tuple)):
            return 1
        key = id(value)
        if key in enclosing:
            raise TreeConfigError(
                f"{where} contains itself at {node_path(parts)} (a cycle, e.g. a YAML alias to "
                f"an enclosing node, or a dict that holds itself); a tree config must be a "
                f"tree. Repeat the node's text instead.", node_path(parts))
        if key in sizes:
            return sizes[key]
        if depth > LIMITS["depth"]:
            raise TreeConfigError(
                f"{where} is nested deeper than {LIMITS['depth']} levels of mappings and lists "
                f"(at {_short_path(parts)}); a tree's levels are a few. Flatten the tree "
                f"(for_each makes one node per value without nesting).", node_path(parts[:3]))
        enclosing.add(key)
        total = 1
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for name, item in items:
            total += visit(item, parts + [name], depth + 1)
            if total > LIMITS["values"]:
                raise TreeConfigError(
                    f"{where} holds more than {LIMITS['values']:,} values (mappings, lists and "
                    f"scalars, each YAML alias expanded where it is used); a tree config holds "
                    f"a few hundred. Use for_each instead of listing nodes, and check the "
                    f"config for anchors/aliases that nest each other.", node_path(parts[:3]))
        enclosing.discard(key)
        sizes[key] = total
        return total

    visit(data, [], 0)


def _short_path(parts) -> str:
    text = node_path(parts)
    return text if len(text) <= 120 else text[:60] + " ... " + text[-55:]


def _check_keys(data) -> None:
    """Mapping keys are strings (YAML reads ``1:`` and ``true:`` as other types)."""
    def visit(value, parts):
        if isinstance(value, dict):
            for name, item in value.items():
                if not isinstance(name, str):
                    raise TreeConfigError(
                        f"{node_path(parts) if parts else 'config'} has the key {name!r} of type "
                        f"{type(name).__name__}; keys (node fields and aux names) must be "
                        f"strings. In YAML quote it: '{name}':", node_path(parts))
                visit(item, parts + [name])
        elif isinstance(value, (list, tuple)):
            for index, item in enumerate(value):
                visit(item, parts + [index])

    visit(data, [])


# ---------------------------------------------------------------- reading

def _read(config):
    if isinstance(config, dict):
        return config
    if isinstance(config, os.PathLike):
        return _parse_yaml(_read_file(Path(config)), f"file {os.fspath(config)!r}")
    if isinstance(config, str):
        if not config.strip():
            raise TreeConfigError(
                f"config is an empty string ({_show(config)}): pass YAML text with a `root:` "
                f"node, the path of a YAML file, or a dict.")
        if "\n" not in config and ":" not in config.split(os.sep)[-1]:
            # One line without a mapping colon: a path, not YAML.
            return _parse_yaml(_read_file(Path(config)), f"file {config!r}")
        return _parse_yaml(config, "YAML text")
    raise TypeError(
        f"config must be a dict, YAML text or a path to a YAML file, got config={_show(config)} "
        f"of type {type(config).__name__}."
    )


def _read_file(path: Path) -> str:
    try:
        is_dir, is_file = path.is_dir(), path.is_file()
    except (OSError, ValueError):  # a name the system cannot hold (too long, NUL)
        is_dir = is_file = False
    if is_dir:
        raise TreeConfigError(
            f"config {os.fspath(path)!r} is a directory; pass the path of a YAML file, YAML "
            f"text or a dict.")
    if not is_file:
        raise TreeConfigFileNotFound(
            f"config file {os.fspath(path)!r} does not exist. Pass an existing path, YAML text "
            f"(a string with a newline or 'key: value'), or a dict."
        )
    size = path.stat().st_size
    if size > LIMITS["bytes"]:
        raise TreeConfigError(
            f"config file {os.fspath(path)!r} is {size:,} bytes, more than the {LIMITS['bytes']:,}"
            f" a tree config may have (they are a few kilobytes). Is it the right file?")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise TreeConfigError(
            f"config file {os.fspath(path)!r} is not UTF-8 text (byte {error.start}). Save it "
            f"as UTF-8.") from None


INSTALL_TREE = "pip install 'stratabatch[tree]'"


def _parse_yaml(text: str, where: str):
    try:
        import yaml  # PyYAML, the optional extra stratabatch[tree]
    except ImportError as error:  # pragma: no cover - PyYAML is in the tree and dev extras
        raise ImportError(f"YAML configs need PyYAML: {INSTALL_TREE} (or pass a dict).") \
            from error

    if len(text) > LIMITS["bytes"]:
        raise TreeConfigError(
            f"config ({where}) is {len(text):,} characters long, more than the "
            f"{LIMITS['bytes']:,} a tree config may have (they are a few kilobytes).")
    try:
        data = yaml.load(text, Loader=_loader_class(yaml, where))
    except RecursionError:  # pragma: no cover - the depth bound comes first
        raise TreeConfigError(f"config ({where}) is nested too deeply.") from None
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


def _loader_class(yaml, where: str):
    """PyYAML's safe loader (no ``!!python`` tags), bounded while it composes.

    Composition is where anchors and aliases are still a small graph: aliases,
    nodes and nesting are counted there, and the size the document would have
    with every alias expanded is computed on that graph (each node once)
    before any Python object is built. A key given twice in one mapping is
    refused (YAML would keep the last one silently).
    """

    def limit(what: str, mark, detail: str):
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        return TreeConfigError(
            f"config ({where}) exceeds the limit of {LIMITS[what]:,} {detail}{at}. A tree config "
            f"is a few kilobytes; check it for anchors and aliases that nest each other, or "
            f"flatten it (for_each makes one node per value).")

    class BoundedLoader(yaml.SafeLoader):
        aliases = 0
        composed = 0
        depth = 0

        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                self.aliases += 1
                if self.aliases > LIMITS["aliases"]:
                    raise limit("aliases", self.peek_event().start_mark, "aliases (*name)")
            self.composed += 1
            if self.composed > LIMITS["values"]:
                raise limit("values", self.peek_event().start_mark, "values")
            self.depth += 1
            try:
                if self.depth > LIMITS["depth"]:
                    raise limit("depth", self.peek_event().start_mark,
                                "levels of nested mappings and lists")
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

        def construct_document(self, node):
            _expanded_size(yaml, node, limit)
            return super().construct_document(node)

        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                seen = {}
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue  # '<<: *defaults' is meant to be overridden
                    key = self.construct_object(key_node, deep=True)
                    try:
                        first = seen.setdefault(key, key_node.start_mark)
                    except TypeError:
                        continue  # an unhashable key: the base class reports it
                    if first is not key_node.start_mark:
                        mark = key_node.start_mark
                        raise TreeConfigError(
                            f"config ({where}) gives the key {key!r} twice in one mapping, at "
                            f"line {first.line + 1} and line {mark.line + 1}; YAML would keep "
                            f"only the last one. Remove or merge one of them.")
            return super().construct_mapping(node, deep=deep)

    return BoundedLoader


def _expanded_size(yaml, root, limit) -> int:
    """Values in the document with every alias expanded, from the composed graph.

    Each node is sized once (aliases share nodes, so this is linear in the
    text); a node reached from inside itself is a cycle and refused.
    """
    sizes = {}
    enclosing = set()

    def size(node, depth):
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in enclosing:
            mark = node.start_mark
            raise TreeConfigError(
                f"config contains itself: the node at line {mark.line + 1}, column "
                f"{mark.column + 1} is used inside itself through an alias; a tree config must "
                f"be a tree. Repeat the node's text instead.")
        if isinstance(node, yaml.ScalarNode):
            return 1
        enclosing.add(key)
        total = 1
        children = (node.value if isinstance(node, yaml.SequenceNode)
                    else [part for pair in node.value for part in pair])
        for child in children:
            total += size(child, depth + 1)
            if total > LIMITS["values"]:
                raise limit("values", node.start_mark,
                            "values once its aliases are expanded, for the node")
        enclosing.discard(key)
        sizes[key] = total
        return total

    return size(root, 0)


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
        extra = sorted(set(error.instance) - set(allowed), key=repr)
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

def _finite(value) -> bool:
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an int beyond a float's range
        return False


def _check_node(node: dict, parts: list, parent_mode, segment: int) -> None:
    path = node_path(parts)
    if "weight" in node and not isinstance(node["weight"], str) and not _finite(node["weight"]):
        raise TreeConfigError(
            f"{path}.weight must be a finite number >= 0, got {path}.weight="
            f"{_show(node['weight'])}. e.g. weight: 0.3.", f"{path}.weight")
    if "repeat" in node:
        node["repeat"] = int(node["repeat"])
    segment *= node.get("repeat", 1)
    if segment > MAX_SEGMENT:
        raise TreeConfigError(
            f"{path}.repeat={node.get('repeat', 1)} makes one entry into the root yield up to "
            f"{segment:,} draws in a row (the product of the repeats from the root down to "
            f"{path}); the sampler builds such a run in memory ({segment * 8 / 2**20:,.0f} MiB). "
            f"Keep the product of the repeats along any path at most {MAX_SEGMENT:,}.",
            f"{path}.repeat")
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
        elif isinstance(value, (list, dict, tuple, set)) or value is None:
            raise TreeConfigError(
                f"{path}.value must be a single value (number, string or bool) for op {op!r}, "
                f"got {path}.value={_show(value)}. Use op: in for a list of values.",
                f"{path}.value")
        if op in ("in", "not in"):
            for item in value:
                if isinstance(item, (list, dict, tuple, set)) or item is None:
                    raise TreeConfigError(
                        f"{path}.value must list single values (numbers, strings or bools) "
                        f"for op {op!r}, got the item {_show(item)}. e.g. value: [a, b].",
                        f"{path}.value")
    mode = node.get("mode", "replacement")
    for index, child in enumerate(node.get("children", ())):
        _check_node(child, parts + ["children", index], mode, segment)


def _check_aux(aux: dict) -> None:
    for name, spec in aux.items():
        path = f"aux.{name}"
        if not name:
            raise TreeConfigError(
                "aux names must be non-empty strings, got ''. Name the generator, e.g. "
                "aux: {angle: {kind: uniform, low: 0, high: 360}}.", "aux")
        for field in ("low", "high", "mean", "std"):
            if field in spec and not _finite(spec[field]):
                raise TreeConfigError(
                    f"{path}.{field} must be a finite number, got {path}.{field}="
                    f"{_show(spec[field])}.", f"{path}.{field}")
        if spec["kind"] == "uniform" and not _finite(float(spec["high"]) - float(spec["low"])):
            raise TreeConfigError(
                f"{path}: high - low must be a finite number, got low={spec['low']!r}, "
                f"high={spec['high']!r}. Use a narrower range.", path)
        if "p" in spec and not all(_finite(x) for x in spec["p"]):
            raise TreeConfigError(
                f"{path}.p must hold finite weights >= 0, got {path}.p={_show(spec['p'])}.",
                f"{path}.p")
        for item in spec.get("values", ()):
            if isinstance(item, (dict, set)):
                raise TreeConfigError(
                    f"{path}.values must hold plain values (numbers, strings, bools, lists), got "
                    f"the item {_show(item)}.", f"{path}.values")
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
