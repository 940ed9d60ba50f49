"""Loading and validating tree configs; hostile metadata. Errors name the node path and the fix."""

import numpy as np
import pandas as pd
import pytest

from _tree_data import metadata
from pystratum.tree import TreeConfigError, TreeSampler, load_config

TWO_CLASSES = {"root": {"children": [
    {"column": "active", "value": 1, "weight": 0.3},
    {"column": "active", "value": 0, "weight": 0.7},
]}}

YAML = """
epoch_length: 100
root:
  children:
    - {column: active, value: 1, weight: 0.3}
    - {column: active, value: 0, weight: 0.7}
"""


@pytest.fixture(scope="module")
def frame():
    return metadata(2000)


def with_child(child, mode="replacement"):
    return {"root": {"mode": mode, "children": [{"column": "active", "value": 0}, child]}}


# ------------------------------------------------------------------ loading

def test_dict_yaml_text_and_path_give_the_same_stream(frame, tmp_path):
    path = tmp_path / "tree.yaml"
    path.write_text(YAML)
    as_dict = dict(TWO_CLASSES, epoch_length=100)
    streams = [list(TreeSampler(source, frame, seed=5)) for source in
               (as_dict, YAML, path, str(path))]
    assert all(stream == streams[0] for stream in streams)
    assert len(streams[0]) == 100


def test_load_config_fills_defaults_and_keeps_the_input():
    raw = {"root": {"children": [{"column": "active", "value": 1}]}}
    config = load_config(raw)
    assert config["epoch_length"] is None and config["aux"] == {}
    assert "epoch_length" not in raw


def test_missing_file_and_bad_types():
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_config("no/such/tree.yaml")
    with pytest.raises(TypeError, match=r"config must be a dict, YAML text or a path.*int"):
        load_config(3)


def test_invalid_yaml_names_the_line():
    with pytest.raises(TreeConfigError, match=r"not valid YAML at line 2, column 1: found character"):
        load_config("root:\n\tchildren: []\n")


def test_yaml_that_is_not_a_mapping():
    with pytest.raises(TreeConfigError, match=r"must be a YAML mapping.*list"):
        load_config("- a\n- b\n")


# ------------------------------------------------------- schema: node paths

@pytest.mark.parametrize("config, path, fragment", [
    (with_child({"column": "active", "value": 1, "weight": "heavy"}),
     "root.children[1].weight", "'proportional(count)' or 'proportional(COLUMN)'"),
    (with_child({"column": "active", "value": 1, "weight": -1}),
     "root.children[1].weight", "a number >= 0"),
    (with_child({"column": "active", "value": 1, "weight": True}),
     "root.children[1].weight", "got root.children[1].weight=True"),
    (with_child({"column": "active", "value": 1, "mode": "random"}),
     "root.children[1].mode", "one of 'replacement', 'shuffle', 'sequential'"),
    (with_child({"column": "active", "value": 1, "repeat": 0}),
     "root.children[1].repeat", "a positive integer"),
    (with_child({"column": "active", "value": 1, "repeat": 1.5}),
     "root.children[1].repeat", "a positive integer"),
    (with_child({"column": "active", "value": 1, "prune": "all"}),
     "root.children[1].prune", "'individual'"),
    (with_child({"column": "active", "value": 1, "op": "=~"}),
     "root.children[1].op", "'in'"),
    (with_child({"column": "active", "value": 1, "children": []}),
     "root.children[1].children", "a non-empty list of nodes"),
    ({"root": {"children": [{"column": "active", "value": 1}]}, "epoch_length": 0},
     "epoch_length", "a positive integer"),
])
def test_schema_errors_name_the_path_the_value_and_the_fix(config, path, fragment):
    with pytest.raises(TreeConfigError) as caught:
        load_config(config)
    assert caught.value.path == path
    message = str(caught.value)
    assert message.startswith(f"{path} must be")
    assert fragment in message


