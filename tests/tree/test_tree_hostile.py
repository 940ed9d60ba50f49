"""Hostile tree configs and states: every outcome is a sampler that works, or a
TypeError/ValueError naming the problem; never another exception, never a
hang or gigabytes of memory.

The hand-picked cases are the reported ones; the property suites throw odd
types, deep nesting, cycles, aliases, huge numbers, unicode and duplicate keys
at the loader, and forged states at ``load_state_dict``. Each suite counts
what it tried (printed at the end of the module with ``-s``).
"""

from __future__ import annotations

import collections
import json
import math
import time

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from pystratum.tree import TreeConfigError, TreeSampler, load_config

from tests.tree.test_tree_properties import configs, frames

FRAME = pd.DataFrame({"a": [0, 1, 2, 3, 0, 1], "b": [0, 1, 2, 0, 1, 2],
                      "g": ["x", "y", "z", "x", "y", "z"]})
TRIED = collections.Counter()


@pytest.fixture(scope="module", autouse=True)
def report_counts():
    yield
    print(f"\ntree hostile inputs tried: {dict(TRIED)}")


def outcome(config, frame=FRAME, suite="config"):
    """Build, draw, resume and describe; the outcome's name ('ok' or the error type)."""
    try:
        sampler = TreeSampler(config, frame, seed=3)
        draws = sampler.draw(40)
        assert all(0 <= i < len(frame) for i in draws.indices.tolist())
        state = json.loads(json.dumps(sampler.state_dict()))
        again = TreeSampler(config, frame, seed=9)
        again.load_state_dict(state)
        np.testing.assert_array_equal(again.draw(20).indices, sampler.draw(20).indices)
        sampler.describe(simulate=200)
        result = "ok"
    except (TypeError, ValueError) as error:
        assert str(error), "an error without a message"
        result = type(error).__name__
    TRIED[f"{suite}: {result}"] += 1
    return result


# -------------------------------------------------------------- YAML bounds

def bomb(levels: int, width: int = 9) -> str:
    """Nested anchors whose last alias stands where a checker reports the value it finds
    (a schema error message quotes the whole expanded value)."""
    anchors = [f"&a0 [{','.join(['x'] * width)}]"]
    for k in range(1, levels):
        anchors.append(f"&a{k} [{','.join([f'*a{k - 1}'] * width)}]")
    return f"root:\n  name: [{','.join(anchors)}]\n  mode: *a{levels - 1}\n"


def test_alias_bomb_is_refused_before_it_expands():
    text = bomb(9)  # 9^9 = 387 million values from about 300 bytes
    assert len(text) < 450
    start = time.perf_counter()
    with pytest.raises(TreeConfigError, match=r"limit of 100,000 values once its aliases are "
                                              r"expanded"):
        load_config(text)
    assert time.perf_counter() - start < 5  # refused at once, not after expanding


def test_a_moderate_alias_bomb_is_refused_too():
    with pytest.raises(TreeConfigError, match="100,000 values"):
        load_config(bomb(6))  # 531,441 values


def test_too_many_aliases_too_long_too_deep():
    many = "x: &x 1\ny: [" + ", ".join(["*x"] * (1001)) + "]\nroot: {}\n"
    with pytest.raises(TreeConfigError, match="limit of 1,000 aliases"):
        load_config(many)
    with pytest.raises(TreeConfigError, match="1,048,576"):
        load_config("root: {}\n#" + "x" * (1 << 20))
    with pytest.raises(TreeConfigError, match="limit of 64 levels"):
        load_config("x: " + "[" * 2000 + "]" * 2000 + "\nroot: {}\n")


def test_python_tags_are_refused():
    for text in ["!!python/object/apply:os.system ['true']\n",
                 "root: !!python/object/apply:os.getcwd []\n",
                 "root: {name: !!python/name:os.system }\n"]:
        with pytest.raises(TreeConfigError, match="could not determine a constructor"):
            load_config(text)


def test_duplicate_keys_are_refused():
    with pytest.raises(TreeConfigError, match=r"gives the key 'root' twice .* line 1 and line 3"):
        load_config("root: {}\nepoch_length: 4\nroot: {mode: shuffle}\n")
    with pytest.raises(TreeConfigError, match="gives the key 'weight' twice"):
        load_config("root:\n  children:\n    - {weight: 1, weight: 2}\n    - {}\n")
    # A merge key is meant to be overridden: not a duplicate.
    config = load_config("root:\n  <<: {mode: shuffle, repeat: 2}\n  mode: sequential\n")
    assert config["root"] == {"mode": "sequential", "repeat": 2}


