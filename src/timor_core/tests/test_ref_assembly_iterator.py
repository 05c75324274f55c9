"""Compatibility suite (issue 13 item 12): the reference toolbox's tests/test_assembly_iterator.py (timor-python
1.1.1) ported to timor_core's search spaces (``SerialSpace``; the Science 2019 space is ``science2019_space``)."""

from __future__ import annotations

import itertools
import random

import pytest

from timor_core import InputError, ModuleAssembly
from timor_core.search import SerialSpace, SpaceOptions, science2019_space
from timor_core.search.spaces.rules import SearchSpaceError

BOUNDED = {"max_links_between_joints": 1, "max_links_before_first_joint": 1, "max_links_after_last_joint": 1}
"""The reference bounds links only between joints; timor_core asks for every stretch to be bounded."""


def test_liu_iterator(robco):
    """ref: test_assembly_iterator.py::test_liu_iterator"""
    # deliberate difference: the reference uses its downloaded PROMODULAR set (100,548 assemblies for 1..3 DOF);
    # timor_core never downloads, so the same checks run on the embedded RobCo-like set
    space = SerialSpace(robco, SpaceOptions(dof_min=1, dof_max=3, **BOUNDED))
    first = list(itertools.islice(space, 1000))
    assert len(first) == len(set(first)) == min(1000, len(space))
    for ids in random.Random(0).sample(first, 5):  # they are valid robots
        ModuleAssembly.from_serial_modules(robco, ids).to_pin_robot()
    again = list(itertools.islice(space, 20))  # a new iteration starts over (the reference's reset)
    assert again == first[:20]
    with pytest.raises((InputError, SearchSpaceError)):  # spaces too large to prepare are refused at once
        SerialSpace(
            robco,
            SpaceOptions(
                dof_max=10**6, max_links_between_joints=5, max_links_before_first_joint=5, max_links_after_last_joint=5
            ),
        )
    smaller = SerialSpace(robco, SpaceOptions(dof_min=1, dof_max=2, **BOUNDED))
    assert len(smaller) == len(tuple(smaller))
    assert list(itertools.islice(smaller, 10)) == list(itertools.islice(iter(smaller), 10))


def test_science_paper_liu(improv):
    """ref: test_assembly_iterator.py::test_science_paper_liu (32,768 assemblies, as in the paper's MATLAB code)"""
    space = science2019_space(improv)
    assert len(space) == 32768
    assert len(set(space)) == 32768
