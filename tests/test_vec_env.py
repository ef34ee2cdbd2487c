"""The env contract of pycraftax.vec_env.CraftaxVecEnv on the C backend: gymnasium spaces and
their bounds, seeding, reset-before-step, threads, copy/pickle, context manager, torch/JAX
actions, the key property, and that every bad input names the argument and changes nothing.
The CUDA-side pieces that need no GPU (loading without the C extension, find_header, the API
version define) are tested here too."""

from __future__ import annotations

import copy
import pickle
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import gymnasium
import numpy as np
import pytest

import pycraftax
from pycraftax import _state, cuda_env, jax_random
from pycraftax.vec_env import NUM_ACTIONS, OBS_SIZE, observation_high, observation_low

ROOT = Path(__file__).resolve().parent.parent


def make(num_envs=2, seed=0, **kw):
    return pycraftax.make("Craftax-Symbolic-v1", num_envs=num_envs, backend="c", seed=seed, **kw)


def snapshot(env):
    return env.get_state(), env.key


def assert_unchanged(env, before):
    state, key = before
    after = env.get_state()
    for name in state:
        np.testing.assert_array_equal(state[name], after[name], err_msg=name)
    np.testing.assert_array_equal(env.key, key)


# -- spaces ------------------------------------------------------------------------------------
def test_spaces_are_gymnasium_and_batched():
    env = make(3)
    assert isinstance(env.single_observation_space, gymnasium.spaces.Box)
    assert isinstance(env.single_action_space, gymnasium.spaces.Discrete)
    assert env.single_action_space.n == NUM_ACTIONS
    assert env.single_observation_space.shape == (OBS_SIZE,) and env.single_observation_space.dtype == np.float32
    assert env.observation_space.shape == (3, OBS_SIZE)
    assert isinstance(env.action_space, gymnasium.spaces.MultiDiscrete)
    np.testing.assert_array_equal(env.action_space.nvec, [NUM_ACTIONS] * 3)
    assert gymnasium.spaces.flatdim(env.single_observation_space) == OBS_SIZE
    assert env.single_observation_space.high.max() > 1.0, "some obs entries exceed 1 (e.g. mana / 10)"


def test_trajectory_obs_stay_in_the_box():
    env = make(4, seed=3, max_timesteps=40)  # short episodes: the auto-reset obs are in the run
    obs, _ = env.reset(seed=3)
    space = env.observation_space
    assert space.contains(obs)
    rng = np.random.default_rng(0)
    for _ in range(120):
        obs, *_ = env.step(rng.integers(0, NUM_ACTIONS, 4).astype(np.int32))
        assert space.contains(obs), np.argwhere((obs < space.low) | (obs > space.high))[:5]


def extreme_state(env, which: str) -> dict:
    """The reset state with every integer leaf the obs reads at the top (or bottom) of its
    set_state domain, health at 8 + strength, and the light level at 1 (or 0)."""
    state = env.get_state()
    for leaf in _state.LEAVES:
        read_by_obs = leaf.name.startswith("inventory.") or leaf.name in (
            "player_food", "player_drink", "player_energy", "player_mana", "player_xp", "player_dexterity",
            "player_strength", "player_intelligence", "sword_enchantment", "bow_enchantment", "armour_enchantments")
        if read_by_obs:
            state[leaf.name][...] = leaf.max_value if which == "max" else leaf.min_value
    state["player_health"][...] = 8.0 + state["player_strength"] if which == "max" else 0.0
    state["light_level"][...] = 1.0 if which == "max" else 0.0
    state["player_level"][...] = 8 if which == "max" else 0
    state["is_sleeping"][...] = which == "max"
    state["learned_spells"][...] = which == "max"
    return state


@pytest.mark.parametrize("which", ["max", "min"])
def test_injected_extreme_states_obs_stay_in_the_box(which):
    env = make(2)
    env.reset(seed=0)
    env.set_state(extreme_state(env, which))
    obs = env.observe()
    low, high = observation_low(), observation_high()
    assert env.single_observation_space.contains(obs[0])
    outside = np.argwhere((obs < low) | (obs > high))
    assert outside.size == 0, f"obs entries outside the Box: {outside[:5].tolist()}"
    scalars = obs[0, OBS_SIZE - 51:]
    if which == "max":  # the bounds are tight where the state is extreme
        # books / 2, bow, health / 10, food / 10, mana / 10, xp / 10
        tight = [10, 15, 22, 23, 26, 27]
        np.testing.assert_allclose(scalars[tight], high[OBS_SIZE - 51:][tight], rtol=1e-6)
    else:  # xp / 10 is the one scalar below 0: xp is a counter that wraps in int32
        assert scalars[27] == low[OBS_SIZE - 51 + 27] < 0


