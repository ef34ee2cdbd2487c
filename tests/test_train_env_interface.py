"""The trainers drive their envs through the env's public interface only: no module of
pycraftax/train/ reads a private field of an env (or of the env modules), and the C env's
public episode_progress (what the CPU trainer's checkpoint keeps besides get_state) checks
what it is given."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import pycraftax
import pycraftax.train

ENV_OWNERS = {"env", "cuda_env", "env_lib"}  # names the trainers give an env or an env module


def private_env_accesses(source: str) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = ast.unparse(node.value)
            if owner.split(".")[-1] in ENV_OWNERS:
                out.append(f"line {node.lineno}: {owner}.{node.attr}")
    return out


def test_the_check_finds_a_private_access():
    assert private_env_accesses("self.env._key = k\nx = trainer.env._episode_return\ny = env.key\n") == [
        "line 1: self.env._key", "line 2: trainer.env._episode_return"]


def test_no_trainer_module_reads_a_private_env_field():
    modules = sorted(Path(pycraftax.train.__file__).parent.glob("*.py"))
    assert len(modules) >= 8  # the package is where it should be
    found = {m.name: hits for m in modules if (hits := private_env_accesses(m.read_text()))}
    assert not found, found


@pytest.mark.parametrize("env_id", ["Craftax-Symbolic-v1", "Craftax-Classic-Symbolic-v1"])
def test_episode_progress_round_trip_and_checks(env_id):
    with pycraftax.make(env_id, num_envs=3, backend="c", seed=0) as env:
        env.reset()
        for _ in range(4):
            env.step(np.zeros(3, np.int32))
        progress = env.episode_progress
        assert progress["episode_length"].tolist() == [4, 4, 4]
        assert progress["episode_return"].dtype == np.float32 and progress["episode_length"].dtype == np.int32
        progress["episode_length"][:] = 99  # a copy: the env keeps its own
        assert env.episode_progress["episode_length"].tolist() == [4, 4, 4]
        env.episode_progress = dict(episode_return=np.array([1.5, 0, 2], np.float32),
                                    episode_length=np.array([7, 0, 9], np.int32))
        _, _, _, _, info = env.step(np.zeros(3, np.int32))
        assert env.episode_progress["episode_length"].tolist() == [8, 1, 10]
        assert not info["done"].any()
        bad = [({"episode_return": np.zeros(3)}, "exactly the keys"),
               (dict(episode_return=np.zeros(2), episode_length=np.zeros(3, np.int32)), r"shape \(3,\)"),
               (dict(episode_return=np.full(3, np.nan), episode_length=np.zeros(3, np.int32)), "finite floats"),
               (dict(episode_return=np.zeros(3), episode_length=np.full(3, -1)), "integers >= 0"),
               (dict(episode_return=np.zeros(3), episode_length=np.zeros(3)), "integers >= 0")]
        for value, match in bad:
            with pytest.raises(ValueError, match=match):
                env.episode_progress = value
        assert env.episode_progress["episode_length"].tolist() == [8, 1, 10]  # a refused value changes nothing
