"""EnvPool's native Craftax (C++, `envpool>=1.2.7`, which needs Python >= 3.12) stepped with
random actions on this CPU's cores, in the same run as the other suites. EnvPool's Craftax is
Classic: the report sets it beside upstream Classic (bench/test_bench_upstream.py) and beside
pycraftax's Classic once the package provides one (CLASSIC_ENV_ID below is the hook). Skipped,
saying why, where EnvPool is not importable.
"""

from __future__ import annotations

import pytest

import peers
from pycraftax.bench import usable_cores

pytest.importorskip("envpool", minversion="1.2.7",
                    reason="EnvPool not measured: envpool>=1.2.7 is not importable (it needs Python >= 3.12)")

SIZES = {"num_envs": ([64, 256, 4096], [64])}
# pycraftax's Classic env id, measured beside EnvPool when pycraftax.make accepts it.
CLASSIC_ENV_ID = "Craftax-Classic-Symbolic-v1"


def _task_id() -> str:
    ids = peers.envpool_craftax_ids()
    if not ids:
        pytest.skip("EnvPool not measured: this envpool registers no Craftax task")
    return ids[0]


def test_step(throughput, num_envs):
    task = _task_id()
    threads = usable_cores()
    call, setup_s = peers.envpool_step(task, num_envs, threads)
    rate = throughput(call, items=num_envs, unit="env steps/s", setup_seconds=setup_s, backend="envpool",
                      env=task, mode="auto-reset", num_envs=num_envs, threads=threads, cores_used=threads)
    assert rate > 0


def test_pycraftax_classic(throughput, num_envs):
    import pycraftax

    try:
        env = pycraftax.make(CLASSIC_ENV_ID, num_envs=num_envs, backend="c", seed=0)
    except ValueError as exc:
        pytest.skip(f"pycraftax Classic not measured beside EnvPool: {exc}")
    import numpy as np

    env.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, env.single_action_space.n, size=(64, num_envs), dtype=np.int32)
    count = [0]

    def call() -> None:
        env.step(actions[count[0] % 64])
        count[0] += 1

    rate = throughput(call, items=num_envs, unit="env steps/s", backend="c", env=CLASSIC_ENV_ID, mode="auto-reset",
                      num_envs=num_envs, threads=usable_cores(), cores_used=usable_cores())
    assert rate > 0