def test_unknown_key_suggests_the_close_one():
    with pytest.raises(TreeConfigError, match=r"root.children\[1\] has unknown key.*'wieght' "
                                              r"\(did you mean 'weight'\?\)"):
        load_config(with_child({"column": "active", "value": 1, "wieght": 2}))


def test_config_without_root():
    with pytest.raises(TreeConfigError, match=r"config needs 'root'"):
        load_config({"children": []})


def test_condition_needs_column_and_value():
    with pytest.raises(TreeConfigError, match=r"root.children\[1\] has 'column' but no 'value'"):
        load_config(with_child({"column": "active"}))
    with pytest.raises(TreeConfigError, match=r"root.children\[1\] has 'value' but no 'column'"):
        load_config(with_child({"value": 1}))


def test_several_errors_are_all_listed():
    config = with_child({"column": "active", "value": 1, "mode": "x", "repeat": 0})
    with pytest.raises(TreeConfigError) as caught:
        load_config(config)
    assert "Also:" in str(caught.value) and "repeat" in str(caught.value)


def test_weight_under_a_parent_that_does_not_draw_by_weight():
    config = with_child({"column": "active", "value": 1, "weight": 0.5}, mode="shuffle")
    with pytest.raises(TreeConfigError, match=r"root.children\[1\].weight is used only under a "
                                              r"parent with mode 'replacement'.*'shuffle'.*"
                                              r"set the parent's mode: replacement"):
        load_config(config)


def test_in_needs_a_list_and_comparisons_a_scalar():
    with pytest.raises(TreeConfigError, match=r"root.children\[1\].value must be a non-empty "
                                              r"list for op 'in'"):
        load_config(with_child({"column": "active", "op": "in", "value": 1}))
    with pytest.raises(TreeConfigError, match=r"must be a single value.*Use op: in"):
        load_config(with_child({"column": "active", "value": [1, 2]}))


def test_aux_errors():
    base = {"root": {"children": [{"column": "active", "value": 1}]}}
    with pytest.raises(TreeConfigError, match=r"aux.angle has unknown key.*'hi'"):
        load_config({**base, "aux": {"angle": {"kind": "uniform", "low": 0, "hi": 1}}})
    with pytest.raises(TreeConfigError, match=r"aux.angle must have low < high"):
        load_config({**base, "aux": {"angle": {"kind": "uniform", "low": 1, "high": 1}}})
    with pytest.raises(TreeConfigError, match=r"aux.flip.p must hold one weight"):
        load_config({**base, "aux": {"flip": {"kind": "choice", "values": [1, 2], "p": [1]}}})
    with pytest.raises(TreeConfigError, match=r"aux.flip.kind must be one of"):
        load_config({**base, "aux": {"flip": {"kind": "coin"}}})


# ------------------------------------------------------------- conditions

@pytest.mark.parametrize("op, value, expected", [
    ("==", 3, lambda x: x == 3), ("!=", 3, lambda x: x != 3), ("<", 3, lambda x: x < 3),
    ("<=", 3, lambda x: x <= 3), (">", 3, lambda x: x > 3), (">=", 3, lambda x: x >= 3),
    ("in", [1, 4], lambda x: np.isin(x, [1, 4])),
    ("not in", [1, 4], lambda x: ~np.isin(x, [1, 4])),
])
def test_every_op_selects_what_it_says(op, value, expected):
    frame = pd.DataFrame({"k": np.arange(60) % 6})
    sampler = TreeSampler({"root": {"children": [{"column": "k", "op": op, "value": value}]}},
                          frame, seed=0)
    np.testing.assert_array_equal(sampler.tree.children[0].rows,
                                  np.flatnonzero(expected(frame["k"].to_numpy())))


def test_string_in_condition():
    frame = pd.DataFrame({"s": list("abcabc")})
    sampler = TreeSampler({"root": {"children": [{"column": "s", "op": "in",
                                                  "value": ["a", "c"]}]}}, frame, seed=0)
    assert sampler.tree.rows.tolist() == [0, 2, 3, 5]


