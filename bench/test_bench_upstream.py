"""Upstream craftax 1.6.1 (JAX: jit + vmap, lax.scan of random-action steps) on JAX's default
device, in the same run as the pycraftax suites so every ratio in the report is from one
machine and one session: Craftax-Symbolic in the official auto-reset mode and under the
optimistic-reset wrapper, Classic the same way (EnvPool's Craftax is Classic), and world
generation. Compilation is timed apart (extra_info setup_seconds) from the throughput.
Skipped, saying why, where jax or craftax is not installed (the [jax] extra).
"""

from __future__ import annotations

import pytest

import peers  # noqa: F401  (sets the XLA flag before jax is imported)

jax = pytest.importorskip("jax", reason="upstream peer not measured: jax is not installed (the [jax] extra)")
pytest.importorskip("craftax", reason="upstream peer not measured: craftax is not installed (the [jax] extra)")

ON_GPU = jax.default_backend() == "gpu"
STEPS_PER_CALL = 32 if ON_GPU else 8
SIZES = {
    "num_envs": ([4096, 16384, 65536], [1024]) if ON_GPU else ([64, 256], [64]),
    "classic_envs": ([16384], [1024]) if ON_GPU else ([256], [64]),
    "reset_envs": ([4096], [1024]) if ON_GPU else ([64], [16]),
}


def _run(throughput, env_name: str, mode: str, num_envs: int) -> float:
    call, compile_s = peers.upstream_rollout(env_name, mode, num_envs, STEPS_PER_CALL)
    return throughput(call, items=num_envs * STEPS_PER_CALL, unit="env steps/s", setup_seconds=compile_s,
                      backend="upstream", env=env_name, mode=mode, num_envs=num_envs, device=peers.jax_device(),
                      steps_per_call=STEPS_PER_CALL)


@pytest.mark.parametrize("mode", peers.UPSTREAM_MODES)
def test_step(throughput, mode, num_envs):
    assert _run(throughput, "Craftax-Symbolic-v1", mode, num_envs) > 0


@pytest.mark.parametrize("mode", peers.UPSTREAM_MODES)
def test_step_classic(throughput, mode, classic_envs):
    assert _run(throughput, "Craftax-Classic-Symbolic-v1", mode, classic_envs) > 0


def test_reset(throughput, reset_envs):
    call, compile_s = peers.upstream_reset("Craftax-Symbolic-v1", reset_envs)
    rate = throughput(call, items=reset_envs, unit="worlds/s", setup_seconds=compile_s, backend="upstream",
                      env="Craftax-Symbolic-v1", num_envs=reset_envs, device=peers.jax_device())
    assert rate > 0
