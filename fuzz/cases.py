"""The fuzz cases: one call `run_case(category, seed, backend)` draws one input of a category
from its seed (fuzz/inputs.py), feeds it to the public API, and judges what came back.

Outcomes (a crash or a hang is the runner's to see, fuzz/run.py):
  ok          the input was accepted and every result is right (read-backs equal what was
              given, obs finite and inside observation_space, the state accepted again);
  refused     the input was refused with a TypeError, ValueError or KeyError (RuntimeError for
              a call on a closed env or before reset) whose message names the argument and
              says what it must be, and nothing changed;
  unhelpful   refused, but with another exception type or a message that does not name the
              argument or its allowed values;
  corrupted   accepted, with a wrong result (a read-back that differs from the input, an obs
              outside the space or not finite, a state the env no longer accepts, an input
              refused but the env changed anyway, an invalid input taken silently).
"""

from __future__ import annotations

import copy
import pickle
import threading
import warnings

import numpy as np

from fuzz import inputs

CATEGORIES = ("set_state", "steps", "actions", "keys", "key_setter", "params", "episode_progress", "lifecycle",
              "concurrency")
OUTCOMES = ("ok", "refused", "unhelpful", "corrupted")


class Verdict(Exception):
    """Raised inside a case to end it with an outcome other than ok."""

    def __init__(self, outcome: str, detail: str):
        super().__init__(f"{outcome}: {detail}")
        self.outcome = outcome
        self.detail = detail


def clear_refusal(exc: BaseException, names: tuple[str, ...], allowed=(TypeError, ValueError, KeyError)) -> bool:
    """Whether `exc` is an allowed type whose message names one of `names` and says what is
    expected (must / outside [...] / one of / exactly)."""
    message = str(exc)
    says_what = any(w in message for w in ("must", "outside", "one of", "exactly", "does not apply"))
    return isinstance(exc, allowed) and any(n in message for n in names) and says_what


def judge_refusal(exc: BaseException, names: tuple[str, ...], allowed=(TypeError, ValueError, KeyError)) -> None:
    if not clear_refusal(exc, names, allowed):
        raise Verdict("unhelpful", f"{type(exc).__name__}: {str(exc)[:300]}")
    raise Verdict("refused", f"{type(exc).__name__}: {str(exc)[:120]}")


def host(x) -> np.ndarray:
    return x if isinstance(x, np.ndarray) else np.asarray(x)


def check_obs(env, obs, where: str) -> None:
    obs = host(obs)
    space = env.observation_space
    if env.obs_mode != "float":
        return
    if not np.all(np.isfinite(obs)):
        raise Verdict("corrupted", f"{where}: non-finite obs at {np.argwhere(~np.isfinite(obs))[:3].tolist()}")
    if not space.contains(obs.astype(space.dtype)):
        bad = np.argwhere(~((obs >= space.low) & (obs <= space.high)))
        raise Verdict("corrupted", f"{where}: obs outside the space at {bad[:3].tolist()}")


def check_reaccepted(env, where: str) -> None:
    state = env.get_state()
    try:
        env.set_state(state)
    except Exception as exc:
        raise Verdict("corrupted", f"{where}: the env's own state is refused: {type(exc).__name__}: {exc}") from exc


def same_state(a: dict, b: dict) -> str | None:
    """The first leaf where two state dicts differ (bitwise for floats), or None."""
    for name in a:
        x, y = np.asarray(a[name]), np.asarray(b[name])
        if x.shape != y.shape:
            return f"{name} shape {x.shape} vs {y.shape}"
        if x.dtype == np.float32:
            x, y = x.view(np.uint32), y.astype(np.float32).view(np.uint32)
        if not np.array_equal(x, y):
            return f"{name} at {np.argwhere(x != y)[0].tolist()}"
    return None


def make_env(rng, backend: str, env_id: str | None = None, num_envs: int | None = None, **params):
    import pycraftax

    env_id = env_id or inputs.ENV_IDS[int(rng.integers(2))]
    num_envs = num_envs or int(rng.integers(1, 4))
    env = pycraftax.make(env_id, num_envs=num_envs, backend=backend, seed=int(rng.integers(2**31)), **params)
    env.reset(seed=int(rng.integers(2**31)))
    return env