# -------------------------------------------------------- hostile metadata

def test_metadata_must_be_a_nonempty_dataframe(frame):
    with pytest.raises(TypeError, match=r"metadata must be a pandas DataFrame.*dict"):
        TreeSampler(TWO_CLASSES, {"active": [0, 1]}, seed=0)
    with pytest.raises(ValueError, match=r"at least one row.*0 rows"):
        TreeSampler(TWO_CLASSES, frame.iloc[:0], seed=0)


def test_missing_column_names_the_node_and_the_columns(frame):
    config = with_child({"column": "activ", "value": 1})
    with pytest.raises(TreeConfigError, match=r"root.children\[1\].column names column 'activ'.*"
                                              r"columns: 'protein', 'active'"):
        TreeSampler(config, frame, seed=0)
    with pytest.raises(TreeConfigError, match=r"root.children\[0\].for_each names column 'prot'"):
        TreeSampler({"root": {"children": [{"for_each": "prot"}]}}, frame, seed=0)


def test_missing_values_in_a_condition_column_are_refused(frame):
    broken = frame.copy()
    broken["active"] = broken["active"].astype(float)
    broken.loc[7, "active"] = np.nan
    with pytest.raises(ValueError, match=r"root.children\[0\].column: column 'active' has 1 "
                                         r"missing value.*row position 7.*fillna"):
        TreeSampler(TWO_CLASSES, broken, seed=0)
    broken = frame.copy()
    broken.loc[3, "protein"] = None
    with pytest.raises(ValueError, match=r"for_each: column 'protein' has 1 missing"):
        TreeSampler({"root": {"children": [{"for_each": "protein"}]}}, broken, seed=0)


def test_value_of_the_wrong_type(frame):
    with pytest.raises(TypeError, match=r"root.children\[1\].value must be a number like the "
                                        r"values of column 'active'.*got.*'1'.*string"):
        TreeSampler(with_child({"column": "active", "value": "1"}), frame, seed=0)
    with pytest.raises(TypeError, match=r"must be a string like the values of column 'source'"):
        TreeSampler(with_child({"column": "source", "value": 1}), frame, seed=0)
    with pytest.raises(TypeError, match=r"value must be a number.*got.*True.*bool"):
        TreeSampler(with_child({"column": "active", "value": True}), frame, seed=0)


def test_comparing_mixed_objects_names_the_node():
    frame = pd.DataFrame({"x": pd.Series([1, "a", 2.5, "b"], dtype=object)})
    with pytest.raises(TypeError, match=r"root.children\[0\]: cannot compare column 'x'"):
        TreeSampler({"root": {"children": [{"column": "x", "op": "<", "value": 2}]}}, frame,
                    seed=0)


def test_proportional_to_a_column(frame):
    config = {"root": {"children": [
        {"column": "active", "value": 1, "weight": "proportional(potency)"},
        {"column": "active", "value": 0, "weight": "proportional(count)"},
    ]}}
    sampler = TreeSampler(config, frame, seed=0)
    actives, inactives = sampler.tree.children
    assert actives.weight == pytest.approx(frame.loc[frame.active == 1, "potency"].sum())
    assert inactives.weight == (frame.active == 0).sum()
    broken = frame.copy()
    broken.loc[broken.index[broken.active == 1][0], "potency"] = -1.0
    with pytest.raises(ValueError, match=r"proportional\(potency\).*negative values"):
        TreeSampler(config, broken, seed=0)
    config["root"]["children"][0]["weight"] = "proportional(source)"
    with pytest.raises(TypeError, match=r"proportional\(source\) needs a numeric column"):
        TreeSampler(config, frame, seed=0)


def test_zero_weights_everywhere(frame):
    config = {"root": {"children": [{"column": "active", "value": 1, "weight": 0},
                                    {"column": "active", "value": 0, "weight": 0}]}}
    with pytest.raises(ValueError, match=r"^root: the weights of its children.*sum to 0"):
        TreeSampler(config, frame, seed=0)


