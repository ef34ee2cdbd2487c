"""The state domain (docs/STATE_DOMAIN.md) and what set_state promises.

- set_state checks exactly what it writes: masked arrays are refused, ndarray subclasses are
  read as the plain arrays they hold, values are copied before they are checked, and the C
  extension checks the bytes as written (the two reproducers of a SIGSEGV and of a heap
  corruption are here);
- the domain is closed under step: set_state(get_state()) succeeds after random steps from
  random accepted states under random accepted params, on both games;
- obs stay inside the declared observation_space over random accepted states;
- god mode walks off the map and back inside the domain, and a step from its edge is refused.

Hypothesis examples per HYPOTHESIS_PROFILE: dev few, ci enough to cover every param extreme.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pycraftax
from pycraftax import _state

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's fuzz/ helpers
from fuzz import inputs  # noqa: E402

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "dev")
EXAMPLES = {"dev": 6, "ci": 30, "thorough": 600}.get(PROFILE, 6)
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def make(env_id=inputs.CRAFTAX, num_envs=2, **params):
    env = pycraftax.make(env_id, num_envs=num_envs, backend="c", **params)
    env.reset(seed=0)
    return env


def assert_unchanged(env, before):
    after = env.get_state()
    for name, value in before.items():
        np.testing.assert_array_equal(value, after[name], err_msg=f"{name} changed")


# -- the issue's reproducers ---------------------------------------------------------------------
def test_masked_player_level_is_refused_not_a_segfault():
    """A masked player_level of 10**6 passed np.any's check and was written: observe() then read
    far outside the state (SIGSEGV)."""
    env = make(num_envs=1)
    before = env.get_state()
    state = env.get_state()
    state["player_level"] = np.ma.array([10**6], mask=[True], dtype=np.int32)
    with pytest.raises(TypeError, match=r"state\['player_level'\] must be a plain numpy array, got a numpy masked"):
        env.set_state(state)
    assert_unchanged(env, before)
    assert np.all(np.isfinite(env.observe()))


def test_masked_classic_map_is_refused_not_a_heap_corruption():
    """A fully masked map of 255s was accepted; observe() then wrote past the obs rows."""
    env = make(inputs.CLASSIC, num_envs=1)
    before = env.get_state()
    state = env.get_state()
    state["map"] = np.ma.array(np.full((1, 64, 64), 255, np.int32), mask=True)
    with pytest.raises(TypeError, match=r"state\['map'\] must be a plain numpy array"):
        env.set_state(state)
    assert_unchanged(env, before)
    assert np.all(np.isfinite(env.observe()))


@pytest.mark.parametrize("leaf, value", [("inventory.torches", -(2**31)), ("map", -1), ("player_health", np.nan)])
def test_masked_arrays_are_refused_whatever_they_hide(leaf, value):
    """The other faces of the hole: a NaN obs from masked torches, a masked -1 read back as 255,
    a masked NaN float. Masked arrays are refused even when nothing is masked."""
    env = make()
    state = env.get_state()
    data = state[leaf].copy()
    data.reshape(-1)[0] = value
    for mask in (True, False):
        state[leaf] = np.ma.array(data, mask=mask)
        with pytest.raises(TypeError, match="masked"):
            env.set_state(state)


def test_subclasses_are_read_as_the_plain_arrays_they_hold():
    """An ndarray subclass (np.memmap-like, or one whose any/all lie) is checked and written as
    the plain array it holds: an out-of-domain value inside it is refused."""
    env = make()
    state = env.get_state()
    state["map"] = state["map"].view(inputs.LyingSubclass)
    env.set_state(state)  # the values themselves are fine
    bad = env.get_state()
    bad["map"][1, 0, 0, 0] = 37
    bad["map"] = bad["map"].view(inputs.LyingSubclass)
    with pytest.raises(ValueError, match=r"state\['map'\] value 37 at index \(1, 0, 0, 0\) is outside \[0, 36\]"):
        env.set_state(bad)


def test_set_state_writes_the_values_it_checked():
    """set_state copies each leaf before checking it: changing the caller's arrays afterwards
    (or from another thread while it runs) cannot slip an unchecked value in."""
    env = make()
    state = env.get_state()
    level = state["player_level"]
    stop = threading.Event()

    def scribble():
        while not stop.is_set():
            level[0] = 10**6
            level[0] = 3

    thread = threading.Thread(target=scribble)
    thread.start()
    try:
        for _ in range(50):
            try:
                env.set_state(state)
            except ValueError as exc:  # the scribbler's value was in the copy: refused, named
                assert "player_level" in str(exc)
            assert env.get_state()["player_level"][0] == 3  # what was checked, never the scribbler's value
            env.observe()
    finally:
        stop.set()
        thread.join()


def test_mixed_type_keys_name_the_unknown_keys():
    env = make()
    state = env.get_state()
    state[0] = np.zeros(2)
    with pytest.raises(KeyError, match=r"unknown keys \[0\]; its keys must be exactly the leaf names"):
        env.set_state(state)


# -- the C extension's own checks ----------------------------------------------------------------
def test_c_checks_the_written_bytes_when_python_misses_a_value(monkeypatch):
    """Were the Python checks fooled, the C check of the bytes as written still refuses, with
    the same message, and the env is unchanged."""
    env = make()
    before = env.get_state()
    state = env.get_state()
    state["player_level"][0] = 9  # the C check reports the lowest env, then the first leaf
    state["light_level"][1] = np.float32(2.0)
    monkeypatch.setattr(_state.Leaf, "outside", lambda self, values: np.zeros(values.shape, bool))
    with pytest.raises(ValueError, match=r"state\['player_level'\] value 9 at index \(0,\) is outside \[0, 8\]"):
        env.set_state(state)
    assert_unchanged(env, before)
    state["player_level"][0] = 8
    with pytest.raises(ValueError, match=r"state\['light_level'\] value 2.0 at index \(1,\) is outside \[0.0, 1.0\]"):
        env.set_state(state)
    monkeypatch.setattr(_state.LeafTable, "_check_masked_mobs_alive", lambda self, converted: None)
    state["light_level"][1] = 0.5
    state["melee_mobs.mask"][1, 4, 2] = True
    state["melee_mobs.health"][1, 4, 2] = 0.0
    with pytest.raises(ValueError, match=r"state\['melee_mobs.health'\] is 0.0 at index \(1, 4, 2\) where"):
        env.set_state(state)
    assert_unchanged(env, before)


@pytest.mark.parametrize("env_id", inputs.ENV_IDS)
def test_c_check_finds_every_leaf_out_of_domain(env_id):
    """craftax_check_states (through check_written) refuses one value just outside the domain
    of each leaf in turn, naming that leaf and index."""
    table = inputs.table(env_id)
    env = make(env_id, num_envs=2)
    good = table.validate_state(env.get_state(), 2)
    for leaf in table.leaves:
        if leaf.dtype in (np.bool_, np.uint32):
            if leaf.dtype == np.uint32:
                continue
            bad_value = 2  # a bool stored as a byte other than 0 or 1
        elif leaf.dtype == np.float32:
            bad_value = np.float32(np.nan)
        elif leaf.max_value < INT32_MAX:
            bad_value = leaf.max_value + 1
        elif leaf.min_value > INT32_MIN:
            bad_value = leaf.min_value - 1
        else:
            continue
        converted = {k: v.copy() for k, v in good.items()}
        converted[leaf.name].reshape(-1)[-1] = bad_value
        last = (1,) + tuple(int(s) - 1 for s in leaf.shape)
        with pytest.raises(ValueError, match=rf"state\['{leaf.name}'\] .* index {re_tuple(last)}"):
            table.check_written(converted, 2)
    table.check_written(good, 2)


def re_tuple(t: tuple) -> str:
    return r"\(" + r",\s*".join(map(str, t)) + (r",\)" if len(t) == 1 else r"\)")


def test_full_game_calls_refuse_a_wild_player_level():
    """The batched observe and step calls check player_level (it picks the per-level slices the
    rules index without a clamp) before anything else, whoever wrote the buffer."""
    env = make(num_envs=3)
    _state.LEAF_BY_NAME["player_level"].view(env._states)[1] = 10**6
    before = env._states.copy()
    for call in (env.observe, env.observe_compact, lambda: env.step(np.zeros(3, np.int32)),
                 lambda: env.step_with_keys(np.zeros(3, np.int32), np.zeros((3, 2), np.uint32))):
        with pytest.raises(RuntimeError, match=r"state\['player_level'\] value 1000000 at index \(1,\) is outside"):
            call()
        np.testing.assert_array_equal(env._states, before)


def test_c_errors_name_the_argument():
    """The C layer's CRAFTAX_ERR_ARGUMENT reads as what the arguments must be, not 'invalid argument'."""
    from pycraftax._native import lib

    env = make()
    with pytest.raises(ValueError, match=r"step failed: actions must be integers in \[0, 43\)"):
        env._check(lib.CRAFTAX_ERR_ARGUMENT, "step")
    with pytest.raises(ValueError, match=r"reset failed: params.day_length must be >= 1"):
        env._check(lib.CRAFTAX_ERR_ARGUMENT, "reset", arguments="params.day_length must be >= 1")