# -- categories ----------------------------------------------------------------------------------
def case_set_state(rng, backend):
    """A state dict with one hostile change (or none): an out-of-domain value, a non-finite
    float, a disguised array, a wrong dtype or shape, missing, extra or mixed-type keys."""
    env = make_env(rng, backend)
    n, table = env.num_envs, inputs.table(env.env_id)
    state = inputs.accepted_state(env.env_id, n, rng)
    leaf = table.leaves[int(rng.integers(len(table.leaves)))]
    kind = inputs_choice(rng, ("none", "value", "value", "nonfinite", "disguise", "disguise", "dtype", "shape",
                               "keys", "not_dict"))
    given = dict(state)
    intended = state  # what the env must hold if the dict is accepted
    if kind == "value" and leaf.dtype in (np.bool_, np.uint32):
        kind = "none"  # every value of these dtypes is in the domain
    if kind == "value":
        values = given[leaf.name].copy()
        if leaf.dtype == np.float32:
            candidates = [v for v in (-inputs.FLOAT32_MAX, -1e30, -1.0, 1e30, inputs.FLOAT32_MAX)
                          if not leaf.min_value <= v <= leaf.max_value]
            bad = candidates[int(rng.integers(len(candidates)))] if candidates else np.nan
        else:
            candidates = [v for v in (-(2**31), -1, leaf.min_value - 1, leaf.max_value + 1, 255, 2**31 - 1)
                          if not leaf.min_value <= v <= leaf.max_value and -(2**31) <= v < 2**31]
            if not candidates:
                kind = "none"
            bad = candidates[int(rng.integers(len(candidates)))] if candidates else 0
        if kind != "none":
            values.reshape(-1)[int(rng.integers(values.size))] = bad
            given[leaf.name] = values
    elif kind == "nonfinite":
        leaf = [x for x in table.leaves if x.dtype == np.float32][int(rng.integers(5))]
        values = given[leaf.name].copy()
        values.reshape(-1)[int(rng.integers(values.size))] = inputs_choice(rng, (np.nan, np.inf, -np.inf))
        given[leaf.name] = values
    elif kind == "disguise":
        how = inputs_choice(rng, inputs.DISGUISES)
        given[leaf.name] = inputs.disguise(state[leaf.name], how)
        # a byte order of a one-byte dtype (bool) is no byte order: the array is a plain one
        plain = how == "byteswapped" and state[leaf.name].dtype.itemsize == 1
        kind = "accepted_disguise" if how in inputs.ACCEPTED_DISGUISES or plain else "disguise"
    elif kind == "dtype":
        dtype = inputs_choice(rng, (np.int64, np.int16, np.uint8, np.float64, np.float16, np.bool_, np.uint32,
                                    object, "datetime64[s]", "timedelta64[s]", np.complex64))
        if np.dtype(dtype) == leaf.dtype:
            kind = "none"
        else:
            try:
                given[leaf.name] = state[leaf.name].astype(dtype)
            except (TypeError, ValueError):
                kind = "none"
    elif kind == "shape":
        # reshape(-1) of a one-env scalar leaf keeps its shape (1,): no shape change to refuse
        changed = [v for v in (state[leaf.name][:0], state[leaf.name][..., None],
                               np.repeat(state[leaf.name], 2, axis=0), state[leaf.name].reshape(-1))
                   if v.shape != state[leaf.name].shape]
        given[leaf.name] = inputs_choice(rng, tuple(changed))
    elif kind == "keys":
        change = inputs_choice(rng, ("missing", "extra", "mixed"))
        if change == "missing":
            given.pop(leaf.name)
        else:
            given[{"extra": "no_such_leaf", "mixed": int(rng.integers(100))}[change]] = np.zeros(n)
    elif kind == "not_dict":
        given = inputs_choice(rng, (list(state.items()), None, "state", tuple(state.values())))
    before = env.get_state()
    try:
        env.set_state(given)
    except Exception as exc:
        if kind in ("none", "accepted_disguise"):
            raise Verdict("corrupted", f"an accepted {kind} input was refused: {type(exc).__name__}: {exc}") from exc
        unchanged = same_state(before, env.get_state())
        if unchanged is not None:
            raise Verdict("corrupted", f"a refused set_state changed {unchanged}") from exc
        judge_refusal(exc, ("state",))
    if kind not in ("none", "accepted_disguise"):
        raise Verdict("corrupted", f"set_state accepted a {kind} change of {leaf.name}")
    differs = same_state(intended, env.get_state())
    if differs is not None:
        raise Verdict("corrupted", f"read-back differs from what set_state accepted: {differs}")
    check_obs(env, env.observe(), "observe after set_state")
    check_reaccepted(env, "after set_state")


