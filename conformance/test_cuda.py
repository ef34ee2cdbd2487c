"""C vs CUDA: the CUDA build (backend="cuda") is bit-identical to the C reference.

Runs on a machine with a GPU and cuda/build/libcraftax_cuda.so (`make -C cuda`); elsewhere
the whole module is skipped with the reason (which says "GPU").

  * the pinned trajectory-hash anchors of pycraftax/anchors.py, reproduced by backend="cuda";
  * reset states and obs equal on Hypothesis-drawn keys and batch sizes (non-multiples of 32);
  * lockstep C vs CUDA through env.step (auto-reset, with short time limits and injected
    deaths so that both reset paths run) and env.step_with_keys, comparing every state
    leaf, obs, reward, flags and info every step; a mismatch names the first diverging
    step, env and leaf (conftest.compare_states);
  * zero-copy handoff (data pointer equality) to PyTorch, CuPy and JAX where importable;
  * out-of-memory is a clear MemoryError that leaks nothing.

    /work/venv/bin/python -m pytest conformance/test_cuda.py
"""

from __future__ import annotations

import contextlib
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pycraftax
from pycraftax import anchors, jax_random

from conftest import FEW_EXAMPLES, compare_obs, compare_states, record_summary  # noqa: E402

if not pycraftax.cuda_available():
    from pycraftax import cuda_env

    pytest.skip(f"needs a GPU and the CUDA build: {cuda_env.unavailable_reason()}", allow_module_level=True)

from pycraftax import cuda_env  # noqa: E402

pytestmark = pytest.mark.cuda
ENV_ID = "Craftax-Symbolic-v1"
SETTINGS = settings(max_examples=max(FEW_EXAMPLES, 3), deadline=None, suppress_health_check=list(HealthCheck))
# batch sizes around warp (32) and block (128) boundaries, and odd ones
NUM_ENVS = st.one_of(st.sampled_from([1, 2, 31, 33, 65, 127, 129]), st.integers(1, 96))


def make_pair(num_envs: int, seed: int = 0, **params):
    c = pycraftax.make(ENV_ID, num_envs=num_envs, backend="c", seed=seed, **params)
    g = pycraftax.make(ENV_ID, num_envs=num_envs, backend="cuda", seed=seed, **params)
    return c, g


def host(x) -> np.ndarray:
    return x.numpy() if isinstance(x, cuda_env.CudaArray) else np.asarray(x)


def compare_step(t: int, c_out, g_out, c_env, g_env, keys=None) -> None:
    """Everything one step returns, and every state leaf, bitwise; names step/env/leaf."""
    context = f"step {t}"
    names = ("obs", "reward", "terminated", "truncated") if len(c_out) == 5 else ("obs", "reward", "done")
    for name, a, b in zip(names, c_out[:-1], g_out[:-1]):
        if name == "obs":
            compare_obs(a, host(b), keys, context=context)
        else:
            compare_states({name: np.asarray(a)}, {name: host(b)}, keys, context=context)
    c_info, g_info = c_out[-1], g_out[-1]
    assert set(c_info) == set(g_info), f"{context}: info keys differ: {set(c_info) ^ set(g_info)}"
    compare_states({k: np.asarray(v) for k, v in c_info.items()}, {k: host(v) for k, v in g_info.items()}, keys,
                   context=context + " info")
    compare_states(c_env.get_state(), g_env.get_state(), keys, context=context + " state")


def kill_some(envs, rng, fraction: float) -> None:
    """Injected deaths: player_health 0 in about `fraction` of the envs (then terminated), the
    same states set on every env object given."""
    state = envs[0].get_state()
    dead = rng.random(state["player_health"].shape[0]) < fraction
    state["player_health"] = np.where(dead, np.float32(0.0), state["player_health"]).astype(np.float32)
    for e in envs:
        e.set_state(state)


def step_pair(t: int, c, g, actions) -> None:
    """One env.step of the C and CUDA envs, compared (compare_step), counted for the summary."""
    c_out = c.step(actions)
    compare_step(t, c_out, g.step(actions), c, g)
    _COVERAGE["env-steps"] += len(actions)
    _COVERAGE["terminated"] += int(np.sum(c_out[2]))
    _COVERAGE["truncated"] += int(np.sum(c_out[3]))


# -- anchors --------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", sorted(anchors.ANCHORS))
def test_pinned_anchor_cuda(case):
    num_envs, steps, seed = case
    assert anchors.trajectory_hash(num_envs, steps, seed, backend="cuda") == anchors.pinned()[case]