# -- closed under step ---------------------------------------------------------------------------
def random_run(env_id: str, seed: int, num_envs: int = 3, steps: int = 16):
    """(env, params) after set_state of a random accepted state under random accepted params;
    then `steps` random steps, each mode drawn (auto-reset step or step_with_keys), checking
    after every step that the state is accepted again and the obs lie in the space."""
    rng = np.random.default_rng(seed)
    params = inputs.random_params(env_id, rng)
    env = pycraftax.make(env_id, num_envs=num_envs, backend="c", **params)
    env.reset(seed=seed % 1000)
    env.set_state(inputs.accepted_state(env_id, num_envs, rng, god_mode=params.get("god_mode", False)))
    space = env.observation_space
    obs = env.observe()
    assert space.contains(obs), outside(space, obs)
    for _ in range(steps):
        actions = rng.integers(0, inputs.num_actions(env_id), num_envs).astype(np.int32)
        if (params.get("god_mode") or env_id == inputs.CLASSIC) and on_edge(env):
            break
        if rng.random() < 0.5:
            obs = env.step(actions)[0]
        else:
            obs = env.step_with_keys(actions, rng.integers(0, 2**32, (num_envs, 2), dtype=np.uint32))[0]
        assert space.contains(obs), outside(space, obs)
        state = env.get_state()
        env.set_state(state)  # raises, naming the leaf, where the step left the domain
    return env, params


