"""pycraftax.jax's interface without the upstream env in the loop: batching (one native call
per vmapped step, nested vmap, batched params), the state pytree (select, gather, donation,
to/from_upstream_state), typed keys, params as the FFI attribute (concrete) or operand
(traced) giving the same results, and bad input (wrong dtypes/shapes at trace time, out of
range actions as an error after the call, states of another env or size rejected)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

pytest.importorskip("jax")
pytest.importorskip("craftax")

from conformance import upstream  # noqa: E402,F401  (sets XLA_FLAGS before jax is imported)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import pycraftax.jax as pjax  # noqa: E402
from pycraftax.jax import _ffi  # noqa: E402

pytestmark = pytest.mark.jax

ENV = pjax.make_craftax_env_from_name("Craftax-Symbolic-v1", auto_reset=True)
ENV_NO_RESET = pjax.make_craftax_env_from_name("Craftax-Symbolic-v1", auto_reset=False)
PARAMS = ENV.default_params
N = 3


@functools.lru_cache(maxsize=None)
def batched_reset():
    return jax.jit(jax.vmap(ENV.reset, in_axes=(0, None)))


@functools.lru_cache(maxsize=None)
def batched_step(auto_reset: bool = True):
    env = ENV if auto_reset else ENV_NO_RESET
    return jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))


def fresh(n: int = N, seed: int = 0):
    keys = jax.random.split(jax.random.PRNGKey(seed), n)
    return keys, batched_reset()(keys, PARAMS)


def test_vmapped_step_is_one_native_call_with_aliased_states():
    keys, (_, state) = fresh()
    hlo = batched_step().lower(keys, state, jnp.zeros(N, jnp.int32), PARAMS).as_text()
    assert hlo.count("pycraftax_step_autoreset") == 1
    assert "output_operand_aliases" in hlo or "tf.aliasing_output" in hlo


def test_nested_vmap_equals_flat_vmap():
    keys, (_, state) = fresh(6)
    actions = jnp.arange(6, dtype=jnp.int32) % 5
    flat = batched_step()(keys, state, actions, PARAMS)
    nested_fn = jax.jit(jax.vmap(jax.vmap(ENV.step, in_axes=(0, 0, 0, None)), in_axes=(0, 0, 0, None)))
    nested = nested_fn(keys.reshape(2, 3, 2), jax.tree.map(lambda x: x.reshape((2, 3) + x.shape[1:]), state),
                       actions.reshape(2, 3), PARAMS)
    for a, b in zip(jax.tree.leaves(flat), jax.tree.leaves(nested)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b).reshape(np.shape(a)))


def test_unbatched_state_with_batched_keys_broadcasts():
    keys, (_, state) = fresh(2)
    one = jax.tree.map(lambda x: x[0], state)
    out = jax.jit(jax.vmap(ENV.step, in_axes=(0, None, None, None)))(keys, one, jnp.int32(1), PARAMS)
    ref = batched_step()(keys, jax.tree.map(lambda x: jnp.stack([x[0], x[0]]), state), jnp.ones(2, jnp.int32), PARAMS)
    for a, b in zip(jax.tree.leaves(out), jax.tree.leaves(ref)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_batched_params_give_each_env_its_own():
    """in_axes=0 params (different max_timesteps per env): env i behaves as with params i alone."""
    keys, (_, state) = fresh(2)
    batched = jax.tree.map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]),
                           pjax.EnvParams(max_timesteps=1), pjax.EnvParams())
    both = jax.jit(jax.vmap(ENV_NO_RESET.step, in_axes=(0, 0, 0, 0)))(keys, state, jnp.zeros(2, jnp.int32), batched)
    assert np.asarray(both[3]).tolist() == [True, False]
    alone = batched_step(False)(keys, state, jnp.zeros(2, jnp.int32), pjax.EnvParams(max_timesteps=1))
    np.testing.assert_array_equal(np.asarray(both[0][0]), np.asarray(alone[0][0]))


def test_typed_keys_equal_raw_keys():
    keys, (_, state) = fresh()
    typed = jax.random.wrap_key_data(keys)
    a = batched_step()(keys, state, jnp.ones(N, jnp.int32), PARAMS)
    b = batched_step()(typed, state, jnp.ones(N, jnp.int32), PARAMS)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_state_pytree_select_gather_and_donate():
    keys, (_, state) = fresh()
    _, other = batched_reset()(jax.random.split(jax.random.PRNGKey(1), N), PARAMS)
    pick = jnp.array([True, False, True])
    mixed = jax.vmap(lambda d, x, y: jax.tree.map(lambda a, b: jax.lax.select(d, a, b), x, y))(pick, other, state)
    assert isinstance(mixed, pjax.CraftaxState)
    np.testing.assert_array_equal(np.asarray(mixed.player_position), np.asarray(
        jnp.where(pick[:, None], other.player_position, state.player_position)))
    gathered = jax.tree.map(lambda x: x[jnp.array([2, 0])], state)
    np.testing.assert_array_equal(np.asarray(gathered.map), np.asarray(state.map)[[2, 0]])
    donating = jax.jit(jax.vmap(ENV.step, in_axes=(0, 0, 0, None)), donate_argnums=(1,))
    out = donating(keys, gathered_copy := jax.tree.map(jnp.copy, state), jnp.zeros(N, jnp.int32), PARAMS)
    assert gathered_copy.data.is_deleted()
    assert np.asarray(out[1].timestep).tolist() == [1] * N


def test_upstream_state_round_trip():
    _, (_, state) = fresh()
    env_state = pjax.to_upstream_state(state)
    assert env_state.map.dtype == jnp.int32 and env_state.map.shape == (N, 9, 48, 48)
    assert env_state.is_sleeping.dtype == jnp.bool_ and env_state.melee_mobs.position.shape == (N, 9, 3, 2)
    back = pjax.from_upstream_state(env_state)
    np.testing.assert_array_equal(np.asarray(back.data), np.asarray(state.data))
    traced = jax.jit(lambda s: pjax.from_upstream_state(pjax.to_upstream_state(s)))(state)
    np.testing.assert_array_equal(np.asarray(traced.data), np.asarray(state.data))


def test_from_upstream_state_is_validated():
    _, (_, state) = fresh()
    env_state = pjax.to_upstream_state(state)
    with pytest.raises(ValueError, match=r"'map'.*outside"):
        pjax.from_upstream_state(env_state.replace(map=env_state.map.at[0, 0, 0, 0].set(99)))
    with pytest.raises(TypeError, match="player_health must have dtype float32"):
        pjax.from_upstream_state(env_state.replace(player_health=env_state.player_health.astype(jnp.int32)))
    with pytest.raises(ValueError, match="player_position must have shape"):
        pjax.from_upstream_state(env_state.replace(player_position=env_state.player_position[:, :1]))
    with pytest.raises(ValueError, match="batch dims"):
        pjax.from_upstream_state(env_state.replace(timestep=env_state.timestep[:2]))


def test_wrong_dtypes_and_shapes_fail_at_trace_time_naming_the_argument():
    keys, (_, state) = fresh()
    step = batched_step()
    with pytest.raises(TypeError, match="key must be one PRNG key"):
        step(keys.astype(jnp.int32), state, jnp.zeros(N, jnp.int32), PARAMS)
    with pytest.raises(TypeError, match="action must be one integer action"):
        step(keys, state, jnp.zeros(N, jnp.float32), PARAMS)
    with pytest.raises(TypeError, match="action must be one integer action"):
        step(keys, state, jnp.zeros((N, 2), jnp.int32), PARAMS)
    with pytest.raises(ValueError, match=r"action must be in \[0, 43\)"):
        ENV.step_env(keys[0], jax.tree.map(lambda x: x[0], state), 43, PARAMS)
    with pytest.raises(ValueError, match="day_length must be in"):
        ENV.step_env(keys[0], jax.tree.map(lambda x: x[0], state), 0, PARAMS.replace(day_length=0))


def test_invalid_traced_params_are_an_error_after_the_call():
    keys, (_, state) = fresh()
    with pytest.raises(Exception, match="day_length must be > 0"):
        jax.block_until_ready(batched_step()(keys, state, jnp.zeros(N, jnp.int32), PARAMS.replace(day_length=0)))


def test_out_of_range_traced_action_is_an_error_after_the_call():
    keys, (_, state) = fresh()
    before = np.asarray(state.data).copy()
    actions = jnp.array([0, 43, 1], jnp.int32)
    with pytest.raises(Exception, match=r"action 43 of env 1 is outside \[0, 43\)"):
        jax.block_until_ready(batched_step()(keys, state, actions, PARAMS))
    np.testing.assert_array_equal(np.asarray(state.data), before)
    with pytest.raises(Exception, match=r"action -1 of env 1 is outside"):
        jax.block_until_ready(batched_step()(keys, state, jnp.array([0, -1, 1], jnp.int32), PARAMS))


def test_states_of_another_env_or_size_are_rejected():
    keys, (_, state) = fresh()
    step = batched_step()
    with pytest.raises(ValueError, match="not of this env"):
        step(keys, pjax.CraftaxState(state.data, "Craftax-Classic-Symbolic-v1"), jnp.zeros(N, jnp.int32), PARAMS)
    with pytest.raises(ValueError, match="uint8"):
        step(keys, pjax.CraftaxState(state.data[:, :-4]), jnp.zeros(N, jnp.int32), PARAMS)
    with pytest.raises(TypeError, match="from_upstream_state"):
        step(keys, pjax.to_upstream_state(state), jnp.zeros(N, jnp.int32), PARAMS)


def test_interface_matches_upstream():
    from craftax import craftax_env

    theirs = craftax_env.make_craftax_env_from_name("Craftax-Symbolic-v1", auto_reset=True)
    assert ENV.num_actions == theirs.num_actions == pjax.NUM_ACTIONS
    assert ENV.action_space(PARAMS).n == theirs.action_space(theirs.default_params).n
    ours_box, their_box = ENV.observation_space(PARAMS), theirs.observation_space(theirs.default_params)
    assert (ours_box.shape, ours_box.dtype) == (their_box.shape, their_box.dtype)
    assert ENV.name == theirs.name and ENV_NO_RESET.name == "Craftax-Symbolic-NoAutoReset-v1"
    # upstream's own EnvParams are accepted as params
    keys, (_, state) = fresh()
    a = batched_step()(keys, state, jnp.ones(N, jnp.int32), PARAMS)
    b = batched_step()(keys, state, jnp.ones(N, jnp.int32), theirs.default_params)
    np.testing.assert_array_equal(np.asarray(a[0]), np.asarray(b[0]))
    # every name upstream's make_craftax_env_from_name takes, and only those (upstream's pixel
    # envs are named from its source: importing them loads their textures, seconds)
    pixel_names = {"Craftax-Pixels-v1": "Craftax-Pixels-NoAutoReset-v1",
                   "Craftax-Classic-Pixels-v1": "Craftax-Classic-Pixels-NoAutoReset-v1"}
    for auto_reset in (True, False):
        for name in ("Craftax-Symbolic-v1", "Craftax-Classic-Symbolic-v1", *pixel_names):
            for alias in (name, name.replace("-v1", "-AutoReset-v1")) if auto_reset else (name,):
                ours = pjax.make_craftax_env_from_name(alias, auto_reset=auto_reset)
                if name in pixel_names:
                    assert ours.name == (name if auto_reset else pixel_names[name]), alias
                    continue
                theirs_env = craftax_env.make_craftax_env_from_name(alias, auto_reset=auto_reset)
                assert (ours.name, ours.num_actions) == (theirs_env.name, theirs_env.num_actions), alias
    with pytest.raises(ValueError, match="unsupported env"):
        pjax.make_craftax_env_from_name("Craftax-Classic-Symbolic-AutoReset-v1", auto_reset=False)
    with pytest.raises(ValueError, match="unsupported env"):
        pjax.make_craftax_env_from_name("Craftax-Classic-v1", auto_reset=True)


@pytest.mark.parametrize("auto_reset", [True, False], ids=["auto_reset", "no_auto_reset"])
def test_params_as_attribute_equal_params_as_operand(auto_reset):
    """Params closed over (concrete at trace time: the FFI attribute) against the same params
    passed as a jit argument (traced: the operand), over a scan where every env ends."""
    env = ENV if auto_reset else ENV_NO_RESET
    params = pjax.EnvParams(max_timesteps=3)
    keys = jax.random.split(jax.random.PRNGKey(5), 4)
    actions = jnp.asarray(np.random.default_rng(1).integers(0, 43, size=(8, 4)), jnp.int32)
    step_keys = jax.random.split(jax.random.PRNGKey(6), 8 * 4).reshape(8, 4, 2)

    def rollout(keys, step_keys, actions, params):
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)

        def body(s, xs):
            k, a = xs
            o, s, r, d, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(k, s, a, params)
            return s, (o, r, d, info)

        return obs, jax.lax.scan(body, state, (step_keys, actions))

    closed = jax.jit(lambda k, sk, a: rollout(k, sk, a, params))
    traced = jax.jit(rollout)
    hlo_closed = closed.lower(keys, step_keys, actions).as_text()
    hlo_traced = traced.lower(keys, step_keys, actions, params).as_text()
    assert _ffi.OPERAND_SUFFIX not in hlo_closed and "pycraftax_reset" in hlo_closed
    assert hlo_traced.count(_ffi.OPERAND_SUFFIX) == 2  # the reset and the step
    a, b = closed(keys, step_keys, actions), traced(keys, step_keys, actions, params)
    assert np.asarray(b[1][1][2]).sum() >= 8  # episodes ended (max_timesteps 3 over 8 steps)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_concrete_params_are_packed_once_and_hash_by_value():
    from pycraftax.jax.params import PackedParams, pack_on_host

    a, b = pack_on_host(pjax.EnvParams(max_timesteps=7)), pack_on_host(pjax.EnvParams(max_timesteps=7))
    assert isinstance(a, PackedParams) and a is b and hash(a) == hash(b)
    c = pack_on_host(pjax.EnvParams(max_timesteps=7, day_length=jnp.int32(300)))  # array field: not cached
    assert c == a and c is not a
    assert pack_on_host(pjax.EnvParams(max_timesteps=8)) != a
    with pytest.raises(ValueError, match="day_length must be in"):
        pack_on_host(pjax.EnvParams(day_length=0))
    with pytest.raises(TypeError, match="EnvParams field 'max_timesteps'"):
        pack_on_host(object())


def test_raise_if_invalid_actions_returns_on_the_cpu():
    """The CPU handlers raise at the call (test above), so there is nothing deferred to report."""
    assert pjax.raise_if_invalid_actions() is None