def case_steps(rng, backend):
    """Random accepted states and params, then random steps (auto-reset and step_with_keys):
    the state stays accepted and the obs stay in the space."""
    env_id = inputs.ENV_IDS[int(rng.integers(2))]
    params = inputs.random_params(env_id, rng)
    env = make_env(rng, backend, env_id, **params)
    god = params.get("god_mode", False)
    env.set_state(inputs.accepted_state(env_id, env.num_envs, rng, god_mode=god))
    check_obs(env, env.observe(), "observe")
    for t in range(int(rng.integers(1, 12))):
        actions = rng.integers(0, inputs.num_actions(env_id), env.num_envs).astype(np.int32)
        try:
            if rng.random() < 0.5:
                obs = env.step(actions)[0]
            else:
                obs = env.step_with_keys(actions, rng.integers(0, 2**32, (env.num_envs, 2), dtype=np.uint32))[0]
        except ValueError as exc:
            if "every player_position must stay inside" in str(exc):
                return  # a player on the edge of the position range: refused, as documented
            raise
        check_obs(env, obs, f"step {t}")
        check_reaccepted(env, f"after step {t}")


def hostile_actions(rng, n: int, num_actions: int, backend: str = "c"):
    """(actions object, whether it must be accepted, the int values it holds when it must)."""
    values = rng.integers(0, num_actions, n)
    kinds = ("numpy", "numpy", "numpy_bad_values", "disguise", "torch", "duck", "scalar")
    kind = inputs_choice(rng, kinds + (("device",) * 2 if backend == "cuda" else ()))
    if kind == "device":  # GPU tensors, read in place through __cuda_array_interface__
        import torch

        base = torch.tensor(values.tolist(), device="cuda")
        flavour = inputs_choice(rng, ("int32", "int64", "uint8", "float32", "noncontiguous", "bad_values"))
        if flavour in ("int32", "int64", "uint8"):
            return base.to(getattr(torch, flavour)), True, values
        if flavour == "float32":
            return base.float(), False, None
        if flavour == "noncontiguous":
            strided = torch.stack([base.int(), base.int()], dim=1)[:, 0]  # int32, stride 2
            # one env's actions are contiguous whatever the stride (PyTorch's is_contiguous): valid
            return strided, strided.is_contiguous(), values
        bad = base.int().clone()
        bad[int(rng.integers(n))] = inputs_choice(rng, (-1, num_actions, 2**31 - 1))
        return bad, False, None
    if kind == "numpy":
        dtype = inputs_choice(rng, (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
                                    np.float32, np.float64, np.float16, np.bool_, np.complex64, object,
                                    "timedelta64[s]", "datetime64[s]", "U3"))
        array = values.astype(dtype)
        if np.dtype(dtype).kind == "m" and rng.random() < 0.5:
            array[0] = np.timedelta64("NaT")
        ok = np.dtype(dtype).kind in "iu"
        return array, ok, values
    if kind == "numpy_bad_values":
        array = values.astype(np.int64)
        array[int(rng.integers(n))] = inputs_choice(rng, (-1, num_actions, 2**31, -(2**63), 2**40))
        return array, False, None
    if kind == "disguise":
        how = inputs_choice(rng, inputs.DISGUISES)
        accepted = ("plain", "subclass", "lying_subclass", "fortran", "strided", "readonly", "byteswapped", "duck")
        return inputs.disguise(values.astype(np.int32), how), how in accepted, values
    if kind == "torch":
        try:
            import torch
        except ImportError:
            return values.astype(np.int32), True, values
        flavour = inputs_choice(rng, ("int64", "int32", "uint8", "uint16", "bfloat16", "float32", "requires_grad",
                                      "sparse", "meta", "noncontiguous", "bool"))
        base = torch.tensor(values.tolist())
        if flavour in ("int64", "int32", "uint8", "uint16"):
            return base.to(getattr(torch, flavour)), True, values
        if flavour == "bfloat16":
            return base.to(torch.bfloat16), False, None
        if flavour == "float32":
            return base.float(), False, None
        if flavour == "requires_grad":
            return base.float().requires_grad_(True), False, None
        if flavour == "sparse":
            return base.to_sparse(), False, None
        if flavour == "meta":
            return base.to("meta"), False, None
        if flavour == "bool":
            return base.bool(), False, None
        return torch.stack([base, base], dim=1)[:, 0], True, values  # non-contiguous
    if kind == "duck":
        duck = inputs_choice(rng, ("raise", "string", "bad_device", "device_raises", "plain_duck"))
        if duck == "plain_duck":
            return inputs.DuckArray(values.astype(np.int32)), True, values
        if duck in ("raise", "string"):
            return inputs.BrokenArray(duck), False, None
        return inputs.BrokenDLPack(None if duck == "bad_device" else "x"), False, None
    return inputs_choice(rng, (3, None, "step", 1.5, [1, 2])), False, None