def on_edge(env) -> bool:
    leaf = env._state_table().by_name["player_position"]
    positions = env.get_state()["player_position"]
    return bool(np.any((positions <= leaf.min_value) | (positions >= leaf.max_value)))


def outside(space, obs) -> str:
    bad = np.argwhere(~((obs >= space.low) & (obs <= space.high)))
    return f"obs outside the space at {bad[:3].tolist()}: {[float(obs[tuple(i)]) for i in bad[:3]]}"


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_full_game_domain_is_closed_under_step(seed):
    random_run(inputs.CRAFTAX, seed)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_classic_domain_is_closed_under_step(seed):
    random_run(inputs.CLASSIC, seed)


@pytest.mark.parametrize("env_id, case", [
    (inputs.CRAFTAX, "timestep"), (inputs.CLASSIC, "timestep"), (inputs.CRAFTAX, "mana"),
    (inputs.CRAFTAX, "energy"), (inputs.CRAFTAX, "recover_mana"), (inputs.CRAFTAX, "growing_plants_age"),
    (inputs.CLASSIC, "growing_plants_age"),
])
def test_the_issues_escapes_stay_inside(env_id, case):
    """The cases the issue found leaving the domain: each now stays in it (or is refused)."""
    params = {"max_timesteps": INT32_MAX}
    if case in ("mana", "energy"):
        params["max_attribute"] = 99
    env = make(env_id, num_envs=2, **params)
    state = env.get_state()
    if case == "timestep":  # wraps to INT32_MIN as upstream's int32 does
        state["timestep"][:] = INT32_MAX
    elif case == "mana":  # mana's cap is 6 + 3 * intelligence: 303
        state["player_intelligence"][:] = 99
        state["player_mana"][:] = 99
    elif case == "energy":
        state["player_dexterity"][:] = 99
        state["player_energy"][:] = 99
        state["is_sleeping"][:] = True
    elif case == "recover_mana":  # (x + 1) * 25.5 each step diverged to -inf from x < -1
        state["player_intelligence"][:] = 99
        state["player_recover_mana"][:] = np.float32(-2.0)
        with pytest.raises(ValueError, match=r"player_recover_mana.*outside \[0.0, 3.4028235e\+38\]"):
            env.set_state(state)
        state["player_recover_mana"][:] = np.float32(3e38)
    elif case == "growing_plants_age":
        state["growing_plants_age"][:] = INT32_MAX
        state["growing_plants_mask"][:] = True
    env.set_state(state)
    for _ in range(40):
        env.step_with_keys(np.zeros(2, np.int32), np.zeros((2, 2), np.uint32))
        env.set_state(env.get_state())
    after = env.get_state()
    if case == "timestep":
        assert np.all(after["timestep"] == INT32_MIN + 39)
    if case == "mana":
        assert np.all(after["player_mana"] > 99)
    if case == "energy":
        assert np.all(after["player_energy"] > 99)
    if case == "recover_mana":
        assert np.all(np.isfinite(after["player_recover_mana"]))