# ----------------------------------------------------------------- pruning

def test_empty_node_without_prune_is_an_error(frame):
    with pytest.raises(ValueError, match=r"root.children\[1\] \(active == 5\) is empty: no row "
                                         r"matches.*Set prune: individual"):
        TreeSampler(with_child({"column": "active", "value": 5}), frame, seed=0)


def test_prune_individual_drops_the_node_and_renormalises(frame):
    config = {"root": {"children": [
        {"column": "active", "value": 1, "weight": 1},
        {"column": "active", "value": 5, "weight": 3, "prune": "individual"},
        {"column": "active", "value": 0, "weight": 1},
    ]}}
    sampler = TreeSampler(config, frame, seed=0)
    assert [c.p_parent for c in sampler.tree.children] == [0.5, 0.5]
    assert sampler.pruned == [("root.children[1]", "no row matches (prune: individual)")]


def test_prune_parent_propagates_up_to_an_individual_node(frame):
    config = {"root": {"children": [
        {"name": "keep", "column": "active", "value": 1},
        {"name": "group", "prune": "individual", "children": [
            {"name": "middle", "children": [
                {"column": "active", "value": 5, "prune": "parent"},
                {"column": "active", "value": 0},
            ]},
        ]},
    ]}}
    sampler = TreeSampler(config, frame, seed=0)
    assert [c.label for c in sampler.tree.children] == ["keep"]
    assert [p for p, _ in sampler.pruned] == ["root.children[1].children[0].children[0]",
                                              "root.children[1].children[0]",
                                              "root.children[1]"]


def test_empty_root_is_a_clear_error(frame):
    config = {"root": {"children": [{"column": "active", "value": 5, "prune": "parent"}]}}
    with pytest.raises(ValueError, match=r"tree is empty after pruning.*root.children\[0\]"):
        TreeSampler(config, frame, seed=0)
    config = {"root": {"column": "active", "value": 7, "prune": "individual"}}
    with pytest.raises(ValueError, match="tree is empty after pruning"):
        TreeSampler(config, frame, seed=0)


def test_proportional_count_uses_the_pruned_subtree(frame):
    config = {"root": {"children": [
        {"column": "active", "value": 1, "weight": "proportional(count)"},
        {"column": "active", "value": 0, "weight": "proportional(count)", "children": [
            {"column": "source", "value": "measured"},
            {"column": "source", "value": "nowhere", "prune": "individual"},
        ]},
    ]}}
    sampler = TreeSampler(config, frame, seed=0)
    inactive = sampler.tree.children[1]
    expected = int(((frame.active == 0) & (frame.source == "measured")).sum())
    assert inactive.weight == expected == inactive.rows.size


# -------------------------------------------------------------------- seeds

def test_seed_conventions(frame):
    fresh = TreeSampler(TWO_CLASSES, frame)
    again = TreeSampler(TWO_CLASSES, frame, seed=fresh.seed)
    np.testing.assert_array_equal(fresh.draw(500).indices, again.draw(500).indices)
    with pytest.raises(TypeError, match="seed must be an integer"):
        TreeSampler(TWO_CLASSES, frame, seed=True)
    with pytest.raises(TypeError, match="Generator"):
        TreeSampler(TWO_CLASSES, frame, seed=np.random.default_rng(0))
    with pytest.raises(ValueError, match="non-negative"):
        TreeSampler(TWO_CLASSES, frame, seed=-1)
    sequence = np.random.SeedSequence(9)
    a = TreeSampler(TWO_CLASSES, frame, seed=sequence).draw(100).indices
    b = TreeSampler(TWO_CLASSES, frame, seed=9).draw(100).indices
    np.testing.assert_array_equal(a, b)


def test_len_without_epoch_length(frame):
    sampler = TreeSampler(TWO_CLASSES, frame, seed=0)
    with pytest.raises(TypeError, match="no length.*epoch_length"):
        len(sampler)
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        sampler.batches(0)