def test_cycles_and_deep_nesting_are_refused():
    cyclic = {"root": {"children": []}}
    cyclic["root"]["children"].append(cyclic["root"])
    with pytest.raises(TreeConfigError, match=r"contains itself at root.children\[0\]"):
        load_config(cyclic)
    with pytest.raises(TreeConfigError, match="used inside itself through an alias"):
        load_config("root: &r {children: [*r]}\n")
    deep = {"root": {}}
    node = deep["root"]
    for _ in range(2000):
        node["children"] = [{}]
        node = node["children"][0]
    with pytest.raises(TreeConfigError, match="nested deeper than 64 levels"):
        load_config(deep)
    with pytest.raises(TreeConfigError, match="limit of 64 levels"):
        load_config(_deep_yaml(2000))


def _deep_yaml(levels: int) -> str:
    return "root: " + "{children: [" * levels + "{}" + "]}" * levels + "\n"


def test_the_deepest_allowed_tree_works():
    config = {"root": {"mode": "sequential"}}
    node = config["root"]
    for _ in range(31):  # 31 levels below the root: 64 levels of mappings and lists
        node["children"] = [{"mode": "sequential"}]
        node = node["children"][0]
    assert TreeSampler(config, FRAME, seed=1).draw(7).indices.tolist() == [0, 1, 2, 3, 4, 5, 0]


def test_empty_config_text_says_so():
    for text in ["", "   ", "\n"]:
        with pytest.raises(TreeConfigError, match="config is an empty string"):
            load_config(text)


