"""The policy from the flags: ``--min``, ``--batch-size`` or ``--policy NAME --param k=v``."""

from __future__ import annotations

import json

from ..policies import FixedSize, MinPerStratum, Policy, policy_from_params, registered_policies
from ._errors import UserError
from ._labels import MULTI_LABEL, label_options_given, multi_label_policy


def _param_value(text: str, key: str = ""):
    """``k=v`` values: JSON where it parses (numbers, true/false, lists), else the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text
    except RecursionError:
        # json's decoder recurses once per nesting level: thousands of "[" exhaust the stack.
        raise UserError(f"--param {key}=...: the value is JSON nested too deeply for Python to "
                        f"read ({len(text):,} characters); policy parameters are numbers, "
                        f"text or short lists.") from None


def policy_from_args(args) -> Policy:
    """The policy the flags describe, with ``--batch-order`` when given."""
    policy = _policy_from_flags(args)
    order = getattr(args, "batch_order", None)
    if order is None:
        return policy
    params = policy.params()
    if "batch_order" in params:
        raise UserError(f"batch_order is given twice (--param batch_order={params['batch_order']} "
                        f"and --batch-order {order}); give it once.")
    return policy_from_params(policy.name, {**params, "batch_order": order})


def _policy_from_flags(args) -> Policy:
    labels = label_options_given(args)
    if args.policy == MULTI_LABEL:
        if not labels:
            raise UserError(f"--policy {MULTI_LABEL} reads labels, not strata: give --label COL "
                            f"(one 0/1 column per label, repeated) or --label-list COL.")
        if args.min is not None:
            raise UserError(f"--min goes with --stratum; --policy {MULTI_LABEL} takes "
                            f"--min-per-label.")
        return multi_label_policy(args)
    given = [flag for flag, value in (("--num-batches", args.num_batches),
                                      ("--min-per-label", args.min_per_label),
                                      ("--strict", args.strict or None)) if value is not None]
    if given:
        raise UserError(f"{given[0]} goes with --policy {MULTI_LABEL} (multi-label data).")
    if labels:
        raise UserError(f"--label and --label-list give a label matrix, which --policy "
                        f"{MULTI_LABEL} reads; for stratum columns use --stratum COL.")
    chosen = [flag for flag, value in (("--min", args.min), ("--batch-size", args.batch_size),
                                       ("--policy", args.policy)) if value is not None]
    if len(chosen) != 1:
        raise UserError(
            ("give one of --min M, --batch-size B or --policy NAME" if not chosen else
             f"give only one of --min, --batch-size and --policy, got {' and '.join(chosen)}")
            + f"; policies: {', '.join(sorted(registered_policies()))}.")
    if args.param and args.policy is None:
        raise UserError("--param k=v goes with --policy NAME (e.g. --policy fixed_size "
                        "--param batch_size=64).")
    if args.min is not None:
        return MinPerStratum(args.min)
    if args.batch_size is not None:
        return FixedSize(args.batch_size)
    params = {}
    for item in args.param:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"--param must look like key=value, got --param {item!r}.")
        if key in params:
            raise UserError(f"--param {key} is given twice ({key}={params[key]!r} and "
                            f"{key}={_param_value(value, key)!r}); give each parameter once.")
        params[key] = _param_value(value, key)
    return policy_from_params(args.policy, params)
