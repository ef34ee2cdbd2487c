"""World generation's two evaluation paths make the same worlds, checked on the CPU.

A smooth floor's noise and ore draws are evaluated per cell in the CUDA build (its working
memory must fit in a warp's shared memory) and as whole fields in the C build (loops a CPU
vectorises); `CRAFTAX_WORLDGEN_PER_CELL` (noise.h) selects the per-cell path, so the same
header compiled with it runs the GPU's path here. The C tool is built both ways; the hash of
the obs and every state byte of freshly generated worlds, and a trajectory hash with
auto-resets, must agree (and the plain build's trajectory hash is a pinned anchor, so both
paths are also upstream's worlds).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pycraftax import anchors

ROOT = Path(__file__).resolve().parent.parent
GCC = shutil.which("gcc")


@pytest.fixture(scope="module")
def tools(tmp_path_factory):
    if GCC is None:
        pytest.skip("gcc is not installed")
    out = tmp_path_factory.mktemp("worldgen_paths")
    sources = [str(ROOT / "reference_c/tools/craftax_tool.c")] + sorted(
        str(p) for p in (ROOT / "reference_c/src").glob("*.c"))
    built = {}
    for name, defines in (("fields", []), ("per_cell", ["-DCRAFTAX_WORLDGEN_PER_CELL"])):
        exe = out / f"craftax_tool_{name}"
        subprocess.run([GCC, "-std=c11", "-O2", "-ffp-contract=off", "-fopenmp", *defines,
                        f"-I{ROOT / 'reference_c/include'}", *sources, "-lm", "-o", str(exe)],
                       check=True, capture_output=True, text=True)
        built[name] = exe
    return built


def run(exe: Path, *args: str) -> str:
    return subprocess.run([str(exe), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.mark.parametrize("num_worlds, seed", [(512, 5), (64, 11)])
def test_reset_worlds_equal(tools, num_worlds, seed):
    hashes = {name: run(exe, "hash-reset", str(num_worlds), str(seed)) for name, exe in tools.items()}
    assert hashes["fields"] == hashes["per_cell"], hashes


def test_trajectory_equal_and_pinned(tools):
    (num_envs, steps, seed), pinned = next((case, h) for case, h in sorted(anchors.pinned().items()) if case[1] <= 1000)
    hashes = {name: run(exe, "hash-steps", str(num_envs), str(steps), str(seed)) for name, exe in tools.items()}
    assert hashes["fields"] == hashes["per_cell"], hashes
    assert pinned in hashes["fields"], (pinned, hashes["fields"])
