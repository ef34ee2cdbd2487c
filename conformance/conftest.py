"""Shared pytest/Hypothesis setup of the conformance suite.

Profiles (HYPOTHESIS_PROFILE, default "dev"):
    dev       few examples, for editing
    ci        derandomized, thousands of draws; world gen over >= 200 keys
    thorough  many examples; world gen over >= 2000 keys
PYCRAFTAX_WORLD_KEYS overrides the number of world-generation keys.

    HYPOTHESIS_PROFILE=ci /work/venv/bin/python -m pytest conformance tests

Tests that need the official env (jax + craftax, the [jax] extra) call `require_jax()`
at import time, so their module is skipped with a clear reason where the extra is absent.
`compare_states` / `compare_obs` are the reusable leaf-by-leaf comparators: they name the
key, the floor, the leaf and the first differing index of every mismatch.
"""

from __future__ import annotations

import os
import sys

# Test modules import their helpers as conformance.<module>, whichever test is collected first.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.append(_ROOT)

# jaxlib 0.10.2 builds wrong batched noise without its XLA flag (CONFORMANCE.md, the spec's setup).
# Set it before anything imports jax, as conformance/upstream.py does.
from pycraftax.porting import set_reference_jax_flags  # noqa: E402

set_reference_jax_flags()

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

# -- Hypothesis profiles --------------------------------------------------------------------
_SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large]
settings.register_profile("dev", max_examples=8, deadline=None, suppress_health_check=_SUPPRESS)
settings.register_profile(
    "ci", max_examples=40, deadline=None, derandomize=True, print_blob=True, suppress_health_check=_SUPPRESS
)
settings.register_profile("thorough", max_examples=400, deadline=None, suppress_health_check=_SUPPRESS)

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "dev")
if PROFILE not in ("dev", "ci", "thorough"):
    raise pytest.UsageError(f"HYPOTHESIS_PROFILE must be dev, ci or thorough, got {PROFILE!r}")
settings.load_profile(PROFILE)

# Examples for the expensive tests (each example is a whole batch of worlds or noise fields).
FEW_EXAMPLES = {"dev": 2, "ci": 5, "thorough": 20}[PROFILE]

_DEFAULT_WORLD_KEYS = {"dev": 32, "ci": 200, "thorough": 2000}
WORLD_KEYS = int(os.environ.get("PYCRAFTAX_WORLD_KEYS", _DEFAULT_WORLD_KEYS[PROFILE]))

# Raw jax.random keys: any pair of uint32 (PRNGKey(seed) is only the [0, seed] subset).
U32 = st.integers(0, 2**32 - 1)
RAW_KEYS = st.tuples(U32, U32)


def raw_key_batches(min_size: int = 1, max_size: int = 64):
    """Hypothesis strategy: uint32 [n, 2] arrays of raw keys."""
    return st.lists(RAW_KEYS, min_size=min_size, max_size=max_size).map(
        lambda keys: np.array(keys, dtype=np.uint32).reshape(-1, 2)
    )


def key_stream(num: int, seed: int = 20240601) -> np.ndarray:
    """A deterministic stream of `num` raw keys: PRNGKey-style [0, i] keys interleaved with
    random uint32 pairs (and the all-zero / all-one corners)."""
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 2**32, size=(num, 2), dtype=np.uint32)
    keys[1::2, 0] = 0
    keys[1::2, 1] = np.arange(1, num, 2, dtype=np.uint32)
    if num > 0:
        keys[0] = (0, 0)
    if num > 2:
        keys[2] = (2**32 - 1, 2**32 - 1)
    return keys


# -- jax / craftax availability -------------------------------------------------------------
def pytest_configure(config):
    config.addinivalue_line("markers", "jax: needs jax + craftax (the [jax] extra)")


def require_jax():
    """Skip the calling module unless jax and craftax 1.6.1 are importable; return the
    `conformance.upstream` module (which has set the XLA flag before importing jax)."""
    # exc_type=ImportError: a broken jax/jaxlib install skips with the reason too.
    pytest.importorskip(
        "jax", reason="jax is not importable: install the [jax] extra for JAX-parity tests", exc_type=ImportError
    )
    pytest.importorskip(
        "craftax", reason="craftax is not importable: install the [jax] extra for JAX-parity tests", exc_type=ImportError
    )
    from conformance import upstream

    return upstream


_SUMMARY: list[str] = []


def record_summary(line: str) -> None:
    """A line for the end-of-run summary (shown in CI logs without -s)."""
    _SUMMARY.append(line)


def pytest_terminal_summary(terminalreporter):
    if _SUMMARY:
        terminalreporter.section("pycraftax conformance summary")
        for line in _SUMMARY:
            terminalreporter.write_line(line)


# -- state comparison -----------------------------------------------------------------------
FLOOR_NAMES = (
    "overworld",
    "dungeon",
    "gnomish mines",
    "sewers",
    "vaults",
    "troll mines",
    "fire",
    "ice",
    "boss",
)
NUM_LEVELS = len(FLOOR_NAMES)

