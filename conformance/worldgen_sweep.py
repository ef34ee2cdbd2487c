"""World-generation sweep: C reset_with_keys against upstream reset_env on a long key stream.

    /work/venv/bin/python conformance/worldgen_sweep.py --keys 3000 --seed 7

Draws `--keys` keys from conftest.key_stream(seed) (pick a seed the tests do not use to get
fresh keys), resets them in batches of `--batch` with jit(vmap(reset_env)) of craftax 1.6.1
(the reference semantics of conformance/upstream.py) and with the C backend, and compares
every EnvState leaf of all nine floors and the observation, bitwise. Prints the number of
keys checked and, for each world that differs, its key and the differing leaves; exits 1
if any world differs. This is the measurement behind the world-generation lines of
CONFORMANCE.md ("Runs"); the pytest suite samples the same comparison (test_worldgen.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import upstream  # noqa: E402  (sets the XLA flag before jax is imported)
from conftest import diff_leaf, key_stream  # noqa: E402

import pycraftax  # noqa: E402


def world_differences(keys: np.ndarray) -> dict[int, list[str]]:
    """env index -> mismatch lines, for the worlds of `keys` that differ from upstream."""
    expected_obs, expected = upstream.reset(keys)
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=len(keys), backend="c")
    actual_obs, _ = env.reset_with_keys(keys)
    actual = env.get_state()
    assert set(actual) == set(expected), sorted(set(actual) ^ set(expected))
    out: dict[int, list[str]] = {}
    for i in range(len(keys)):
        one = keys[i : i + 1]
        lines = diff_leaf("obs", expected_obs[i : i + 1], actual_obs[i : i + 1], one)
        for name in expected:
            lines += diff_leaf(name, expected[name][i : i + 1], actual[name][i : i + 1], one)
        if lines:
            out[i] = lines
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=3000, help="number of keys (default 3000)")
    parser.add_argument("--seed", type=int, default=7, help="key_stream seed (the tests use 20240601)")
    parser.add_argument("--batch", type=int, default=64, help="keys per upstream call (default 64)")
    args = parser.parse_args()

    keys = key_stream(args.keys, seed=args.seed)
    start = time.perf_counter()
    differing = 0
    for b in range(0, len(keys), args.batch):
        batch = keys[b : b + args.batch]
        for i, lines in world_differences(batch).items():
            differing += 1
            k = batch[i]
            print(f"key [{int(k[0])}, {int(k[1])}] (stream index {b + i}) differs:")
            for line in lines:
                print("   ", line)
    print(
        f"{len(keys)} keys (key_stream seed {args.seed}, batches of {args.batch}): {differing} world(s) differ "
        f"on some leaf or the obs ({time.perf_counter() - start:.0f}s)"
    )
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