@pytest.mark.parametrize("case", sorted(anchors.ANCHORS))
def test_pinned_anchor_cuda_compact(case):
    """The anchors again, hashed over obs="compact" records expanded in numpy."""
    num_envs, steps, seed = case
    assert anchors.trajectory_hash(num_envs, steps, seed, backend="cuda", obs="compact") == anchors.pinned()[case]


# -- reset ----------------------------------------------------------------------------------------
@SETTINGS
@given(num_envs=NUM_ENVS, data=st.data())
def test_reset_states_equal(num_envs, data):
    keys = np.array(data.draw(st.lists(st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)),
                                       min_size=num_envs, max_size=num_envs)), dtype=np.uint32).reshape(-1, 2)
    c, g = make_pair(num_envs)
    c_obs, _ = c.reset_with_keys(keys)
    g_obs, _ = g.reset_with_keys(keys)
    compare_obs(c_obs, g_obs.numpy(), keys, context="reset")
    compare_states(c.get_state(), g.get_state(), keys, context="reset")
    compare_obs(c.observe(), g.observe().numpy(), keys, context="observe after reset")
    g.close()


# -- lockstep -------------------------------------------------------------------------------------
# The step kernels' two layouts (the library picks one by batch size): a warp per env, or a
# thread per env whose full warps share their envs' spawn scans.
STEP_LAYOUTS = {"warp": "1000000", "thread": "0"}


@contextlib.contextmanager
def library_setting(name: str, value: str):
    """An environment variable the library reads at each call, set for the block."""
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old


def step_layout(layout: str):
    return library_setting("PYCRAFTAX_CUDA_WARP_STEP_MAX_ENVS", STEP_LAYOUTS[layout])


@SETTINGS
@given(
    seed=st.integers(0, 2**32 - 1),
    num_envs=NUM_ENVS,
    stream=st.integers(0, 2**32 - 1),
    max_timesteps=st.sampled_from([5, 17, 40, 100000]),
    kill=st.floats(0.0, 0.5),
    layout=st.sampled_from(sorted(STEP_LAYOUTS)),
)
def test_lockstep_autoreset(seed, num_envs, stream, max_timesteps, kill, layout):
    """env.step on both backends from the same seed and actions; short time limits (truncated)
    and injected deaths (player_health 0 -> terminated) make both auto-reset paths run; either
    step layout."""
    steps = 24
    c, g = make_pair(num_envs, seed=seed, max_timesteps=max_timesteps)
    c.reset(seed=seed)
    g.reset(seed=seed)
    rng = np.random.default_rng(stream)
    actions = rng.integers(0, 43, size=(steps, num_envs)).astype(np.int32)
    with step_layout(layout):
        for t in range(steps):
            if t == 3 and kill > 0:
                kill_some((c, g), rng, kill)
            step_pair(t, c, g, actions[t])
    g.close()


_COVERAGE = {"env-steps": 0, "terminated": 0, "truncated": 0}


def test_zz_report_coverage():
    """Summary line: how many auto-resets of each kind the lockstep compared."""
    record_summary(f"C vs CUDA env.step lockstep (auto and optimistic resets): {_COVERAGE['env-steps']} env-steps "
                   f"compared leaf by leaf, {_COVERAGE['terminated']} terminated and {_COVERAGE['truncated']} "
                   "truncated episode ends")
    assert _COVERAGE["env-steps"] == 0 or _COVERAGE["terminated"] + _COVERAGE["truncated"] > 0


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), num_envs=NUM_ENVS, stream=st.integers(0, 2**32 - 1))
def test_lockstep_step_with_keys(seed, num_envs, stream):
    """step_with_keys (upstream step_env, no auto-reset) with Hypothesis-drawn raw keys."""
    steps = 16
    c, g = make_pair(num_envs, seed=seed)
    reset_keys = jax_random.split(jax_random.prng_key(seed), num_envs)
    c.reset_with_keys(reset_keys)
    g.reset_with_keys(reset_keys)
    rng = np.random.default_rng(stream)
    keys = rng.integers(0, 2**32, size=(steps, num_envs, 2), dtype=np.uint32)
    actions = rng.integers(0, 43, size=(steps, num_envs)).astype(np.int32)
    for t in range(steps):
        c_out = c.step_with_keys(actions[t], keys[t])
        g_out = g.step_with_keys(actions[t], keys[t])
        compare_step(t, c_out, g_out, c, g, keys[t])
    g.close()