def test_a_directory_is_not_reported_missing(tmp_path):
    with pytest.raises(TreeConfigError, match="is a directory"):
        load_config(tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_config(tmp_path / "missing.yaml")
    with pytest.raises(ValueError, match="does not exist"):  # a config error like the others
        load_config(str(tmp_path / "missing.yaml"))


def test_non_string_keys_and_aux_names_are_refused():
    with pytest.raises(TreeConfigError, match=r"aux has the key 1 of type int"):
        TreeSampler({"root": {}, "aux": {1: {"kind": "uniform", "low": 0, "high": 1}}}, FRAME)
    with pytest.raises(TreeConfigError, match=r"aux has the key 1 of type int"):
        TreeSampler("root: {}\naux: {1: {kind: uniform, low: 0, high: 1}}\n", FRAME)
    with pytest.raises(TreeConfigError, match=r"root has the key True of type bool"):
        load_config({"root": {True: 1, "mode": "shuffle"}})


# -------------------------------------------------------------- size bounds

def test_huge_repeat_is_refused_with_the_memory_it_would_take():
    with pytest.raises(TreeConfigError, match=r"root.children\[0\].repeat=100000000 .*\(763 MiB\)"):
        TreeSampler({"root": {"children": [{"repeat": 10**8}]}}, FRAME, seed=1)
    # The bound is on the product along a path.
    with pytest.raises(TreeConfigError, match=r"up to 25,000,000 draws"):
        TreeSampler({"root": {"repeat": 5000, "children": [{"repeat": 5000}]}}, FRAME)
    sampler = TreeSampler({"root": {"repeat": 4096, "children": [{"repeat": 4096}]}}, FRAME)
    assert sampler.draw(10).indices.shape == (10,)


def test_non_finite_and_out_of_range_numbers_are_refused():
    cases = [
        ({"root": {"children": [{"weight": math.inf}, {}]}}, "finite number >= 0"),
        ({"root": {"children": [{"weight": 10**400}, {}]}}, "finite number >= 0"),
        ({"root": {}, "epoch_length": 2**64}, "at most 9,223,372,036,854,775,807"),
        ({"root": {}, "aux": {"u": {"kind": "uniform", "low": -1e308, "high": 1e308}}},
         "high - low must be a finite number"),
        ({"root": {}, "aux": {"n": {"kind": "normal", "mean": 0, "std": math.nan}}},
         "finite number"),
        ({"root": {}, "aux": {"c": {"kind": "choice", "values": [1, 2], "p": [1, math.inf]}}},
         "finite weights"),
    ]
    for config, message in cases:
        with pytest.raises(TreeConfigError, match=message):
            TreeSampler(config, FRAME, seed=1)


def test_integer_valued_floats_become_ints():
    sampler = TreeSampler({"root": {"repeat": 2.0}, "epoch_length": 6.0}, FRAME, seed=1)
    assert len(sampler) == 6 and isinstance(len(sampler), int)
    assert len(list(sampler)) == 6


# ------------------------------------------------------------ forged states

def _state():
    config = {"root": {"children": [{"column": "a", "op": "<", "value": 2, "mode": "shuffle"},
                                    {"column": "a", "op": ">=", "value": 2}]}}
    sampler = TreeSampler(config, FRAME, seed=4)
    sampler.draw(13)
    return config, sampler.state_dict()


@pytest.mark.parametrize("engine, error, message", [
    ({}, ValueError, r"state_dict\['engine'\] must be a dict with keys 'offset' and 'sources'"),
    ([], TypeError, r"state_dict\['engine'\] must be a dict"),
    ({"sources": [[0, 1]] * 3, "offset": "x"}, TypeError, r"\['offset'\] must be an int >= 0"),
    ({"sources": [[0, 1]] * 3, "offset": 10**12}, ValueError, r"\['offset'\]=1000000000000 is"),
    ({"sources": [[0, 1]] * 3, "offset": -1}, ValueError, r"\['offset'\] must be an int >= 0"),
    ({"sources": [[0, 1]] * 2, "offset": 0}, ValueError, "has 2 node streams but this tree has 3"),
    ({"sources": 5, "offset": 0}, TypeError, r"\['sources'\] must be a list"),
    ({"sources": [[0, 1.5]] * 3, "offset": 0}, TypeError, "one \\[block, position\\] pair of ints"),
    ({"sources": [[0]] * 3, "offset": 0}, TypeError, "one \\[block, position\\] pair of ints"),
    ({"sources": [[0, 2**70]] * 3, "offset": 0}, TypeError, "within 64 bits"),
    ({"sources": [[0, 10**6], [0, 1], [0, 1]], "offset": 0}, ValueError,
     r"\['sources'\]\[0\]=\[0, 1000000\] is not a position"),
    ({"sources": [[-5, 0], [0, 1], [0, 1]], "offset": 0}, ValueError, "is not a position"),
])
def test_forged_engine_states_are_refused_and_change_nothing(engine, error, message):
    config, state = _state()
    sampler = TreeSampler(config, FRAME, seed=4)
    sampler.draw(5)
    expected = TreeSampler(config, FRAME, seed=4).draw(25).indices[5:]
    with pytest.raises(error, match=message):
        sampler.load_state_dict({**state, "engine": engine})
    np.testing.assert_array_equal(sampler.draw(20).indices, expected)


# ------------------------------------------------------------ property suites

KEYS = ["root", "epoch_length", "aux", "name", "column", "op", "value", "for_each", "mode",
        "weight", "repeat", "prune", "children", "kind", "low", "high", "mean", "std",
        "values", "p"]
WORDS = ["replacement", "shuffle", "sequential", "proportional(count)", "proportional(a)",
         "proportional(zz)", "a", "b", "g", "x", "==", "in", "not in", "<", "individual",
         "parent", "error", "uniform", "normal", "choice", "cycle", "1", "ünï", "名前", "\x00",
         "a" * 300]
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.sampled_from([0, 1, 2, 3, 10**8]),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(WORDS), st.text(max_size=6))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=4), st.integers(0, 3),
                              st.booleans()), inner, max_size=5)), max_leaves=25)


@st.composite
def mutated_configs(draw):
    """A valid config with one to three fields replaced, removed or added."""
    config = json.loads(json.dumps(draw(configs)))
    for _ in range(draw(st.integers(1, 3))):
        nodes = [config]
        stack = [config.get("root")]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                nodes.append(node)
                children = node.get("children")
                stack.extend(children if isinstance(children, list) else [])
        node = draw(st.sampled_from(nodes))
        key = draw(st.sampled_from(KEYS))
        action = draw(st.sampled_from(["set", "set", "delete", "aux"]))
        if action == "delete":
            node.pop(key, None)
        elif action == "aux":
            config["aux"] = {draw(st.one_of(st.text(max_size=4), st.integers(0, 3))):
                             draw(st.dictionaries(st.sampled_from(KEYS), SCALARS, max_size=4)
                                  .map(lambda d: {"kind": "uniform", **d}))}
        else:
            node[key] = draw(VALUES)
    return config