def case_actions(rng, backend):
    env = make_env(rng, backend)
    actions, must_accept, values = hostile_actions(rng, env.num_envs, env.num_actions, backend)
    call = inputs_choice(rng, ("step", "step_with_keys", "step_async"))
    keys = rng.integers(0, 2**32, (env.num_envs, 2), dtype=np.uint32)
    before, key_before = env.get_state(), env.key
    try:
        if call == "step":
            out = env.step(actions)
        elif call == "step_with_keys":
            out = env.step_with_keys(actions, keys)
        else:
            env.step_async(actions)
            out = env.step_wait()
    except Exception as exc:
        if must_accept:
            raise Verdict("corrupted", f"valid actions {type(actions).__name__} refused: {type(exc).__name__}: "
                                       f"{exc}") from exc
        if same_state(before, env.get_state()) is not None:
            raise Verdict("corrupted", "refused actions changed the state") from exc
        judge_refusal(exc, ("actions",))
    if not must_accept:
        raise Verdict("corrupted", f"invalid actions accepted: {type(actions).__name__} "
                                   f"{getattr(actions, 'dtype', '')} {actions!r:.80}")
    check_obs(env, out[0], call)
    # the same step with plain int32 actions from the same state and key gives the same result
    twin = make_env(np.random.default_rng(0), backend, env.env_id, env.num_envs)
    twin.set_state(before)
    twin.key = key_before
    plain = np.asarray(values, dtype=np.int32)
    expected = twin.step_with_keys(plain, keys) if call == "step_with_keys" else twin.step(plain)
    if not np.array_equal(host(expected[0]), host(out[0])):
        raise Verdict("corrupted", "actions were read differently from their plain int32 values")
    differs = same_state(twin.get_state(), env.get_state())
    if differs:
        raise Verdict("corrupted", f"actions were read differently from their plain int32 values: {differs}")
    check_reaccepted(env, call)