def test_long_lockstep_with_episode_ends():
    """A longer run with a short time limit: many auto-resets per env, hashed per step."""
    num_envs, steps = 100, 150
    c, g = make_pair(num_envs, seed=11, max_timesteps=30)
    c.reset(seed=11)
    g.reset(seed=11)
    actions = anchors.action_stream(num_envs, steps, 11)
    for t in range(steps):
        c_out = c.step(actions[t])
        g_out = g.step(actions[t])
        if not (np.array_equal(c_out[0], g_out[0].numpy()) and np.array_equal(c_out[1], g_out[1].numpy())):
            compare_step(t, c_out, g_out, c, g)
    compare_states(c.get_state(), g.get_state(), context=f"after {steps} steps")
    g.close()


def lockstep_layouts(kw: dict, variable: str, layouts: dict, steps: int, seed: int, monkeypatch,
                     kill_every: int = 0) -> None:
    """A CUDA env per layout (the library reads `variable` at each call) stepped beside the C
    env: env.reset, then `steps` random steps (and set_state kills every `kill_every` steps),
    every output and state leaf compared each step."""
    c = pycraftax.make(ENV_ID, backend="c", **kw)
    gs = {name: pycraftax.make(ENV_ID, backend="cuda", **kw) for name in layouts}
    c.reset(seed=seed)
    for name, g in gs.items():
        monkeypatch.setenv(variable, layouts[name])
        g.reset(seed=seed)
        compare_states(c.get_state(), g.get_state(), context=f"{name}: reset")
    rng = np.random.default_rng(seed)
    for t in range(steps):
        if kill_every and t % kill_every == kill_every // 2:
            kill_some((c, *gs.values()), rng, 0.2)
        actions = rng.integers(0, 43, size=kw["num_envs"]).astype(np.int32)
        c_out = c.step(actions)
        for name, g in gs.items():
            monkeypatch.setenv(variable, layouts[name])
            compare_step(t, c_out, g.step(actions), c, g)
        _COVERAGE["env-steps"] += len(gs) * kw["num_envs"]
    for g in gs.values():
        g.close()


@pytest.mark.parametrize("resets,despawn", [("auto", 14), ("optimistic", 14), ("auto", 40)])
def test_warp_and_thread_step_paths(resets, despawn, monkeypatch):
    """Both step kernel layouts, a warp per env (small batches: spawn_mobs' box scans shared
    by the lanes) and a thread per env (whose full warps share their envs' scans; 112 envs
    leave the last warp half empty, which scans alone), step like the C reference, every leaf
    every step; despawn 40 makes box rows wider than a warp (two ballots a row)."""
    kw = dict(num_envs=112, seed=5, max_timesteps=25, mob_despawn_distance=despawn, resets=resets)
    lockstep_layouts(kw, "PYCRAFTAX_CUDA_WARP_STEP_MAX_ENVS", STEP_LAYOUTS, 60, 5, monkeypatch, kill_every=9)


@pytest.mark.parametrize("resets", ["auto", "optimistic"])
@pytest.mark.parametrize("num_envs", [9, 64])
def test_world_generation_warps(resets, num_envs, monkeypatch):
    """World generation runs a warp per floor (nine warps a world, then a warp for the rest
    and the obs), each warp on its own scratch entry, as many warps as the GPU holds at once
    and never more than the batch's scratch entries. With 3 warps (PYCRAFTAX_CUDA_WORLD_WARPS)
    every warp takes many floors and worlds in turn; both like the C reference, every leaf
    every step, in env.reset and the step's resets (max_timesteps 7: most envs reset several
    times; 9 envs: fewer scratch entries than a world's floors)."""
    kw = dict(num_envs=num_envs, seed=21, max_timesteps=7, resets=resets)
    lockstep_layouts(kw, "PYCRAFTAX_CUDA_WORLD_WARPS", {"3 warps": "3", "all warps": "0"}, 16, 21, monkeypatch)


def test_scratch_is_per_running_warp_not_per_env():
    """The batch's world-generation scratch stops growing at the warps the GPU runs at once."""
    lib = cuda_env.load()
    entries = [int(lib.lib.craftax_cuda_scratch_entries(n)) for n in (1, 9, 1 << 20, 1 << 26)]
    assert entries[:2] == [1, 9]
    assert entries[2] == entries[3] < 1 << 20


