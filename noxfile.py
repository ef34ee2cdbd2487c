"""nox sessions of pycraftax. `nox --list` shows them; GPU and benchmark sessions are opt-in."""

from __future__ import annotations

import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import nox

nox.options.sessions = ["tests", "sanitize", "cuda_build"]
nox.options.reuse_existing_virtualenvs = True
ROOT = Path(__file__).parent
C_ONLY = {"PYCRAFTAX_CUDA": "0"}  # sessions that test the C reference skip the nvcc build


def _check_no_parity_skips(junit: Path) -> None:
    """Fail when a JAX-parity test was skipped: CI must never pass with them unexecuted."""
    tree = ET.parse(junit)
    skipped, executed = [], 0
    for case in tree.iter("testcase"):
        skip = case.find("skipped")
        if skip is None or skip.get("type") == "pytest.xfail":
            executed += 1  # an xfail ran and failed as documented (strict markers fail on a pass)
            continue
        reason = (skip.get("message") or "") + (skip.text or "")
        if "cuda" not in reason.lower() and "gpu" not in reason.lower():
            skipped.append(f"{case.get('classname')}::{case.get('name')}: {reason.strip()[:200]}")
    if executed == 0:
        raise RuntimeError("no test was executed")
    if skipped:
        raise RuntimeError("tests were skipped for a reason other than a missing GPU:\n" + "\n".join(skipped))


@nox.session
def tests(session: nox.Session) -> None:
    """API contract + JAX-parity conformance tests (CI profile) against craftax 1.6.1 on the CPU."""
    session.install("-e", ".[test,jax]", env=C_ONLY)
    # again with jax visible to the build, which then builds pycraftax.jax's FFI library
    session.install("--no-build-isolation", "--no-deps", "--force-reinstall", "-e", ".",
                    env={**C_ONLY, "PYCRAFTAX_JAX_FFI": "1"})
    junit = Path(session.create_tmp()) / "junit.xml"
    env = {"HYPOTHESIS_PROFILE": os.environ.get("HYPOTHESIS_PROFILE", "ci")}
    session.run("pytest", "-ra", f"--junitxml={junit}", *session.posargs, env=env)
    if not session.posargs:
        _check_no_parity_skips(junit)


@nox.session
def sanitize(session: nox.Session) -> None:
    """C reference built with AddressSanitizer + UBSan: API, robustness, reset and anchor tests run clean."""
    session.install("cffi", "numpy", "pytest", "hypothesis", "jax==0.10.2", "jaxlib==0.10.2", "craftax==1.6.1", "scipy>=1.12",
                    "setuptools", "wheel")
    # Build in a copy of the tree: an in-place sanitizer build would replace the extension
    # that the other sessions' editable installs load.
    build = Path(session.create_tmp()).resolve()
    tree = build / "tree"
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(".git", ".nox", ".venv", "build", "*.so", "*.egg-info",
                                                              "__pycache__", ".hypothesis", ".whl", ".device"))
    session.chdir(tree)
    env = {"PYCRAFTAX_SANITIZE": "1"}
    session.run("pip", "install", "--no-build-isolation", "--force-reinstall", "--no-deps", "-e", ".",
                env={**env, **C_ONLY})
    tool = build / "craftax_tool_asan"
    tool_sources = ["reference_c/tools/craftax_tool.c"] + sorted(str(p) for p in Path("reference_c/src").glob("*.c"))
    flags = ["-std=c11", "-O1", "-g", "-ffp-contract=off", "-fopenmp", "-fsanitize=address,undefined",
             "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer", "-Ireference_c/include"]
    session.run("gcc", *flags, *tool_sources, "-lm",
                "-o", str(tool), external=True)
    plain = build / "craftax_tool"
    session.run("gcc", "-std=c11", "-O3", "-ffp-contract=off", "-fopenmp", "-Ireference_c/include",
                *tool_sources, "-lm", "-o", str(plain),
                external=True)
    for command in (["hash-reset", "32", "7"], ["hash-steps", "16", "400", "3"]):
        hashes = [session.run(str(exe), *command, external=True, silent=True) for exe in (tool, plain)]
        if hashes[0] != hashes[1]:
            session.error(f"sanitizer build differs from the plain build on {command}: {hashes}")
    libasan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    libubsan = subprocess.run(["gcc", "-print-file-name=libubsan.so"], capture_output=True, text=True).stdout.strip()
    test_env = {
        "LD_PRELOAD": f"{libasan} {libubsan}",
        # CPython and jaxlib keep allocations alive at exit by design; leaks are not checked.
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
        "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
        "HYPOTHESIS_PROFILE": "ci",
        "PYCRAFTAX_WORLD_KEYS": "32",
    }
    # API, step contract and arbitrary-state robustness, reset parity, and the pinned
    # trajectories (tens of thousands of steps with auto-resets) under the sanitizers.
    session.run("pytest", "-x", "-q", "tests", "conformance/test_worldgen.py", "conformance/test_anchors.py",
                "-k", "not upstream", *session.posargs, env=test_env)