@pytest.mark.parametrize("env_id", inputs.ENV_IDS)
def test_obs_of_random_accepted_states_are_in_the_space(env_id):
    space = make(env_id, num_envs=8).single_observation_space
    rng = np.random.default_rng(5)
    env = make(env_id, num_envs=8)
    for _ in range(20 if PROFILE == "dev" else 40):
        env.set_state(inputs.accepted_state(env_id, 8, rng))
        obs = env.observe()
        for row in obs:
            assert space.contains(row), outside(space, row)


def test_issue_states_obs_are_in_the_space():
    """player_health 3e38 and light_level -1 gave obs outside the space: both are refused now,
    and the extremes that are accepted stay inside."""
    env = make()
    state = env.get_state()
    state["player_health"][0] = np.float32(3e38)
    with pytest.raises(ValueError, match=r"player_health'\] value 3e\+38 at index \(0,\) is outside \[0.0, 107.0\]"):
        env.set_state(state)
    state["player_health"][0] = 107.0
    state["light_level"][1] = -1.0
    with pytest.raises(ValueError, match=r"light_level'\] value -1.0 at index \(1,\) is outside \[0.0, 1.0\]"):
        env.set_state(state)
    state["light_level"][1] = 1.0
    state["player_xp"][:] = [INT32_MIN, INT32_MAX]
    env.set_state(state)
    assert env.observation_space.contains(env.observe())


# -- god mode --------------------------------------------------------------------------------------
def test_god_mode_walks_off_the_map_inside_the_domain():
    """3,000 LEFT steps reached player_position [24, -2976], which set_state refused: the domain
    holds such positions now (100 steps here)."""
    env = make(num_envs=1, god_mode=True, max_timesteps=10**6)
    left = np.full(1, 1, np.int32)  # Action.LEFT
    for _ in range(100):
        env.step(left)
    state = env.get_state()
    assert state["player_position"][0, 1] == 24 - 100
    env.set_state(state)
    assert env.observation_space.contains(env.observe())