def case_keys(rng, backend):
    env = make_env(rng, backend)
    n = env.num_envs
    good = rng.integers(0, 2**32, (n, 2), dtype=np.uint32)
    kind = inputs_choice(rng, ("plain", "dtype", "shape", "disguise", "other"))
    must_accept = kind == "plain"
    keys = good
    if kind == "dtype":
        keys = good.astype(inputs_choice(rng, (np.int64, np.int32, np.uint64, np.float64, np.uint8)))
    elif kind == "shape":
        keys = inputs_choice(rng, (good[:, :1], good.reshape(-1), np.repeat(good, 2, axis=0)))
    elif kind == "disguise":
        how = inputs_choice(rng, inputs.DISGUISES)
        keys = inputs.disguise(good, how)
        must_accept = how in inputs.ACCEPTED_DISGUISES
    elif kind == "other":
        keys = inputs_choice(rng, (None, 7, "keys", [[1, 2]] * n))
    call = inputs_choice(rng, ("reset_with_keys", "step_with_keys"))
    before = env.get_state()
    try:
        if call == "reset_with_keys":
            out = env.reset_with_keys(keys)
        else:
            out = env.step_with_keys(np.zeros(n, np.int32), keys)
    except Exception as exc:
        if must_accept:
            raise Verdict("corrupted", f"valid keys refused: {type(exc).__name__}: {exc}") from exc
        if same_state(before, env.get_state()) is not None:
            raise Verdict("corrupted", "refused keys changed the state") from exc
        judge_refusal(exc, ("keys",))
    if not must_accept:
        raise Verdict("corrupted", f"invalid keys accepted ({kind})")
    check_obs(env, out[0], call)
    if call == "reset_with_keys":
        twin = make_env(np.random.default_rng(1), backend, env.env_id, n)
        twin.reset_with_keys(good)
        differs = same_state(twin.get_state(), env.get_state())
        if differs:
            raise Verdict("corrupted", f"reset_with_keys read the keys differently: {differs}")


def case_key_setter(rng, backend):
    env = make_env(rng, backend)
    good = rng.integers(0, 2**32, 2, dtype=np.uint32)
    expected = good.copy()
    kind = inputs_choice(rng, ("plain", "disguise", "dtype", "shape", "other"))
    value, must_accept = good, kind == "plain"
    if kind == "disguise":
        how = inputs_choice(rng, inputs.DISGUISES)
        value = inputs.disguise(good, how)
        must_accept = how in inputs.ACCEPTED_DISGUISES
    elif kind == "dtype":
        value = good.astype(inputs_choice(rng, (np.int64, np.float32, np.uint64)))
    elif kind == "shape":
        value = np.concatenate([good, good])
    elif kind == "other":
        value = inputs_choice(rng, (None, 3, (1, 2), "key"))
    before = env.key
    try:
        env.key = value
    except Exception as exc:
        if must_accept:
            raise Verdict("corrupted", f"a valid key refused: {exc}") from exc
        if not np.array_equal(before, env.key):
            raise Verdict("corrupted", "a refused key changed the key") from exc
        judge_refusal(exc, ("key",))
    if not must_accept:
        raise Verdict("corrupted", f"an invalid key accepted ({kind})")
    if not np.array_equal(env.key, expected) or env.key.dtype != np.uint32:
        raise Verdict("corrupted", f"key reads back {env.key!r}, set {expected!r}")
    if isinstance(value, np.ndarray) and value.flags.writeable:
        value[...] = 0  # the env keeps its own copy
        if not np.array_equal(env.key, expected):
            raise Verdict("corrupted", "the env's key follows the caller's array")


def hostile_params(rng, env_id: str) -> tuple[dict, bool]:
    params = inputs.random_params(env_id, rng)
    if rng.random() < 0.4:
        return params, True
    name = inputs_choice(rng, tuple(params) + ("fractal_noise_angles", "no_such_param", "num_levels", "map_size"))
    bad = inputs_choice(rng, (-1, 0, 2**31, 2**63, 1.5, np.nan, np.inf, "5", None, True, np.int64(-5), [1],
                              np.float32(1e39), 10**30))
    if name == "fractal_noise_angles":
        shapes = ((5, 5), (5, 5), (9, 33), (17, 17)) if env_id == inputs.CLASSIC else ((4, 4), (4, 4), (7, 25),
                                                                                      (13, 13))
        i = int(rng.integers(4))
        angles = [None] * 4
        value = rng.random(shapes[i])
        choice = inputs_choice(rng, ("ok", "nan", "huge", "f32_overflow", "masked", "shape", "int", "duck"))
        if choice == "nan":
            value[0, 0] = np.nan
        elif choice == "huge":
            value[0, 0] = 1e7
        elif choice == "f32_overflow":
            value[0, 0] = 1e300
        elif choice == "masked":
            value = np.ma.array(value, mask=True)
        elif choice == "shape":
            value = value[:-1]
        elif choice == "int":
            value = value.astype(np.int64)
        elif choice == "duck":
            value = inputs.DuckArray(value)
        angles[i] = value
        params[name] = tuple(angles)
        return params, choice in ("ok", "duck")
    params[name] = bad
    return params, False


