"""Real frond servers (the binary at FROND_TEST_BIN) for the tests: started
on a free port with flags and environment, killed with SIGKILL
(frond_server.py, which bench.py uses too, without pytest)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
sys.path.insert(0, os.path.dirname(__file__))

import frond_server  # noqa: E402


class Frond(frond_server.Frond):
    """frond_server.Frond, whose failure to start fails the test."""

    def __init__(self, data_dir, env=None, *flags):
        try:
            super().__init__(data_dir, env, *flags)
        except frond_server.ServerError as e:
            pytest.fail(str(e))


@pytest.fixture
def frond(tmp_path):
    started = []

    def start(name="a", env=None, *flags):
        s = Frond(tmp_path / name, env, *flags)
        started.append(s)
        return s

    yield start
    for s in started:
        s.kill()