def test_god_mode_step_from_the_edge_is_refused():
    env = make(num_envs=2, god_mode=True)
    leaf = _state.LEAF_BY_NAME["player_position"]
    state = env.get_state()
    state["player_position"][1] = [leaf.min_value + 1, 10]
    env.set_state(state)
    env.step_with_keys(np.array([0, 1], np.int32), np.zeros((2, 2), np.uint32))  # LEFT changes axis 1 only
    state["player_position"][1] = [leaf.min_value, 10]
    env.set_state(state)  # the edge itself is in the domain
    before = env.get_state()
    for call in (lambda: env.step(np.zeros(2, np.int32)),
                 lambda: env.step_with_keys(np.zeros(2, np.int32), np.zeros((2, 2), np.uint32))):
        with pytest.raises(ValueError, match=r"god_mode.*env 1's is \[-32720, 10\]; nothing changed"):
            call()
    assert_unchanged(env, before)
    plain = make(num_envs=2)  # without god mode a player off the map cannot walk: nothing to refuse
    plain.set_state(before)
    plain.step(np.zeros(2, np.int32))


def test_the_docs_state_the_leaf_tables():
    """docs/STATE_DOMAIN.md's tables are the C extension's leaf tables, leaf for leaf."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "STATE_DOMAIN.md").read_text()
    for env_id in inputs.ENV_IDS:
        table = inputs.table(env_id)
        section = text.split(f"#### {table.label}\n", 1)[1].split("####", 1)[0]
        rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| `")]
        assert [r[0].strip("| `") for r in rows] == [leaf.name for leaf in table.leaves]
        for row, leaf in zip(rows, table.leaves):
            assert row[1] == f"{leaf.dtype} {list(leaf.shape)}", leaf.name
            accepted = row[2].rstrip(" |")
            if leaf.dtype == np.bool_:
                assert accepted == "False, True"
            elif leaf.dtype == np.uint32:
                assert accepted == "any"
            else:
                low, high = accepted.removeprefix("finite, ").strip("[]").split(", ")
                assert accepted.startswith("finite, ") == (leaf.dtype == np.float32), leaf.name
                parse = (lambda s: np.float32(float(s))) if leaf.dtype == np.float32 else int
                assert (parse(low), parse(high)) == (leaf.min_value, leaf.max_value), leaf.name


def test_classic_player_walks_off_the_map_onto_lava_inside_the_domain():
    """Upstream's Classic move steps off the map onto a cell whose wrapped read is lava (the fuzz
    suite found the state then refused by set_state): the domain holds such positions, and
    step_with_keys, which keeps stepping a dead player, is refused on the range's edge."""
    env = make(inputs.CLASSIC, num_envs=2)
    state = env.get_state()
    state["player_position"][:] = [[0, 20], [30, 30]]
    state["map"][0, 63, 20] = 14  # BlockType.LAVA, read through the wrapped index -1
    state["mob_map"][0, 63, 20] = False
    env.set_state(state)
    up = np.array([3, 0], np.int32)  # Classic Action.UP, NOOP
    env.step_with_keys(up, np.zeros((2, 2), np.uint32))
    after = env.get_state()
    assert after["player_position"][0].tolist() == [-1, 20]
    env.set_state(after)
    assert env.observation_space.contains(env.observe())
    leaf = env._state_table().by_name["player_position"]
    assert (leaf.min_value, leaf.max_value) == (63 - 32767, 32767)
    after["player_position"][0] = [leaf.min_value, 20]
    env.set_state(after)
    before = env.get_state()
    with pytest.raises(ValueError, match=r"step_with_keys: without resets .* env 0's is \[-32704, 20\]; nothing changed"):
        env.step_with_keys(up, np.zeros((2, 2), np.uint32))
    assert_unchanged(env, before)
    env.step(up)  # with resets a player on lava dies and is reset: nothing to refuse