# -- seeding -----------------------------------------------------------------------------------
def rollout(env, seed, steps=12):
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(1)
    out = [obs]
    for _ in range(steps):
        obs, reward, terminated, truncated, _ = env.step(rng.integers(0, NUM_ACTIONS, env.num_envs).astype(np.int32))
        out += [obs, reward, terminated, truncated]
    return out


def test_reset_seed_fixes_the_whole_trajectory():
    a, b = make(3, seed=0), make(3, seed=12345)
    first = rollout(a, seed=7)
    for x, y in zip(first, rollout(b, seed=7)):
        np.testing.assert_array_equal(x, y)
    for x, y in zip(first, rollout(a, seed=7)):  # again on the same env, after it has stepped
        np.testing.assert_array_equal(x, y)
    other = rollout(make(3, seed=0), seed=8)
    assert not all(np.array_equal(x, y) for x, y in zip(first, other))


def test_reset_seed_restarts_the_key_stream_at_prng_key():
    env = make(2, seed=0)
    env.reset(seed=9)
    np.testing.assert_array_equal(env.key, jax_random.prng_key(9))


def test_step_before_reset_raises_and_changes_nothing():
    env = make(2)
    before = env._states.copy()
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(2, np.int32))
    with pytest.raises(RuntimeError, match="reset"):
        env.step_with_keys(np.zeros(2, np.int32), np.zeros((2, 2), np.uint32))
    # there is no game state before a reset to read either (set_state would refuse the zeros)
    for call in (env.get_state, env.observe):
        with pytest.raises(RuntimeError, match=r"before the first reset: call env.reset\(\)"):
            call()
    np.testing.assert_array_equal(env._states, before)
    env.reset_with_keys(jax_random.split(jax_random.prng_key(0), 2))
    env.step(np.zeros(2, np.int32))  # any reset (or set_state) allows stepping


@pytest.mark.parametrize("num_envs", [np.int64(3), np.int32(3), np.uint8(3)])
def test_num_envs_accepts_numpy_integers(num_envs):
    env = make(num_envs)
    assert env.num_envs == 3 and type(env.num_envs) is int
    assert env.reset(seed=0)[0].shape == (3, OBS_SIZE)


@pytest.mark.parametrize("num_envs, exc", [(np.float64(3), TypeError), (np.int64(0), ValueError), (True, TypeError)])
def test_num_envs_bad_values_name_the_argument(num_envs, exc):
    with pytest.raises(exc, match="num_envs"):
        make(num_envs)


def test_batch_too_large_for_memory_fails_at_make():
    with pytest.raises(MemoryError, match=r"envs need about .* use at most about"):
        make(10**9)


# -- threads, copies, lifecycle ----------------------------------------------------------------
def test_close_while_another_thread_steps_does_not_crash():
    """The close-during-step repro of issue 22, 100 times: the stepping thread ends with the
    closed-env RuntimeError, never a crash, and each round ends in bounded time."""
    start = time.monotonic()
    for round_ in range(100):
        env = make(8, seed=round_)
        env.reset()
        errors, started = [], threading.Event()

        def loop():
            try:
                while True:
                    env.step(np.zeros(8, np.int32))
                    started.set()
            except RuntimeError as exc:
                errors.append(exc)
            finally:
                started.set()

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        started.wait(30)
        env.close()
        thread.join(30)
        assert not thread.is_alive(), f"round {round_}: the stepping thread did not stop"
        assert len(errors) == 1 and "closed" in str(errors[0])
    assert time.monotonic() - start < 300


def test_steps_from_two_threads_are_serialised():
    env = make(4, seed=1)
    env.reset(seed=1)
    barrier = threading.Barrier(2)

    def run():
        barrier.wait()
        for _ in range(20):
            env.step(np.zeros(4, np.int32))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_array_equal(env.get_state()["timestep"], [40] * 4)


@pytest.mark.parametrize("how", [copy.copy, copy.deepcopy, pickle.dumps])
def test_copy_and_pickle_refuse_and_name_get_state(how):
    env = make(2)
    env.reset(seed=0)
    with pytest.raises(TypeError, match="get_state"):
        how(env)


def test_context_manager_closes():
    with make(2) as env:
        env.reset(seed=0)
    with pytest.raises(RuntimeError, match="closed"):
        env.reset(seed=0)
    env.close()  # closing twice is a no-op
    assert "closed" in repr(env)


def test_repr_names_the_configuration():
    env = make(4, resets="optimistic", reset_ratio=2)
    assert repr(env) == ("CraftaxEnv('Craftax-Symbolic-v1', num_envs=4, backend='c', resets='optimistic', "
                         "reset_ratio=2)")


