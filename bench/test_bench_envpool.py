"""EnvPool's native Craftax (C++, `envpool>=1.2.7`, which needs Python >= 3.12) stepped with
random actions on this CPU's cores, in the same run as the other suites. EnvPool's Craftax is
Classic: the report sets it beside upstream Classic (bench/test_bench_upstream.py) and
pycraftax's Classic (bench/test_bench_c.py, once the package provides it). Skipped, saying why,
where EnvPool is not importable.
"""

from __future__ import annotations

import pytest

import peers
from pycraftax.bench import usable_cores

pytest.importorskip("envpool", minversion="1.2.7",
                    reason="EnvPool not measured: envpool>=1.2.7 is not importable (it needs Python >= 3.12)")

SIZES = {"num_envs": ([64, 256, 4096], [64])}


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