@pytest.mark.parametrize("chunks,min_chunk_envs", [(1, 1), (3, 7), (16, 1)])
def test_lockstep_autoreset_chunks(chunks, min_chunk_envs):
    """The auto-reset step in several chunks (world generation of one chunk overlapping the
    step of the next, on two streams): same results as C, leaf by leaf every step."""
    lib = cuda_env.load()
    num_envs, steps = 101, 40
    lib.check(lib.lib.craftax_cuda_set_autoreset_chunks(chunks, min_chunk_envs), "set_autoreset_chunks")
    try:
        c, g = make_pair(num_envs, seed=5, max_timesteps=13)
        c.reset(seed=5)
        g.reset(seed=5)
        rng = np.random.default_rng(chunks)
        actions = rng.integers(0, 43, size=(steps, num_envs)).astype(np.int32)
        for t in range(steps):
            if t % 7 == 3:
                kill_some((c, g), rng, 0.2)
            step_pair(t, c, g, actions[t])
        g.close()
    finally:
        lib.check(lib.lib.craftax_cuda_set_autoreset_chunks(1, 16384), "set_autoreset_chunks")


@pytest.mark.parametrize("resets", ["auto", "optimistic"])
def test_achievement_rows_across_calls(resets):
    """step() rewrites an achievement row only where the env ends or ended in the step
    before (craftax_cuda_env_step): the rows stay equal to C's across endings with
    achievements, a step_with_keys and a reset in between."""
    num_envs, steps = 64, 18
    c, g = make_pair(num_envs, seed=9, max_timesteps=7, resets=resets)
    c.reset(seed=9)
    g.reset(seed=9)
    rng = np.random.default_rng(9)
    rows_set = 0
    for t in range(steps):
        actions = rng.integers(0, 43, size=num_envs).astype(np.int32)
        if t in (2, 10):  # ending with achievements: dead players holding random achievements
            state = c.get_state()
            state["achievements"] = rng.random(state["achievements"].shape) < 0.3
            state["player_health"] = np.where(rng.random(num_envs) < 0.4, np.float32(0.0),
                                              state["player_health"]).astype(np.float32)
            c.set_state(state)
            g.set_state(state)
        if t == 6:
            keys = rng.integers(0, 2**32, size=(num_envs, 2), dtype=np.uint32)
            compare_step(t, c.step_with_keys(actions, keys), g.step_with_keys(actions, keys), c, g, keys)
            continue
        if t == 13:
            c.reset(seed=10)
            g.reset(seed=10)
        c_out = c.step(actions)
        compare_step(t, c_out, g.step(actions), c, g)
        rows_set += int(np.any(np.asarray(c_out[-1]["achievements"]), axis=1).sum())
    assert rows_set > 0, "no step ended an episode with achievements"
    g.close()


# -- compact obs ----------------------------------------------------------------------------------
@pytest.mark.parametrize("num_envs,seed", [(37, 21), (130, 4)])
def test_compact_obs_lockstep(num_envs, seed):
    """obs="compact": every step (auto-reset with a short time limit and injected deaths, and
    step_with_keys and observe), the records expand on the GPU (env.expand_obs) and in numpy
    (obs_compact.expand) to the C reference's float obs bitwise; states equal C leaf by leaf."""
    from pycraftax import obs_compact

    steps = 30
    c = pycraftax.make(ENV_ID, num_envs=num_envs, backend="c", seed=seed, max_timesteps=11)
    g = pycraftax.make(ENV_ID, num_envs=num_envs, backend="cuda", seed=seed, max_timesteps=11, obs="compact")
    assert g.single_observation_space.shape == (obs_compact.COMPACT_SIZE,)

    def check(context, c_obs, g_rec):
        rec = host(g_rec)
        assert rec.shape == (num_envs, obs_compact.COMPACT_SIZE) and rec.dtype == np.uint8
        compare_obs(np.asarray(c_obs), obs_compact.expand(rec), context=context + " (numpy expand)")
        compare_obs(np.asarray(c_obs), host(g.expand_obs()), context=context + " (GPU expand)")
        compare_obs(np.asarray(c_obs), host(g.expand_obs(g_rec)), context=context + " (GPU expand, given records)")

    c_obs, _ = c.reset(seed=seed)
    g_rec, _ = g.reset(seed=seed)
    check("reset", c_obs, g_rec)
    rng = np.random.default_rng(seed)
    actions = rng.integers(0, 43, size=(steps, num_envs)).astype(np.int32)
    ends = 0
    for t in range(steps):
        if t % 9 == 4:
            state = c.get_state()
            dead = rng.random(num_envs) < 0.25
            state["player_health"] = np.where(dead, np.float32(0.0), state["player_health"]).astype(np.float32)
            c.set_state(state)
            g.set_state(state)
        c_out = c.step(actions[t])
        g_out = g.step(actions[t])
        check(f"step {t}", c_out[0], g_out[0])
        for name, a, b in zip(("reward", "terminated", "truncated"), c_out[1:4], g_out[1:4]):
            compare_states({name: np.asarray(a)}, {name: host(b)}, context=f"step {t}")
        compare_states(c.get_state(), g.get_state(), context=f"step {t} state")
        ends += int(np.sum(c_out[2]) + np.sum(c_out[3]))
    assert ends > 0
    check("observe", c.observe(), g.observe())
    keys = rng.integers(0, 2**32, size=(num_envs, 2), dtype=np.uint32)
    c_out = c.step_with_keys(actions[0], keys)
    g_out = g.step_with_keys(actions[0], keys)
    check("step_with_keys", c_out[0], g_out[0])
    g.close()