# -- the key property ---------------------------------------------------------------------------
def test_key_property_copies_and_validates():
    env = make(2, seed=4)
    key = env.key
    key[0] = 99
    np.testing.assert_array_equal(env.key, jax_random.prng_key(4))
    new = np.array([5, 6], np.uint32)
    env.key = new
    new[0] = 0
    np.testing.assert_array_equal(env.key, [5, 6])
    for bad in ([1, 2], np.array([1, 2], np.int64), np.zeros(3, np.uint32)):
        with pytest.raises(TypeError, match="key must be a numpy uint32 array of shape"):
            env.key = bad
        np.testing.assert_array_equal(env.key, [5, 6])


def test_bad_reset_seed_changes_nothing():
    env = make(2)
    env.reset(seed=0)
    before = snapshot(env)
    for bad, exc in ((-1, ValueError), (2**32, ValueError), (1.5, TypeError), ("0", TypeError)):
        with pytest.raises(exc, match="seed"):
            env.reset(seed=bad)
        assert_unchanged(env, before)


# -- torch and JAX actions -----------------------------------------------------------------------
def reference_step(actions_np):
    env = make(4, seed=2)
    env.reset(seed=2)
    return env.step(actions_np)


def test_jax_array_actions():
    jnp = pytest.importorskip("jax.numpy")
    actions = np.array([1, 5, 0, 42], np.int32)
    expected = reference_step(actions)
    env = make(4, seed=2)
    env.reset(seed=2)
    got = env.step(jnp.asarray(actions))
    for x, y in zip(expected[:4], got[:4]):
        np.testing.assert_array_equal(x, y)
    env.reset(seed=2)
    before = snapshot(env)
    with pytest.raises(ValueError, match="actions"):
        env.step(jnp.asarray([1, 5, 0, 43], dtype=jnp.int32))
    assert_unchanged(env, before)


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_torch_cpu_tensor_actions(dtype):
    torch = pytest.importorskip("torch")
    actions = np.array([1, 5, 0, 42], np.int32)
    expected = reference_step(actions)
    env = make(4, seed=2)
    env.reset(seed=2)
    got = env.step(torch.tensor(actions.tolist(), dtype=getattr(torch, dtype)))
    for x, y in zip(expected[:4], got[:4]):
        np.testing.assert_array_equal(x, y)
    before = snapshot(env)
    with pytest.raises(TypeError, match="integer dtype"):
        env.step(torch.zeros(4, dtype=torch.float32))
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        env.step(torch.zeros(3, dtype=torch.int64))
    assert_unchanged(env, before)


def test_python_lists_are_refused_with_the_allowed_types():
    env = make(2)
    env.reset(seed=0)
    with pytest.raises(TypeError, match="numpy array, a torch tensor or a JAX array"):
        env.step([0, 0])