@settings(max_examples=300)
@given(config=mutated_configs())
def test_mutated_configs_give_a_sampler_or_a_value_or_type_error(config):
    outcome(config, suite="mutated dict")


@settings(max_examples=150)
@given(config=st.fixed_dictionaries({"root": VALUES},
                                    optional={"aux": VALUES, "epoch_length": SCALARS}))
def test_arbitrary_structures_give_a_sampler_or_a_value_or_type_error(config):
    outcome(config, suite="arbitrary dict")


@st.composite
def hostile_yaml(draw):
    """YAML text: a dumped config, then anchors/aliases, duplicate keys, tags, nesting."""
    config = draw(st.one_of(configs, mutated_configs()))
    text = yaml.safe_dump(json.loads(json.dumps(config, default=str)), allow_unicode=True)
    lines = text.splitlines()
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["duplicate", "alias", "tag", "deep", "bomb", "junk",
                                     "unicode", "number"]))
        at = draw(st.integers(0, len(lines)))
        if kind == "duplicate" and lines:
            lines.insert(at, lines[min(at, len(lines) - 1)])
        elif kind == "alias":
            lines = ["defaults: &d {mode: shuffle, repeat: 2}"] + lines
            lines.insert(min(at + 1, len(lines)), "extra: [*d, *d]")
        elif kind == "tag":
            lines.insert(at, draw(st.sampled_from([
                "x: !!python/object/apply:os.system ['true']", "x: !!binary aGVsbG8=",
                "x: !!set {a, b}", "x: !!timestamp 2024-01-01", "x: !custom 1"])))
        elif kind == "deep":
            depth = draw(st.sampled_from([10, 63, 65, 500, 3000]))
            lines.insert(at, "x: " + "[" * depth + "]" * depth)
        elif kind == "bomb":
            lines = bomb(draw(st.integers(2, 12)), draw(st.integers(2, 12))).splitlines() + lines
        elif kind == "junk":
            lines.insert(at, draw(st.text(max_size=20)))
        elif kind == "unicode":
            lines.insert(at, f"name: {draw(st.text(min_size=1, max_size=8))!r}")
        else:
            lines.insert(at, f"  repeat: {draw(st.sampled_from(['1e400', '.inf', '.nan', '0x10', '-1', '99999999999999999999']))}")
    return "\n".join(lines) + "\n"


@settings(max_examples=250)
@given(text=hostile_yaml())
def test_hostile_yaml_gives_a_sampler_or_a_value_or_type_error(text):
    outcome(text, suite="yaml text")


@settings(max_examples=150)
@given(config=configs, frame=frames(), seed=st.integers(0, 2**32), before=st.integers(0, 200),
       edit=st.sampled_from(["offset", "block", "pos", "drop", "add", "type", "swap"]),
       value=SCALARS)
def test_forged_engine_states_give_a_value_or_type_error(config, frame, seed, before, edit,
                                                         value):
    try:
        sampler = TreeSampler(config, frame, seed=seed)
    except ValueError:
        return
    sampler.draw(before)
    state = json.loads(json.dumps(sampler.state_dict()))
    engine = state["engine"]
    sources = engine["sources"]
    if edit == "offset":
        engine["offset"] = value
    elif edit in ("block", "pos") and sources:
        sources[0][0 if edit == "block" else 1] = value
    elif edit == "drop":
        engine.pop("offset")
    elif edit == "add":
        engine["extra"] = value
    elif edit == "type":
        state["engine"] = value
    elif sources:
        sources[0] = sources[0][::-1]
    expected = sampler.draw(30).indices
    other = TreeSampler(config, frame, seed=seed)
    try:
        other.load_state_dict(state)
        result = "ok"
        other.draw(30)
    except (TypeError, ValueError) as error:
        assert str(error)
        result = type(error).__name__
        # A refused state changes nothing.
        np.testing.assert_array_equal(other.draw(before + 30).indices[before:], expected)
    TRIED[f"engine state: {result}"] += 1
