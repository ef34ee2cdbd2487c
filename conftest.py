"""pytest setup shared by conformance/ and tests/, which CI runs in one process."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import pytest

# XLA:CPU maps three memory regions for every kernel it compiles and keeps them while the
# executable lives, and a process may hold at most vm.max_map_count mappings (65,530 by default).
# The two suites in one process compile more kernels than that, and the compile that crossed the
# limit crashed inside XLA (SIGSEGV or SIGABRT). Past this share of the limit the compiled
# executables are dropped between test modules; later calls compile again.
MAP_SHARE = 0.5


def _map_limit() -> int | None:
    try:
        return int(Path("/proc/sys/vm/max_map_count").read_text())
    except (OSError, ValueError):
        return None  # not Linux: no such limit to watch


def _maps_in_use() -> int:
    with open("/proc/self/maps", "rb") as maps:
        return sum(1 for _ in maps)


def release_compiled_executables_if_crowded(share: float = MAP_SHARE) -> bool:
    """Drop JAX's compiled executables when this process holds more than `share` of its mapping
    limit; whether it did."""
    jax = sys.modules.get("jax")  # never imported here: the XLA flags must be set before that
    limit = _map_limit()
    if jax is None or limit is None or _maps_in_use() <= share * limit:
        return False
    jax.clear_caches()
    gc.collect()
    return True


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_executables():
    yield
    release_compiled_executables_if_crowded()
