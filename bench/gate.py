"""The verification gate of `nox -s bench`: what must pass before any benchmark result is written.

Checks (each passed, failed, or skipped with the reason it does not apply here):
  anchors             the pinned trajectory anchors of this build's rules, both games, on the C
                      reference (anchors.pinned: the released rules', or a variant's own)
  upstream_lockstep   the divergence finder (`pycraftax conformance`) at a short size, both games,
                      against the installed craftax (skipped where craftax is not importable, or
                      runs on another jax than the reference semantics')
  cuda                C vs CUDA: the anchors on the GPU and lockstep on every leaf, both games,
                      symbolic and pixel envs (skipped without a usable GPU)
  gradients           the trainers' float64 finite-difference gradient checks (the NumPy PPO-RNN,
                      the fast recipe's model), and on a GPU the CUDA trainer's and the fast
                      recipe's kernels against them
It also measures whether training is deterministic: each trainer usable here trains 2 updates
twice from the same seed and the two learners' arrays are compared bitwise (recorded, not gated:
the PyTorch trainer on a GPU is repeatable only with its `deterministic` switch, and the result
says which is which).

    python bench/gate.py --out gate.json      # exit 0 when every check that applies passed

The JSON (`passed`, `checks`, `rules_fingerprint`, `rules`, `released`: the release whose rules
these are or null, `deterministic`) goes into every result file of the run (noxfile.py, bench
session).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FINDER_SIZE = ["--num-envs", "8", "--steps", "50", "--inject-steps", "25"]
PYTEST_CHECKS = {
    "anchors": ["conformance/test_anchors.py::test_pinned_anchor",
                "conformance/test_classic_anchors.py::test_pinned_classic_anchor"],
    "cuda": ["conformance/test_cuda.py", "conformance/test_cuda_classic.py", "conformance/test_cuda_pixels.py", "-k",
             "pinned_anchor or pinned_classic_anchor or lockstep_step_with_keys or step_with_keys_and_observe"],
    "gradients": ["conformance/test_gradcheck.py", "tests/test_fast_model.py", "tests/test_paper_model.py",
                  "conformance/test_paper_cuda.py", "conformance/test_fast_cuda.py", "-k",
                  "gradcheck or bptt or gae or finite_differences or float64 or gradients or backward"],
}


def _pytest(args: list[str]) -> dict:
    """One pytest run: passed (tests ran, none failed), failed, or skipped (none ran: the reasons)."""
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
                              *args], cwd=ROOT, capture_output=True, text=True,
                             env={**os.environ, "HYPOTHESIS_PROFILE": os.environ.get("HYPOTHESIS_PROFILE", "dev")})
        ran, skipped = [], []
        if junit.exists():
            for case in ET.parse(junit).iter("testcase"):
                skip = case.find("skipped")
                name = f"{case.get('classname')}::{case.get('name')}"
                (skipped if skip is not None else ran).append(
                    name if skip is None else f"{name}: {(skip.get('message') or '').strip()[:120]}")
    tail = "\n".join((run.stdout + run.stderr).strip().splitlines()[-15:])
    if run.returncode not in (0, 5):
        return {"status": "failed", "detail": tail}
    if not ran:
        return {"status": "skipped", "detail": "; ".join(sorted(set(s.split(": ", 1)[-1] for s in skipped)))
                or "no test collected"}
    return {"status": "passed", "detail": f"{len(ran)} tests passed, {len(skipped)} skipped"}


def upstream_lockstep() -> dict:
    try:
        import craftax  # noqa: F401
        import jax  # noqa: F401
    except ImportError as e:
        return {"status": "skipped", "detail": f"craftax is not importable ({e})"}
    from pycraftax.porting import jax_version_note

    other_jax = jax_version_note()
    if other_jax:
        return {"status": "skipped", "detail": other_jax}
    run = subprocess.run([sys.executable, "-m", "pycraftax", "conformance", *FINDER_SIZE], cwd=ROOT,
                         capture_output=True, text=True)
    last = (run.stdout.strip().splitlines() or ["(no output)"])[-1]
    return {"status": "passed" if run.returncode == 0 else "failed", "detail": last if run.returncode in (0, 1)
            else (run.stdout + run.stderr)[-2000:]}


def cuda() -> dict:
    import pycraftax
    from pycraftax import cuda_env

    if not pycraftax.cuda_available():
        return {"status": "skipped", "detail": f"no usable CUDA backend: {cuda_env.unavailable_reason()}"}
    return _pytest(PYTEST_CHECKS["cuda"])


def _learner_twice(make) -> bool:
    """Two learners made by `make()`, 2 updates each: are their arrays bitwise equal?"""
    import numpy as np

    arrays = []
    for _ in range(2):
        trainer = make()
        try:
            trainer.step()
            trainer.step()
            arrays.append({k: np.asarray(v).copy() for k, v in trainer.backend_arrays().items()})
        finally:
            if hasattr(trainer, "close"):
                trainer.close()
    a, b = arrays
    return a.keys() == b.keys() and all(np.asarray(a[k]).tobytes() == np.asarray(b[k]).tobytes() for k in a)


def deterministic() -> dict:
    """{trainer: True/False, or why it was not run here}: the NumPy trainer, and the PyTorch trainer
    of each model (the paper recipe's gru, the fast recipe's cell-gru) on the GPU as benchmarked and
    with its `deterministic` switch, or on the CPU where no GPU is."""
    import pycraftax
    from pycraftax.train.config import TrainConfig
    from pycraftax.train.trainer import Trainer

    small = dict(num_envs=8, num_steps=8, total_timesteps=8 * 8 * 4, num_minibatches=2, update_epochs=1, width=32,
                 hidden=32)
    out = {"numpy": _learner_twice(lambda: Trainer(TrainConfig(**small)))}
    try:
        from pycraftax.train.torch_trainer import TorchTrainer
    except ImportError as e:
        return out | {"torch": f"not run: {e}"}
    device = "cuda" if pycraftax.cuda_available() else "cpu"
    for name, model in (("paper", {}), ("fast", {"model": "cell-gru", "cell_dim": 8})):
        for switch in ((False, True) if device == "cuda" else (False,)):
            config = TrainConfig(**small, **model, deterministic=switch)
            label = f"torch {name} ({device}{', deterministic=True' if switch else ''})"
            try:
                out[label] = _learner_twice(lambda: TorchTrainer(config, device=device))
            except (ImportError, RuntimeError, ValueError) as e:
                out[label] = f"not run: {e}"
    return out


def gate() -> dict:
    from pycraftax import rules

    checks = {}
    for name, run in (("anchors", lambda: _pytest(PYTEST_CHECKS["anchors"])), ("upstream_lockstep", upstream_lockstep),
                      ("cuda", cuda), ("gradients", lambda: _pytest(PYTEST_CHECKS["gradients"]))):
        t = time.perf_counter()
        checks[name] = run()
        checks[name]["seconds"] = round(time.perf_counter() - t, 1)
        print(f"gate: {name}: {checks[name]['status']} ({checks[name]['seconds']} s): {checks[name]['detail']}",
              flush=True)
    passed = all(c["status"] != "failed" for c in checks.values()) and checks["anchors"]["status"] == "passed"
    return {"passed": passed, "checks": checks, "rules_fingerprint": rules.rules_fingerprint(),
            "rules": rules.describe(), "released": rules.released_name(), "deterministic": deterministic(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="where the gate's JSON is written")
    args = parser.parse_args(argv)
    result = gate()
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"gate: {'passed' if result['passed'] else 'FAILED'}: {result['rules']}; deterministic: "
          f"{result['deterministic']}")
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