# Leaves indexed by level on their first axis after the env axis.
PER_LEVEL_PREFIXES = (
    "map",
    "item_map",
    "mob_map",
    "light_map",
    "down_ladders",
    "up_ladders",
    "chests_opened",
    "monsters_killed",
    "melee_mobs.",
    "passive_mobs.",
    "ranged_mobs.",
    "mob_projectiles.",
    "player_projectiles.",
    "mob_projectile_directions",
    "player_projectile_directions",
)


def is_per_level(name: str, shape: tuple[int, ...]) -> bool:
    """Whether leaf `name` (batched shape) has the level on axis 1."""
    return len(shape) >= 2 and shape[1] == NUM_LEVELS and any(
        name == p or (p.endswith(".") and name.startswith(p)) for p in PER_LEVEL_PREFIXES
    )


def _bits(a: np.ndarray) -> np.ndarray:
    """Bit patterns of float arrays (so -0.0 != 0.0 and NaNs compare by payload)."""
    if a.dtype == np.float32:
        return a.view(np.uint32)
    if a.dtype == np.float64:
        return a.view(np.uint64)
    if a.dtype == np.float16:
        return a.view(np.uint16)
    return a


def _fmt_key(keys, env: int) -> str:
    if keys is None:
        return f"env {env}"
    k = np.asarray(keys)[env]
    return f"env {env} key [{int(k[0])}, {int(k[1])}]"


def _fmt_value(a: np.ndarray, idx: tuple) -> str:
    v = a[idx]
    if a.dtype == np.float32:
        return f"{float(v)!r} (0x{int(np.float32(v).view(np.uint32)):08x})"
    return repr(v.item() if hasattr(v, "item") else v)


def diff_leaf(name: str, expected: np.ndarray, actual: np.ndarray, keys=None, max_lines: int = 3) -> list[str]:
    """Mismatch descriptions of one batched leaf ([] when bitwise equal)."""
    expected, actual = np.asarray(expected), np.asarray(actual)
    if expected.shape != actual.shape:
        return [f"{name}: shape {actual.shape} != expected {expected.shape}"]
    if expected.dtype != actual.dtype:
        return [f"{name}: dtype {actual.dtype} != expected {expected.dtype}"]
    differ = _bits(expected) != _bits(actual)
    if not differ.any():
        return []
    lines = []
    if is_per_level(name, expected.shape):
        per_floor = differ.reshape(differ.shape[0], NUM_LEVELS, -1).any(axis=2)  # [env, level]
        for level in np.flatnonzero(per_floor.any(axis=0)):
            envs = np.flatnonzero(per_floor[:, level])
            env = int(envs[0])
            idx = tuple(int(i) for i in np.argwhere(differ[env, level])[0])
            full = (env, int(level)) + idx
            lines.append(
                f"{name} floor {level} ({FLOOR_NAMES[level]}): {len(envs)} env(s) differ; first "
                f"{_fmt_key(keys, env)} at index {(int(level),) + idx}: got {_fmt_value(actual, full)}, "
                f"expected {_fmt_value(expected, full)} ({int(differ[env, level].sum())} element(s) differ)"
            )
    else:
        envs = np.flatnonzero(differ.reshape(differ.shape[0], -1).any(axis=1))
        env = int(envs[0])
        full = tuple(int(i) for i in np.argwhere(differ)[0])
        lines.append(
            f"{name}: {len(envs)} env(s) differ; first {_fmt_key(keys, env)} at index {full[1:]}: "
            f"got {_fmt_value(actual, full)}, expected {_fmt_value(expected, full)}"
        )
    return lines[:max_lines] + ([f"{name}: ... {len(lines) - max_lines} more floor(s)"] if len(lines) > max_lines else [])


def compare_states(expected: dict, actual: dict, keys=None, context: str = "") -> int:
    """Assert two batched state dicts (leaf name -> [N, ...]) are equal on every leaf:
    integers, bools and keys exactly, floats bitwise. On mismatch the AssertionError names,
    per leaf (per floor for per-level leaves), the key, the leaf and the first differing
    index. `keys` (uint32 [N, 2]) is only used to name envs. Returns the number of leaves."""
    lines = []
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    if missing:
        lines.append(f"missing leaves: {missing}")
    if extra:
        lines.append(f"unexpected leaves: {extra}")
    for name in expected:
        if name in actual:
            lines.extend(diff_leaf(name, expected[name], actual[name], keys))
    if lines:
        head = f"state mismatch{' (' + context + ')' if context else ''}: {len(lines)} problem(s)\n  "
        raise AssertionError(head + "\n  ".join(lines[:60]))
    return len(expected)


def compare_obs(expected: np.ndarray, actual: np.ndarray, keys=None, context: str = "") -> None:
    """Assert batched observations are bitwise equal, naming env, key and obs index."""
    lines = diff_leaf("obs", np.asarray(expected), np.asarray(actual), keys)
    if lines:
        raise AssertionError(f"obs mismatch{' (' + context + ')' if context else ''}: " + "; ".join(lines))