def test_compact_obs_needs_cuda():
    with pytest.raises(ValueError, match="compact"):
        pycraftax.make(ENV_ID, num_envs=2, backend="c", obs="compact")
    with pytest.raises(ValueError, match="obs"):
        pycraftax.make(ENV_ID, num_envs=2, backend="cuda", obs="half")


# -- CUDA graph -----------------------------------------------------------------------------------
def test_graph_replay_equals_eager():
    """craftax_cuda_step_autoreset_stream captured once in a CUDA graph (torch.cuda.graph) and
    replayed step after step equals the same call launched eagerly, bitwise: obs, reward,
    flags and every state leaf, with episode ends (short time limit, injected deaths)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    lib = cuda_env.load()
    ffi = lib.ffi
    num_envs, steps, seed = 67, 40, 8
    envs = [pycraftax.make(ENV_ID, num_envs=num_envs, backend="cuda", seed=seed, max_timesteps=9) for _ in range(2)]
    for e in envs:
        e.reset(seed=seed)
    dev = torch.device("cuda")
    actions_in = torch.zeros(num_envs, dtype=torch.int32, device=dev)
    keys_in = torch.zeros((num_envs, 2), dtype=torch.int32, device=dev)
    done_lists = [torch.zeros(num_envs + 1, dtype=torch.int32, device=dev) for _ in envs]

    def call(e, done_list, stream: int) -> None:
        p = lambda name, ct="void *": e._p(name, ct)  # noqa: E731
        lib.check(lib.lib.craftax_cuda_step_autoreset_stream(
            p("states"), ffi.cast("int32_t *", actions_in.data_ptr()), ffi.cast("uint32_t *", keys_in.data_ptr()),
            num_envs, e._params, p("obs", "float *"), p("reward", "float *"), p("done", "uint8_t *"),
            p("terminated", "uint8_t *"), p("truncated", "uint8_t *"), p("final_achievements", "uint8_t *"),
            p("scratch"), ffi.cast("int32_t *", done_list.data_ptr()), stream), "step_autoreset_stream")

    side = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        call(envs[1], done_lists[1], side.cuda_stream)
    rng = np.random.default_rng(seed)
    ends = 0
    for t in range(steps):
        if t % 8 == 5:
            kill_some(envs, rng, 0.3)
        actions_in.copy_(torch.as_tensor(rng.integers(0, 43, num_envs).astype(np.int32), device=dev))
        keys_in.copy_(torch.as_tensor(rng.integers(0, 2**32, (num_envs, 2), dtype=np.uint32).view(np.int32),
                                      device=dev))
        torch.cuda.synchronize()
        call(envs[0], done_lists[0], 0)
        lib.check(lib.lib.craftax_cuda_synchronize(), "synchronize")
        graph.replay()
        torch.cuda.synchronize()
        for name in ("obs", "reward", "done", "terminated", "truncated", "final_achievements"):
            a, b = host(envs[0]._views[name]), host(envs[1]._views[name])
            assert np.array_equal(a.view(np.uint8), b.view(np.uint8)), f"step {t}: {name} differs (graph vs eager)"
        compare_states(envs[0].get_state(), envs[1].get_state(), context=f"step {t} graph vs eager")
        ends += int(host(envs[0]._views["done"]).sum())
    assert ends > 0
    del graph
    for e in envs:
        e.close()


# -- API behaviour --------------------------------------------------------------------------------
def test_device_actions_and_bad_actions():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    c, g = make_pair(40, seed=3)
    c.reset(seed=3)
    g.reset(seed=3)
    actions = np.random.default_rng(0).integers(0, 43, 40).astype(np.int32)
    c_out = c.step(actions)
    g_out = g.step(torch.as_tensor(actions, device="cuda"))
    compare_step(0, c_out, g_out, c, g)
    before = g.get_state()
    with pytest.raises(ValueError):
        g.step(torch.full((40,), 43, dtype=torch.int32, device="cuda"))
    with pytest.raises(ValueError):
        g.step(np.full(40, -1, dtype=np.int32))
    compare_states(before, g.get_state(), context="a rejected step changed the state")
    for t in range(1, 4):  # nor the key stream or the episode accumulators: lockstep goes on
        a = np.random.default_rng(t).integers(0, 43, 40).astype(np.int32)
        compare_step(t, c.step(a), g.step(a), c, g)
    g.close()
    with pytest.raises(RuntimeError, match="closed"):
        g.step(actions)


def test_zero_copy_handoff():
    g = pycraftax.make(ENV_ID, num_envs=33, backend="cuda", seed=0)
    obs, _ = g.reset(seed=0)
    _, reward, terminated, _, info = g.step(np.zeros(33, dtype=np.int32))
    expected = obs.numpy()
    checked = []
    try:
        import torch

        if torch.cuda.is_available():
            t = torch.as_tensor(obs, device="cuda")
            assert t.data_ptr() == obs.ptr and t.dtype == torch.float32 and tuple(t.shape) == obs.shape
            assert np.array_equal(t.cpu().numpy(), expected)
            d = torch.from_dlpack(obs)
            assert d.data_ptr() == obs.ptr
            assert torch.as_tensor(terminated, device="cuda").dtype == torch.bool
            col = torch.as_tensor(info["Achievements/collect_wood"], device="cuda")
            assert col.data_ptr() == info["Achievements/collect_wood"].ptr
            checked.append("torch")
    except ImportError:
        pass
    try:
        import cupy

        a = cupy.asarray(obs)
        assert a.data.ptr == obs.ptr
        assert np.array_equal(cupy.asnumpy(a), expected)
        assert cupy.asarray(reward).data.ptr == reward.ptr
        checked.append("cupy")
    except ImportError:
        pass
    try:
        import jax

        if any(d.platform == "gpu" for d in jax.devices()):
            j = jax.dlpack.from_dlpack(obs)
            assert j.unsafe_buffer_pointer() == obs.ptr
            checked.append("jax")
    except (ImportError, RuntimeError):
        pass
    g.close()
    if not checked:
        pytest.skip("none of torch (with CUDA), cupy, jax (with a GPU) is importable")
    record_summary(f"zero-copy handoff (same device pointer) checked with: {', '.join(checked)}")


def test_out_of_memory_is_memory_error_without_leak():
    lib = cuda_env.load()
    free_before, total = lib.mem_info()
    too_many = int(total // cuda_env.CudaCraftaxEnv.bytes_per_env()) * 2 + 1
    with pytest.raises(MemoryError, match="GPU memory"):
        pycraftax.make(ENV_ID, num_envs=too_many, backend="cuda")
    # the all-or-nothing allocator itself: a satisfiable block, then an impossible one
    ptrs = lib.ffi.new("void *[]", 2)
    sizes = lib.ffi.new("size_t[]", [64 << 20, 1 << 50])
    assert lib.lib.craftax_cuda_malloc_many(ptrs, sizes, 2) == cuda_env.ERR_NO_MEMORY
    assert ptrs[0] == lib.ffi.NULL and ptrs[1] == lib.ffi.NULL
    free_after, _ = lib.mem_info()
    assert abs(free_after - free_before) < (32 << 20), (free_before, free_after)
    # the library still works after the failed allocation
    g = pycraftax.make(ENV_ID, num_envs=2, backend="cuda")
    g.reset(seed=0)
    g.close()


def test_closed_env_frees_memory():
    lib = cuda_env.load()
    free_before, _ = lib.mem_info()
    g = pycraftax.make(ENV_ID, num_envs=2048, backend="cuda")
    free_mid, _ = lib.mem_info()
    assert free_before - free_mid >= g.device_bytes
    g.close()
    free_after, _ = lib.mem_info()
    assert abs(free_after - free_before) < (32 << 20)