@nox.session(default=False)
def thorough(session: nox.Session) -> None:
    """The thorough Hypothesis profile (>= 2,000 world keys); run before a release."""
    session.install("-e", ".[test,jax]", env=C_ONLY)
    session.run("pytest", "-ra", *session.posargs, env={"HYPOTHESIS_PROFILE": "thorough"})


@nox.session
def cuda_build(session: nox.Session) -> None:
    """The CUDA build from `pip install .` (setup.py runs cuda/Makefile with nvcc; needs no
    GPU): the wheel must carry the library and the headers its binding reads. Skipped, saying
    so, on a machine without nvcc (CI has it)."""
    if not any(os.access(p, os.X_OK) for p in (os.environ.get("NVCC") or "", "/usr/local/cuda/bin/nvcc",
                                                "/usr/local/bin/nvcc", shutil.which("nvcc") or "")):
        session.skip("nvcc not found: the CUDA build was not compiled")
    session.install("setuptools", "wheel", "cffi", "numpy")
    session.run("pip", "install", "--no-build-isolation", "--force-reinstall", "--no-deps", ".",
                env={"PYCRAFTAX_CUDA": "1"})
    session.chdir(session.create_tmp())  # import the installed package, not the source tree
    session.run("python", "-c", CHECK_INSTALLED_CUDA)


CHECK_INSTALLED_CUDA = """
from pycraftax import cuda_env
path = cuda_env.library_path()
assert path is not None and path.parent.name == "pycraftax", f"not the installed library: {path}"
ffi, lib = cuda_env.bind(path)
print("installed CUDA library:", path, "API version", lib.craftax_cuda_api_version())
"""


@nox.session(default=False)
def conformance_cuda(session: nox.Session) -> None:
    """C-vs-CUDA conformance and anchors on the GPU (the tests skip cleanly without one)."""
    session.run("make", "-C", "cuda", external=True)
    session.install("-e", ".[test]")
    session.run("pytest", "-ra", "conformance/test_cuda.py", "conformance/test_cuda_optimistic.py",
                "conformance/test_cuda_trainer.py", "conformance/test_cuda_lazy_floors.py", *session.posargs)


@nox.session(default=False)
def bench(session: nox.Session) -> None:
    """Benchmarks, JSON to bench/results/: the C reference against upstream craftax on this
    CPU; where a GPU is usable also the CUDA env sweep and the CUDA trainer, and upstream on
    the GPU when this JAX sees one. Then bench/REPORT.md."""
    session.install("-e", ".[jax]")
    session.run("python", "bench/worldgen.py", *session.posargs)
    session.run("python", "bench/step.py", *session.posargs)
    stamp = session.run("python", "-c", "import time; print(time.strftime('%Y-%m-%dT%H%M%SZ', time.gmtime()))",
                        silent=True).strip()
    gpu = session.run("python", "-c", "import pycraftax; print(pycraftax.cuda_available())", silent=True).strip()
    if gpu == "True":
        session.run("python", "cuda/bench_step.py", "--out", f"bench/results/cuda-step-{stamp}.json")
        session.run("python", "cuda/bench_trainer.py", "--out", f"bench/results/trainer-{stamp}.json")
        jax_gpu = session.run("python", "-c", "import jax; print(jax.default_backend())", silent=True).strip()
        if jax_gpu == "gpu":
            session.run("python", "bench/upstream_jax.py", "--out", f"bench/results/upstream-gpu-{stamp}.json")
        else:
            session.log("upstream on the GPU not measured: this JAX has no GPU backend (the [jax] extra pins "
                        "the CPU build; install jax[cuda13] beside craftax to measure it)")
    else:
        session.log("no usable GPU: CUDA env and trainer benchmarks not run")
    session.run("python", "bench/report.py")


@nox.session(default=False, python=False)
def report(session: nox.Session) -> None:
    """bench/REPORT.md from the raw JSON in bench/results/."""
    session.run("python3", "bench/report.py", *session.posargs, external=True)


@nox.session(default=False)
def lint(session: nox.Session) -> None:
    """ruff over the Python sources."""
    session.install("ruff")
    session.run("ruff", "check", "pycraftax", "conformance", "bench", "tests", "noxfile.py")
