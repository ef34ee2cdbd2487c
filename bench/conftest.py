"""Shared fixtures of the pytest-benchmark suites in bench/ (`nox -s bench`, bench/README.md).

Every benchmark goes through the `throughput` fixture: it picks rounds for about the asked
time, runs pytest-benchmark's pedantic mode, and writes into `extra_info` the unit (env
steps/s, worlds/s, training steps/s), the items one round processes and the sustained
throughput, total items over the total time of the timed rounds (items / mean round time),
which is what `pycraftax bench` prints too; the rate at the median round stands beside it as
`throughput_median`, labelled. bench/report.py reads these figures, never recomputes them. The
machine block of the JSON gets the CPU model, usable cores, GPU and driver, compiler flags,
package versions and the machine kind; the commit block takes $PYCRAFTAX_COMMIT where the tree
was copied without git.

`--bench-quick` runs every suite at small sizes and few rounds: a check that the suites work,
not a figure to publish.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def pytest_addoption(parser):
    parser.addoption("--bench-quick", action="store_true", default=False,
                     help="small sizes and few rounds: checks that the suites run (figures not for publishing)")


def pytest_generate_tests(metafunc):
    """A suite declares SIZES = {argument: (default values, quick values)}; the run picks one."""
    sizes = getattr(metafunc.module, "SIZES", {})
    quick = metafunc.config.getoption("bench_quick")
    for name, (default, small) in sizes.items():
        if name in metafunc.fixturenames:
            values = small if quick else default
            metafunc.parametrize(name, values, ids=[f"{name}={v}" for v in values])


@pytest.fixture
def quick(request) -> bool:
    return request.config.getoption("bench_quick")


def nvidia_smi() -> dict:
    """GPU model, driver and memory of GPU 0, or {} where nvidia-smi is missing."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20,
        ).stdout.strip()
        name, driver, memory, clock = [x.strip() for x in out.splitlines()[0].split(",")]
        return {"gpu": name, "driver": driver, "gpu_memory": memory, "sm_clock_max": clock}
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return {}


def nvcc_flags() -> str:
    """The CUDA library's compile flags as cuda/Makefile states them."""
    try:
        text = (ROOT / "cuda" / "Makefile").read_text()
    except OSError:
        return "unknown"
    found = {m.group(1): " ".join(m.group(2).replace("\\\n", " ").split())
             for m in re.finditer(r"^(ARCH|NVCCFLAGS)\s*[:?]?=\s*((?:.*\\\n)*.*)$", text, re.M)}
    return found.get("NVCCFLAGS", "unknown").replace("$(ARCH)", found.get("ARCH", ""))


def machine_kind(info: dict) -> str:
    """A short file-name-safe name of the machine kind: the GPU where one is seen, else the CPU
    model and usable cores (results compare only within one kind)."""
    name = info.get("gpu") or f"{info.get('cpu', 'cpu')}-{info.get('cores', '?')}c"
    name = re.sub(r"\(r\)|\(tm\)|cpu|processor|\d+-core", "", name.lower())
    return re.sub(r"[^a-z0-9]+", "-", name).strip("-")[:40] or "unknown"


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def pycraftax_machine_info() -> dict:
    from pycraftax import _native
    from pycraftax.bench import machine_info

    # the commit goes to pytest-benchmark's commit_info: in the machine block it would make every
    # --benchmark-compare across commits warn that the machine differs
    info = {k: v for k, v in machine_info().items() if k != "commit"} | nvidia_smi()
    info.update(
        c_compile_args=_native.compile_args(), c_cpu_variant=_native.CPU_VARIANT,
        nvcc_flags=nvcc_flags(),
        jax=_version("jax"), jaxlib=_version("jaxlib"), craftax=_version("craftax"), envpool=_version("envpool"),
        settings={k: v for k, v in sorted(os.environ.items()) if k.startswith("PYCRAFTAX_") and k != "PYCRAFTAX_COMMIT"},
    )
    info["kind"] = machine_kind(info)
    # other jobs on the machine starve the C reference's OpenMP threads (they spin at barriers):
    # the load at the end of the run tells a reader whether the figures are of an idle machine
    info["load_average_1min"] = os.getloadavg()[0]
    return info


def pytest_benchmark_update_machine_info(config, machine_info):
    machine_info["pycraftax"] = pycraftax_machine_info()
    machine_info["pycraftax"]["bench_quick"] = config.getoption("bench_quick")


def pytest_benchmark_update_commit_info(config, commit_info):
    from pycraftax.bench import git_commit

    if os.environ.get("PYCRAFTAX_COMMIT") or not commit_info.get("id"):
        commit_info["id"] = git_commit()  # $PYCRAFTAX_COMMIT names a tree copied without .git (a GPU machine)


RATE_BASIS = "total items / total time of the timed rounds"


class Throughput:
    """benchmark.pedantic with rounds chosen from a probe call, and the rate in extra_info."""

    def __init__(self, benchmark, quick: bool):
        self.benchmark = benchmark
        self.quick = quick

    def __call__(self, fn, *, items: int, unit: str, seconds: float = 3.0, min_rounds: int = 5,
                 max_rounds: int = 2000, warmup_rounds: int = 1, setup_seconds: float | None = None,
                 **info) -> float:
        """Time `fn` (one call processes `items` things of `unit`) for about `seconds` and at
        least `min_rounds` rounds; returns the sustained rate, total items over total time."""
        if self.quick:
            seconds, min_rounds, warmup_rounds = min(seconds, 0.5), min(min_rounds, 3), min(warmup_rounds, 1)
        t0 = time.perf_counter()
        fn()  # probe: its time sizes the run (and it is one more warm-up call)
        probe = time.perf_counter() - t0
        rounds = int(min(max(min_rounds, seconds / max(probe, 1e-9)), max_rounds))
        self.benchmark.pedantic(fn, rounds=rounds, iterations=1, warmup_rounds=warmup_rounds)
        # --benchmark-disable runs fn once and keeps no stats: the probe's time stands in
        stats = self.benchmark.stats.stats if self.benchmark.stats else None
        mean, median = (stats.mean, stats.median) if stats else (probe, probe)
        rate = items / mean
        self.benchmark.extra_info.update(unit=unit, items_per_round=items, throughput=rate,
                                         throughput_median=items / median, rate_basis=RATE_BASIS,
                                         warmup_rounds=warmup_rounds, **info)
        if setup_seconds is not None:  # compile / JIT / first-call time, kept apart from the rate
            self.benchmark.extra_info["setup_seconds"] = setup_seconds
        return rate


@pytest.fixture
def throughput(benchmark, quick) -> Throughput:
    return Throughput(benchmark, quick)
