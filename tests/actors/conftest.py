"""Fixtures shared by the coordinator tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def agent(tmp_path_factory):
    """One in-process run of agent episodes (tests/actors/test_agent_coordinator.py), also read by the
    schema test of tests/actors/test_coordinator.py."""
    from tests.actors.test_agent_coordinator import agent_run

    return agent_run(tmp_path_factory.mktemp("agent"))
