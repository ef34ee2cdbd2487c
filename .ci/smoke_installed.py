"""Smoke test of an installed pycraftax (a wheel, or the README's `pip install`), run by the nox
sessions `wheel` and `install` with the venv's python from a directory outside the source tree:
make, reset and step on the C backend, gymnasium, `pycraftax eval --pretrained`, `--version`,
the CPU variant picked; with --jax, pycraftax.jax in a jitted scan; with --cuda, the CUDA
library and its headers bound without a GPU, and the backend's reason naming the missing GPU.

    python smoke_installed.py [--jax] [--cuda] [--expect-ffi packaged|built]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"smoke test failed: {what}")
    print(f"ok: {what}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jax", action="store_true")
    parser.add_argument("--cuda", action="store_true")
    parser.add_argument("--expect-ffi", choices=("packaged", "built"), default=None,
                        help="the XLA FFI library must come with the install, or be built at first import")
    args = parser.parse_args()

    import numpy as np

    import pycraftax
    from pycraftax import _native

    package = Path(pycraftax.__file__).resolve().parent
    check("site-packages" in str(package), f"pycraftax imported from the install ({package})")
    print(f"   C extension: {_native.EXTENSION_MODULE} ({_native.CPU_VARIANT}): {_native.compile_args()}")
    check("-march=native" not in _native.compile_args(), "the C extension is portable (no -march=native)")

    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=8, backend="c")
    obs, _ = env.reset(seed=0, options={})
    actions = np.random.default_rng(0).integers(0, 43, size=8).astype(np.int32)
    for _ in range(50):
        obs, reward, terminated, truncated, info = env.step(actions)
    check(obs.shape == (8, 8268) and np.isfinite(obs).all(), "make, reset and 50 steps of 8 envs on the C backend")

    import gymnasium

    genv = gymnasium.make("pycraftax/Craftax-Symbolic-v1")
    gobs, _ = genv.reset(seed=1)
    gobs, *_ = genv.step(genv.action_space.sample())
    venv = gymnasium.make_vec("pycraftax/Craftax-Symbolic-v1", num_envs=4, vectorization_mode="vector_entry_point")
    vobs, _ = venv.reset(seed=2)
    check(gobs.shape == (8268,) and vobs.shape == (4, 8268), "gymnasium.make and make_vec")
    try:
        genv.render()
    except NotImplementedError as exc:
        check("pycraftax render" in str(exc), "gymnasium render() names what to use instead")

    script = Path(sys.executable).with_name("pycraftax")
    version = subprocess.run([str(script), "--version"], capture_output=True, text=True)
    check(version.stdout.strip() == f"pycraftax {pycraftax.__version__}", f"pycraftax --version: {version.stdout.strip()}")
    out = subprocess.run([str(script), "eval", "--pretrained", "fast-1e9", "--episodes", "2", "--num-envs", "2"],
                         capture_output=True, text=True)
    print("   " + (out.stdout.strip().splitlines() or [out.stderr.strip()])[0])
    check(out.returncode == 0 and "2 episodes: return" in out.stdout, "pycraftax eval --pretrained fast-1e9")

    from pycraftax import cuda_env

    reason = cuda_env.unavailable_reason()
    print(f"   backend='cuda': {reason or 'available'}")
    if cuda_env.driver_problem() is not None:
        check(reason is not None and "no GPU" in reason and "insufficient" not in reason,
              "without a GPU driver the CUDA backend says there is no GPU")
    if args.cuda:
        path = cuda_env.library_path()
        check(path is not None and path.parent == package, f"the CUDA library is installed ({path})")
        ffi, lib = cuda_env.bind(path)
        check(lib.craftax_cuda_api_version() > 0, "the CUDA library binds with its installed headers (no GPU needed)")
        from pycraftax.train import cuda_ops

        fast_ffi, fast_lib = cuda_ops._bind()
        check(fast_lib.craftax_fast_api_version() > 0, "the fast recipe's kernels bind from the installed library")
        from pycraftax import rules

        cuda_rules = ffi.string(lib.craftax_cuda_rules_fingerprint()).decode()
        check(cuda_rules == pycraftax.rules_fingerprint(), f"the CUDA library carries the C extension's rules "
                                                            f"({cuda_rules})")
        ours = rules.rules_fingerprint
        rules.rules_fingerprint = lambda: "000000000000"
        try:
            cuda_env._Lib(path)
            refused = ""
        except RuntimeError as exc:
            refused = str(exc)
        rules.rules_fingerprint = ours
        check("other rules" in refused, "a CUDA library of other rules than the C extension's is refused at load")

    if args.jax:
        import jax

        cache = Path(os.environ.get("PYCRAFTAX_CACHE_DIR", "")) if os.environ.get("PYCRAFTAX_CACHE_DIR") else None
        import pycraftax.jax as pjax
        from pycraftax.jax import _ffi

        library = Path(_ffi._LIBRARY._name)
        print(f"   XLA FFI library: {library}")
        if args.expect_ffi == "packaged":
            check(library.parent == package / "jax", "the XLA FFI library comes with the install")
        elif args.expect_ffi == "built":
            check(cache is not None and cache in library.parents, "the XLA FFI library was built at first import")
        jenv = pjax.make_craftax_env_from_name("Craftax-Symbolic-v1", auto_reset=True)
        params = jenv.default_params
        keys = jax.random.split(jax.random.PRNGKey(0), 16)
        jobs, state = jax.vmap(jenv.reset, in_axes=(0, None))(keys, params)

        def body(s, k):
            o, s, r, d, _ = jax.vmap(jenv.step, in_axes=(0, 0, 0, None))(
                jax.random.split(k, 16), s, jax.numpy.zeros(16, jax.numpy.int32), params)
            return s, r

        _, rewards = jax.jit(lambda s: jax.lax.scan(body, s, jax.random.split(jax.random.PRNGKey(1), 20)))(state)
        c = pycraftax.make("Craftax-Symbolic-v1", num_envs=16, backend="c")
        c_obs, _ = c.reset_with_keys(np.asarray(keys))
        check(rewards.shape == (20, 16) and np.array_equal(np.asarray(jobs), c_obs),
              "pycraftax.jax: reset equal to the C env's, 20 steps of 16 envs in a jitted scan")
        if args.cuda:
            check(_ffi.CUDA_LIBRARY.exists(), "the CUDA XLA FFI handlers come with the install")
    print("smoke test passed")


if __name__ == "__main__":
    main()