def case_params(rng, backend):
    import pycraftax

    env_id = inputs.ENV_IDS[int(rng.integers(2))]
    params, must_accept = hostile_params(rng, env_id)
    try:
        env = pycraftax.make(env_id, num_envs=int(rng.integers(1, 3)), backend=backend, **params)
    except Exception as exc:
        names = tuple(str(k) for k in params) + ("params", "parameter")
        if must_accept and not isinstance(exc, MemoryError):
            raise Verdict("corrupted", f"valid params refused: {type(exc).__name__}: {exc}") from exc
        judge_refusal(exc, names)
    # an accepted draw meant as bad is a value make() allows after all (True for a bool, a numpy
    # int in range): it must then work like any other
    obs, _ = env.reset(seed=int(rng.integers(2**31)))
    check_obs(env, obs, "reset")
    for t in range(3):
        obs = env.step(rng.integers(0, env.num_actions, env.num_envs).astype(np.int32))[0]
        check_obs(env, obs, f"step {t}")
    check_reaccepted(env, "after steps")


def case_episode_progress(rng, backend):
    env = make_env(rng, backend)
    if not hasattr(type(env), "episode_progress"):
        return
    n = env.num_envs
    ret = rng.normal(0, 5, n).astype(np.float32)
    length = rng.integers(0, 1000, n).astype(np.int32)
    kind = inputs_choice(rng, ("plain", "plain64", "huge_return", "huge_length", "negative", "nan", "masked",
                               "timedelta", "bool", "keys", "shape", "duck", "mixed_keys"))
    value = dict(episode_return=ret, episode_length=length)
    must_accept = kind in ("plain", "plain64")
    if kind == "plain64":
        value = dict(episode_return=ret.astype(np.float64), episode_length=length.astype(np.int64))
    elif kind == "huge_return":
        value["episode_return"] = np.full(n, 1e300)
    elif kind == "huge_length":
        value["episode_length"] = np.full(n, 2**40, np.int64)
    elif kind == "negative":
        value["episode_length"] = -length - 1
    elif kind == "nan":
        value["episode_return"] = np.full(n, np.nan, np.float32)
    elif kind == "masked":
        value["episode_length"] = np.ma.array(length, mask=True)
    elif kind == "timedelta":
        value["episode_length"] = length.astype("timedelta64[s]")
    elif kind == "bool":
        value["episode_length"] = length > 3
    elif kind == "keys":
        value = {"episode_return": ret}
    elif kind == "shape":
        value["episode_return"] = np.zeros(n + 1, np.float32)
    elif kind == "duck":
        value["episode_return"] = inputs.DuckArray(ret)
    elif kind == "mixed_keys":
        value = {"episode_return": ret, 0: length}
    before = env.episode_progress
    try:
        env.episode_progress = value
    except Exception as exc:
        if must_accept:
            raise Verdict("corrupted", f"a valid episode_progress refused: {exc}") from exc
        after = env.episode_progress
        if any(not np.array_equal(before[k], after[k]) for k in before):
            raise Verdict("corrupted", "a refused episode_progress changed it") from exc
        judge_refusal(exc, ("episode_progress",))
    if not must_accept:
        raise Verdict("corrupted", f"an invalid episode_progress accepted ({kind})")
    after = env.episode_progress
    if not (np.array_equal(after["episode_return"], ret) and np.array_equal(after["episode_length"], length)):
        raise Verdict("corrupted", "episode_progress reads back different values")