# -- the CUDA backend's pure-Python parts (no GPU needed) -----------------------------------------
def test_cuda_env_loads_without_the_c_extension():
    code = textwrap.dedent("""
        import sys
        sys.modules["pycraftax._craftax_c"] = None  # importing it now raises ImportError
        import numpy as np
        import pycraftax
        from pycraftax import cuda_env, jax_random, _state
        assert "pycraftax._native" not in sys.modules
        assert jax_random.split(jax_random.prng_key(1), 3).shape == (3, 2)
        assert _state.STATE_SIZE > 0 and len(_state.LEAVES) > 50
        reason = cuda_env.unavailable_reason()
        assert pycraftax.cuda_available() == (reason is None)
        try:
            import pycraftax._native
        except ImportError as exc:
            assert "not built" in str(exc)
        else:
            raise AssertionError("the C extension was blocked")
        print("ok", "pycraftax._native" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == "ok"


def test_without_a_gpu_driver_the_cuda_library_is_not_loaded_and_the_reason_says_no_gpu():
    code = textwrap.dedent("""
        import ctypes, warnings
        real = ctypes.CDLL
        def cdll(name, *args, **kwargs):
            if name == "libcuda.so.1":  # as on a machine without the NVIDIA driver
                raise OSError("libcuda.so.1: cannot open shared object file: No such file or directory")
            return real(name, *args, **kwargs)
        ctypes.CDLL = cdll
        import pycraftax
        from pycraftax import cuda_env
        def never(path):
            raise AssertionError("the CUDA library was loaded without a driver")
        cuda_env._Lib = never
        reason = cuda_env.unavailable_reason()
        assert reason == "pycraftax CUDA backend: no GPU: this machine has no NVIDIA driver (libcuda.so.1 cannot be "\
                         "loaded)", reason
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            env = pycraftax.make("Craftax-Symbolic-v1", backend="auto")
        assert env.backend == "c" and "no GPU" in str(caught[0].message), caught
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_expected_api_version_reads_the_define(tmp_path):
    header = tmp_path / "craftax_cuda.h"
    header.write_text("/* x */\n#define CRAFTAX_ERR_NULL -1\n#define CRAFTAX_CUDA_API_VERSION 8\nint f(void);\n")
    assert cuda_env.expected_api_version(header) == 8
    header.write_text("#define CRAFTAX_ERR_NULL -1\nint f(void);\n")
    with pytest.raises(RuntimeError, match="defines no CRAFTAX_CUDA_API_VERSION"):
        cuda_env.expected_api_version(header)


def test_find_header_source_tree_and_missing(tmp_path):
    library = tmp_path / "libcraftax_cuda.so"  # not beside the package: the source tree comes first
    assert cuda_env.find_header("params.h", library) == ROOT / "reference_c" / "include" / "craftax" / "params.h"
    assert cuda_env.find_header("craftax_cuda.h", library) == ROOT / "cuda" / "craftax_cuda.h"
    with pytest.raises(FileNotFoundError, match="no_such.h"):
        cuda_env.find_header("no_such.h", library)


def test_native_handles_is_a_frozen_dataclass():
    handles = cuda_env.NativeHandles(states=1, scratch=2, params=3, params_size=4)
    with pytest.raises(AttributeError):
        handles.states = 5
    assert (handles.states, handles.scratch, handles.params, handles.params_size) == (1, 2, 3, 4)


def test_source_tree_import_says_why_the_extension_is_missing(tmp_path):
    """A clone without the compiled extension, with Python run from its root while pycraftax is
    installed (as `pip install .` leaves it: the clone also holds the pycraftax.egg-info of that
    build), says that the source tree shadows the install, and what to do."""
    tree = tmp_path / "checkout"
    (tree / "pycraftax").mkdir(parents=True)
    (tree / "reference_c").mkdir()
    (tree / "pycraftax.egg-info").mkdir()
    (tree / "pycraftax.egg-info" / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: pycraftax\nVersion: 0.1.0\n")
    (tree / "setup.py").write_text("")
    for source in (ROOT / "pycraftax").glob("*.py"):
        (tree / "pycraftax" / source.name).write_text(source.read_text())
    site = tmp_path / "site"
    shutil.copytree(ROOT / "pycraftax", site / "pycraftax", ignore=shutil.ignore_patterns("__pycache__", "agents"))
    code = textwrap.dedent("""
        import sys
        # an editable install's finder would map pycraftax to this worktree whatever the cwd
        sys.meta_path[:] = [f for f in sys.meta_path if "Editable" not in getattr(f, "__name__", "")]
        sys.path.append(sys.argv[2])  # the install, behind the current directory as site-packages is
        import pycraftax
        assert pycraftax.__file__.startswith(sys.argv[1]), pycraftax.__file__
        pycraftax.make("Craftax-Symbolic-v1", backend="c")
    """)
    out = subprocess.run([sys.executable, "-c", code, str(tree), str(site)], cwd=tree, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode != 0
    assert f"Python imported the source tree {tree / 'pycraftax'}, which shadows the installed pycraftax " \
           f"({site / 'pycraftax'})" in out.stderr
    assert "Run Python from any other directory" in out.stderr and "pip install -e ." in out.stderr


def test_hook_tests_fail_without_the_test_extension_and_say_how_to_build_it():
    code = textwrap.dedent("""
        import sys
        for variant in ("", "_x86_64_v3"):  # as in a build without PYCRAFTAX_TEST_HOOKS=1
            sys.modules["pycraftax._craftax_test" + variant] = None
        import pycraftax._test_hooks
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "ImportError" in out.stderr and "PYCRAFTAX_TEST_HOOKS=1" in out.stderr


def test_shipped_extension_has_no_test_hooks():
    from pycraftax._native import lib

    assert not [name for name in dir(lib) if name.startswith("craftax_test_")]


@pytest.mark.parametrize("kwargs, exc, message", [
    (dict(obs="half"), ValueError, r"obs must be one of \['float', 'compact'\]"),
    (dict(obs="compact"), ValueError, "obs='compact' needs backend='cuda'"),
    (dict(resets="sometimes"), ValueError, r"resets must be one of \['auto', 'optimistic'\]"),
    (dict(resets="optimistic", reset_ratio=3), ValueError, "reset_ratio must be >= 1 and divide num_envs=4"),
    (dict(resets="optimistic", reset_ratio=2.0), TypeError, "reset_ratio must be an int"),
    (dict(reset_ratio=2), ValueError, "reset_ratio applies to resets='optimistic' only"),
    (dict(seed=-1), ValueError, r"seed must be in \[0, 2\*\*32\)"),
])
def test_make_bad_arguments_name_the_argument_and_the_allowed_values(kwargs, exc, message):
    with pytest.raises(exc, match=message):
        make(4, **kwargs)


def test_unknown_backend_lists_the_backends():
    with pytest.raises(ValueError, match=r"choose one of \['auto', 'c', 'cuda'\]"):
        pycraftax.make("Craftax-Symbolic-v1", num_envs=2, backend="tpu")
