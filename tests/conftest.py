"""Fixtures shared by the test modules: what is expensive to make is made once per session
(per worker under pytest-xdist) and treated as read-only; a test that changes it copies it first."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """The tiny course of tests/tiny_course.py, its sources and release generated once."""
    from tiny_course import make_course

    return make_course(tmp_path_factory.mktemp("tiny-course"))


@pytest.fixture(autouse=True)
def _close_figures():
    """Close the matplotlib figures a test leaves open (pyplot keeps every figure alive until
    closed: a worker that runs many plotting tests would otherwise hold them all)."""
    yield
    import sys
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")
