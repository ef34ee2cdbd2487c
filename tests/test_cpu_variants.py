"""The C extension's CPU variants (pycraftax/_build.py): the portable x86-64 baseline and the
x86-64-v3 build that pycraftax._native picks where the CPU runs it. The float flags forbid
contraction and fast-math, so the instruction set must change no bit: both variants play the
same trajectories, world generation included (where fmaf is one instruction on v3 and a libm
call on the baseline)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest

from pycraftax import _native

TRAJECTORY = textwrap.dedent("""
    import hashlib
    import numpy as np
    import pycraftax
    from pycraftax import _native, jax_random

    digest = hashlib.sha256()
    for env_id in pycraftax.list_envs():
        env = pycraftax.make(env_id, num_envs=16, backend="c")
        obs, _ = env.reset(seed=11)
        digest.update(obs.tobytes())
        obs, _ = env.reset_with_keys(jax_random.split(jax_random.prng_key(5), 16))  # 16 more worlds
        digest.update(obs.tobytes())
        actions = np.random.default_rng(3).integers(0, env.single_action_space.n, size=(300, 16), dtype=np.int32)
        ended = 0
        for a in actions:
            obs, reward, terminated, truncated, info = env.step(a)
            ended += int((terminated | truncated).sum())
            for x in (obs, reward, terminated, truncated):
                digest.update(np.ascontiguousarray(x).tobytes())
        for name, leaf in sorted(env.get_state().items()):
            digest.update(name.encode() + np.ascontiguousarray(leaf).tobytes())
        env.close()
    print(_native.CPU_VARIANT, digest.hexdigest(), ended)
""")


def _run(variant: str) -> list[str]:
    env = dict(os.environ, PYCRAFTAX_CPU_VARIANT=variant)
    out = subprocess.run([sys.executable, "-c", TRAJECTORY], capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_variants_play_identical_trajectories():
    if not (_native.CPU_VARIANT == "x86-64-v3"):
        pytest.skip(f"this machine runs the {_native.CPU_VARIANT} variant only (the x86-64-v3 one is not built "
                    "or the CPU lacks AVX2/FMA/BMI2): nothing to compare it with")
    baseline, v3 = _run("baseline"), _run("x86-64-v3")
    assert (baseline[0], v3[0]) == ("baseline", "x86-64-v3")
    assert int(baseline[2]) > 0  # episodes ended, so auto-resets generated worlds mid-run
    assert baseline[1:] == v3[1:]


def _cpuinfo_flags() -> set[str] | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def test_auto_picks_the_fastest_variant_the_cpu_runs():
    from pycraftax import _craftax_c

    runs_v3 = bool(_craftax_c.lib.pycraftax_cpu_runs_x86_64_v3())
    flags = _cpuinfo_flags()
    if flags is not None:  # the kernel's view of the same CPU: x86-64-v3's instructions
        assert runs_v3 == ({"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"} <= flags)
    built = importlib.util.find_spec("pycraftax._craftax_c_x86_64_v3") is not None
    assert _native.CPU_VARIANT == ("x86-64-v3" if runs_v3 and built else "baseline")
    assert ("-march=x86-64-v3" in _native.compile_args()) == (_native.CPU_VARIANT == "x86-64-v3")


def test_unknown_variant_is_refused_with_the_choices():
    env = dict(os.environ, PYCRAFTAX_CPU_VARIANT="avx9")
    out = subprocess.run([sys.executable, "-c", "import pycraftax; pycraftax.make('Craftax-Symbolic-v1', backend='c')"],
                         capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode != 0
    assert "PYCRAFTAX_CPU_VARIANT must be one of ('auto', 'baseline', 'x86-64-v3'), got 'avx9'" in out.stderr