def case_lifecycle(rng, backend):
    """Calls in any order: before reset, after close, close twice, copy and pickle."""
    import pycraftax

    env = pycraftax.make(inputs.ENV_IDS[int(rng.integers(2))], num_envs=int(rng.integers(1, 3)), backend=backend)
    n = env.num_envs
    calls = {
        "reset": lambda: env.reset(seed=1),
        "step": lambda: env.step(np.zeros(n, np.int32)),
        "step_with_keys": lambda: env.step_with_keys(np.zeros(n, np.int32), np.zeros((n, 2), np.uint32)),
        "step_async": lambda: env.step_async(np.zeros(n, np.int32)),
        "step_wait": lambda: env.step_wait(),
        "observe": lambda: env.observe(),
        "get_state": lambda: env.get_state(),
        "set_state": lambda: env.set_state(inputs.accepted_state(env.env_id, n, rng)),
        "close": lambda: env.close(),
        "copy": lambda: copy.copy(env),
        "deepcopy": lambda: copy.deepcopy(env),
        "pickle": lambda: pickle.dumps(env),
        "repr": lambda: repr(env),
    }
    names = tuple(calls)
    for _ in range(int(rng.integers(2, 10))):
        name = inputs_choice(rng, names)
        try:
            out = calls[name]()
        except (RuntimeError, TypeError, ValueError) as exc:
            message = str(exc)
            known = ("closed" in message or "before the first reset" in message or "cannot be copied" in message
                     or "step_wait() without" in message)
            if not known:
                raise Verdict("unhelpful", f"{name}: {type(exc).__name__}: {message[:200]}") from exc
            continue
        if name in ("step", "step_with_keys", "observe") and not env._closed:
            check_obs(env, out if name == "observe" else out[0], name)
    if not env._closed and not env._needs_reset:
        check_reaccepted(env, "after the calls")
    env.close()


def case_concurrency(rng, backend):
    """Threads stepping, observing, reading and writing states and closing one env at once: no
    crash, every call either works or raises the closed-env error, and the env stays consistent."""
    env = make_env(rng, backend)
    n = env.num_envs
    errors = []
    state = env.get_state()

    def worker(kind: str, seed: int):
        local = np.random.default_rng(seed)
        for _ in range(int(local.integers(2, 8))):
            try:
                if kind == "step":
                    env.step(local.integers(0, env.num_actions, n).astype(np.int32))
                elif kind == "set_state":
                    env.set_state(state)
                elif kind == "get_state":
                    env.get_state()
                elif kind == "observe":
                    env.observe()
                elif kind == "mutate":  # scribble on the dict set_state is reading
                    state["player_position"][...] = local.integers(-5, 60, state["player_position"].shape)
                elif kind == "close" and local.random() < 0.2:
                    env.close()
            except RuntimeError as exc:
                if "closed" not in str(exc):
                    errors.append(f"{kind}: {exc}")
            except ValueError as exc:  # the scribbler's out-of-range positions, refused and named
                if "player_position" not in str(exc):
                    errors.append(f"{kind}: {type(exc).__name__}: {exc}")
            except Exception as exc:  # pragma: no cover - reported as a finding
                errors.append(f"{kind}: {type(exc).__name__}: {exc}")

    kinds = [inputs_choice(rng, ("step", "set_state", "get_state", "observe", "mutate", "close")) for _ in range(4)]
    threads = [threading.Thread(target=worker, args=(k, int(rng.integers(2**31)))) for k in kinds]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    if any(t.is_alive() for t in threads):
        raise Verdict("corrupted", "a thread did not finish (deadlock)")
    if errors:
        raise Verdict("unhelpful", errors[0][:300])
    if not env._closed:
        check_reaccepted(env, "after the threads")
        check_obs(env, env.observe(), "observe after the threads")


CASES = {
    "set_state": case_set_state,
    "steps": case_steps,
    "actions": case_actions,
    "keys": case_keys,
    "key_setter": case_key_setter,
    "params": case_params,
    "episode_progress": case_episode_progress,
    "lifecycle": case_lifecycle,
    "concurrency": case_concurrency,
}


def inputs_choice(rng, options):
    return options[int(rng.integers(len(options)))]


def run_case(category: str, seed: int, backend: str = "c") -> tuple[str, str]:
    """(outcome, detail) of one input: the category's case drawn from `seed`."""
    rng = np.random.default_rng([CATEGORIES.index(category), seed])
    try:
        with warnings.catch_warnings():  # the inputs' own casts (complex to int, overflow) warn by design
            warnings.simplefilter("ignore")
            CASES[category](rng, backend)
    except Verdict as verdict:
        return verdict.outcome, verdict.detail
    except Exception as exc:  # an exception the case did not expect: an unhelpful one
        return "unhelpful", f"{type(exc).__name__}: {str(exc)[:300]}"
    return "ok", ""
