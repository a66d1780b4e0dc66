"""Each ``add_*_args`` function of ``sample_factory.cfg.cfg`` declares one section of ``flags.tsv``, whole.

Users call these functions on their own parsers (Sample Factory 2's ``add_rl_args(parser)`` and friends), so each
must keep its name and its single parser parameter, and the sections together must declare every row once.
"""

from __future__ import annotations

import argparse
import inspect

import pytest

from sample_factory.cfg import cfg

SECTIONS = sorted({spec.group for spec in cfg.standard_flags().flags})
RL_SECTIONS = ["sampling", "batching", "loss", "optimizer", "obs_normalization", "process", "logging", "checkpoint"]
RL_SECTIONS += ["fault_tolerance", "distributed", "legacy_aliases"]


def _declared(add) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(add_help=False)
    add(parser)
    return parser


@pytest.mark.parametrize("section", SECTIONS)
def test_the_function_of_a_section_declares_its_rows_in_one_titled_group(section: str) -> None:
    add = getattr(cfg, f"add_{section}_args")
    assert add.__name__ == f"add_{section}_args"
    # Sample Factory 2's parameter names: ``parser`` for add_eval_args, ``p`` for the others
    assert list(inspect.signature(add).parameters) == (["parser"] if section == "eval" else ["p"])
    groups = [group for group in _declared(add)._action_groups if group._group_actions]
    assert len(groups) == 1
    title, description = cfg.standard_flags().groups[section]
    assert (groups[0].title, groups[0].description) == (title, description)
    rows = [spec.flag for spec in cfg.standard_flags().flags if spec.group == section]
    assert [action.option_strings[0] for action in groups[0]._group_actions] == rows


def test_add_rl_args_declares_its_sections_in_order() -> None:
    titles = [group.title for group in _declared(cfg.add_rl_args)._action_groups[2:]]
    assert titles == [cfg.standard_flags().groups[section][0] for section in RL_SECTIONS]


def test_every_row_belongs_to_a_section_with_a_title() -> None:
    assert set(SECTIONS) <= set(cfg.standard_flags().groups)
    assert set(cfg.standard_flags().groups) == {*SECTIONS, "legacy_aliases"}
