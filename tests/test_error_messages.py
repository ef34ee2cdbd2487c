"""Every exception names the argument at fault and what it must be: one test for each case
issue 41 found raising without saying so (torch's and numpy's own errors for exotic action
tensors and duck types, gymnasium.make(num_envs=...), timedelta64 actions taken with NaT as
action 0, episode_progress storing overflowed values, params that overflow float32)."""

from __future__ import annotations

import numpy as np
import pytest

import pycraftax

ACTIONS_MESSAGE = r"actions must (be an integer array of shape \(2,\)|have an integer dtype)"


def make(num_envs=2, **params):
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=num_envs, backend="c", **params)
    env.reset(seed=0)
    return env


def assert_refused(env, actions, exc_type, match):
    before = env.get_state()
    with pytest.raises(exc_type, match=match):
        env.step(actions)
    after = env.get_state()
    assert all(np.array_equal(before[k], after[k]) for k in before)


@pytest.mark.parametrize("flavour, match", [
    ("sparse", "layout torch.sparse_coo"),
    ("meta", "meta device"),
    ("requires_grad", "dtype torch.float32"),
    ("bfloat16", "dtype torch.bfloat16"),
])
def test_torch_special_tensors_are_refused_by_name(flavour, match):
    torch = pytest.importorskip("torch")
    env = make()
    base = torch.tensor([1, 2])
    tensor = {"sparse": base.to_sparse(), "meta": base.to("meta"),
              "requires_grad": base.float().requires_grad_(True), "bfloat16": base.to(torch.bfloat16)}[flavour]
    assert_refused(env, tensor, TypeError, ACTIONS_MESSAGE + ".*" + match)


def test_torch_uint16_actions_are_taken_as_their_values():
    torch = pytest.importorskip("torch")
    env, twin = make(), make()
    out = env.step(torch.tensor([3, 7], dtype=torch.uint16))
    expected = twin.step(np.array([3, 7], np.int32))
    np.testing.assert_array_equal(out[0], expected[0])


class BadDevice:
    def __dlpack_device__(self):
        return None

    def __dlpack__(self, stream=None):
        raise TypeError("nope")


class BadArray:
    def __init__(self, mode):
        self.mode = mode

    def __array__(self, dtype=None, copy=None):
        if self.mode == "raise":
            raise IndexError("index 0 is out of bounds")
        return "not an array"


@pytest.mark.parametrize("duck", [BadDevice(), BadArray("raise"), BadArray("string")], ids=["dlpack_device", "array_raises", "array_string"])
def test_malformed_duck_types_are_refused_by_name(duck):
    assert_refused(make(), duck, TypeError, r"actions must be an integer array of shape \(2,\).*(failed|reads as)")


def test_timedelta_actions_are_refused_not_taken_as_action_0():
    actions = np.array([1, 2], "timedelta64[s]")
    actions[0] = np.timedelta64("NaT")
    assert_refused(make(), actions, TypeError, r"actions must have an integer dtype .* got timedelta64\[s\]")


def test_masked_actions_keys_and_key_are_refused_by_name():
    env = make()
    assert_refused(env, np.ma.array([1, 2], mask=[True, False]), TypeError, r"actions must be .* masked array")
    with pytest.raises(TypeError, match=r"keys must be a numpy uint32 array of shape \(2, 2\).*masked"):
        env.reset_with_keys(np.ma.array(np.zeros((2, 2), np.uint32)))
    with pytest.raises(TypeError, match=r"key must be a numpy uint32 array of shape \(2,\).*masked"):
        env.key = np.ma.array(np.zeros(2, np.uint32))


def test_gymnasium_make_with_num_envs_says_to_use_make_vec():
    gymnasium = pytest.importorskip("gymnasium")
    from pycraftax.gymnasium_env import register_envs

    register_envs()
    with pytest.raises(TypeError, match=r"num_envs does not apply to the single env.*gymnasium.make_vec"):
        gymnasium.make("pycraftax/Craftax-Symbolic-v1", num_envs=2)


@pytest.mark.parametrize("value, match", [
    (dict(episode_return=np.full(2, 1e300), episode_length=np.zeros(2, np.int32)),
     r"episode_return'\] must be finite floats \(as float32\), got inf"),
    (dict(episode_return=np.zeros(2), episode_length=np.full(2, 2**40, np.int64)),
     r"episode_length'\] must be integers >= 0 \(and <= 2147483647: stored as int32\)"),
    (dict(episode_return=np.zeros(2), episode_length=np.zeros(2, "timedelta64[s]")),
     r"episode_length'\] must be integers >= 0"),
])
def test_episode_progress_refuses_what_it_cannot_store(value, match):
    env = make()
    before = env.episode_progress
    with pytest.raises(ValueError, match=match):
        env.episode_progress = value
    after = env.episode_progress
    assert all(np.array_equal(before[k], after[k]) for k in before)


@pytest.mark.parametrize("angles, exc, match", [
    (np.full((4, 4), 1e300), ValueError, r"fractal_noise_angles\[0\] must hold finite values in \[-100000, 100000\]"),
    (np.full((4, 4), 1e6), ValueError, r"fractal_noise_angles\[0\] must hold finite values"),
    (np.ma.array(np.zeros((4, 4))), TypeError, r"fractal_noise_angles\[0\] must be a plain float array"),
])
def test_noise_angles_that_overflow_or_hide_values_are_refused(angles, exc, match):
    with pytest.raises(exc, match=match):
        pycraftax.make("Craftax-Symbolic-v1", backend="c", fractal_noise_angles=(angles, None, None, None))


def test_noise_angles_are_kept_as_the_float32_copy_that_was_checked():
    angles = np.full((4, 4), 0.25)
    env = pycraftax.make("Craftax-Symbolic-v1", backend="c", fractal_noise_angles=(angles, None, None, None))
    angles[:] = np.nan  # the caller's array afterwards changes nothing
    kept = env.params.fractal_noise_angles[0]
    assert kept.dtype == np.float32 and np.all(kept == 0.25)
