"""The installed craftax package under the reference semantics, for the divergence finder.

Whatever `import craftax` finds is the authority: craftax 1.6.1, a later release, or a
researcher's fork (put first on PYTHONPATH, or pip-installed). Every call runs jitted and
vmapped over a batch of at least 2 envs on the CPU, with the XLA flag of CONFORMANCE.md.

Upstream functions are looked up in their modules when a Game is made and traced on first use,
so a patch made before that (a test replacing `game_logic.cap_inventory`, say) is what runs.

`Game.subsystems` restates upstream's craftax_step (craftax 1.6.1's `game_logic.py`) as the
ordered list of the state-transforming calls it makes, which the finder replays one by one
against the C rules' matching functions; `step_order_problem()` compares that list with the
installed craftax_step's own calls, so a release that adds, drops or reorders a subsystem is
named rather than misattributed.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.metadata
import inspect
import textwrap
from pathlib import Path
from typing import Callable

import numpy as np

from pycraftax.params import CLASSIC_ENV_ID, CRAFTAX_ENV_ID
from pycraftax.porting import set_reference_jax_flags

set_reference_jax_flags()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

MIN_BATCH = 2  # the reference semantics: vmapped over at least 2 envs


@dataclasses.dataclass(frozen=True)
class Subsystem:
    """One state-transforming call of upstream's craftax_step: `state = call(state, key, action,
    params, static_params)`. keyed: it takes the next `rng, _rng = split(rng)` of the step's key."""

    name: str
    keyed: bool
    call: Callable


def _sub(name: str, keyed: bool, args: str) -> Subsystem:
    """A Subsystem calling module attribute `name` with the arguments `args` names (s, k, a, p,
    sp: state, key, action, params, static params), looked up at trace time."""
    order = args.split(", ")

    def call(module, s, k, a, p, sp):
        values = {"s": s, "k": k, "a": a, "p": p, "sp": sp}
        return getattr(module, name)(*(values[x] for x in order))

    return Subsystem(name, keyed, call)


# craftax/craftax/game_logic.py: craftax_step (1.6.1), in call order
CRAFTAX_SUBSYSTEMS = (
    _sub("change_floor", False, "s, a, p, sp"),
    _sub("do_crafting", False, "s, a"),
    _sub("do_action", True, "k, s, a, sp"),
    _sub("place_block", False, "s, a, sp"),
    _sub("shoot_projectile", False, "s, a, sp"),
    _sub("cast_spell", False, "s, a, sp"),
    _sub("drink_potion", False, "s, a"),
    _sub("read_book", True, "k, s, a"),
    _sub("enchant", True, "k, s, a"),
    _sub("boss_logic", False, "s, sp"),
    _sub("level_up_attributes", False, "s, a, p"),
    _sub("move_player", False, "s, a, p"),
    _sub("update_mobs", True, "k, s, p, sp"),
    _sub("spawn_mobs", True, "s, k, p, sp"),
    _sub("update_plants", False, "s, sp"),
    _sub("update_player_intrinsics", False, "s, a, sp"),
    _sub("clip_inventory_and_intrinsics", False, "s, p"),
    _sub("calculate_inventory_achievements", False, "s"),
)
# craftax/craftax_classic/game_logic.py: craftax_step (1.6.1), in call order
CLASSIC_SUBSYSTEMS = (
    _sub("do_crafting", False, "s, a"),
    _sub("do_action", True, "k, s, a, sp"),
    _sub("place_block", False, "s, a, sp"),
    _sub("move_player", False, "s, a"),
    _sub("update_mobs", True, "k, s, p, sp"),
    _sub("spawn_mobs", True, "s, k, p, sp"),
    _sub("update_plants", False, "s, sp"),
    _sub("update_player_intrinsics", False, "s, a"),
    _sub("cap_inventory", False, "s"),
    _sub("update_health", False, "s"),
)
# Calls of craftax_step that are part of the step itself, not subsystems the finder replays.
STEP_OWN_CALLS = {"calculate_light_level"}


def craftax_location() -> str:
    """'craftax <version> at <directory>' of the package `import craftax` finds; a copy
    imported ahead of the installed distribution (a fork on PYTHONPATH) is named as such."""
    import craftax

    where = Path(craftax.__file__).resolve().parent
    try:
        dist = importlib.metadata.distribution("craftax")
    except importlib.metadata.PackageNotFoundError:
        return f"craftax at {where} (no installed distribution)"
    if Path(dist.locate_file("craftax")).resolve() == where:
        return f"craftax {dist.version} at {where}"
    return f"the craftax at {where} (not the installed craftax {dist.version})"


def _leaf_names(tree) -> list[str]:
    return [".".join(p.name if hasattr(p, "name") else str(p.key) for p in path)
            for path, _ in jax.tree_util.tree_flatten_with_path(tree)[0]]


class Game:
    """One game of the installed craftax: its no-auto-reset symbolic env, game_logic module,
    default params, EnvState layout and jitted batched calls."""

    def __init__(self, env_id: str):
        if env_id == CRAFTAX_ENV_ID:
            package, env_class, self.subsystems = "craftax.craftax", "CraftaxSymbolicEnvNoAutoReset", CRAFTAX_SUBSYSTEMS
            self.interrupting = ("is_sleeping", "is_resting")
        elif env_id == CLASSIC_ENV_ID:
            package, env_class = "craftax.craftax_classic", "CraftaxClassicSymbolicEnvNoAutoReset"
            self.subsystems = CLASSIC_SUBSYSTEMS
            self.interrupting = ("is_sleeping",)
        else:
            raise ValueError(f"unknown env id {env_id!r}; choose {CRAFTAX_ENV_ID!r} or {CLASSIC_ENV_ID!r}")
        self.env_id = env_id
        self.logic = importlib.import_module(f"{package}.game_logic")
        self.actions = importlib.import_module(f"{package}.constants").Action
        envs = importlib.import_module(f"{package}.envs.craftax_symbolic_env")
        self.env = getattr(envs, env_class)()
        self.params = self.env.default_params
        self.static_params = self.env.default_static_params()
        shapes = jax.eval_shape(self.env.reset_env, jax.ShapeDtypeStruct((2,), jnp.uint32), self.params)[1]
        self.leaf_names = _leaf_names(shapes)
        self.leaf_dtypes = [np.dtype(leaf.dtype) for leaf in jax.tree_util.tree_leaves(shapes)]
        self.treedef = jax.tree_util.tree_structure(shapes)
        self._reset = jax.jit(jax.vmap(self.env.reset_env, in_axes=(0, None)))
        self._step = jax.jit(jax.vmap(self.env.step_env, in_axes=(0, 0, 0, None)))
        self._subsystems: dict[str, Callable] = {}

    # -- states ----------------------------------------------------------------------------
    def flatten(self, state) -> dict[str, np.ndarray]:
        """EnvState (batched) -> {leaf name: numpy array}."""
        return dict(zip(self.leaf_names, (np.asarray(x) for x in jax.tree_util.tree_leaves(state))))

    def unflatten(self, flat: dict[str, np.ndarray]):
        """{leaf name: array [N, ...]} -> a batched EnvState."""
        leaves = [jnp.asarray(np.asarray(flat[n]).astype(d, copy=False)) for n, d in zip(self.leaf_names, self.leaf_dtypes)]
        return jax.tree_util.tree_unflatten(self.treedef, leaves)

    # -- batched calls -----------------------------------------------------------------------
    def reset(self, keys: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """reset_env(keys[i]) for a batch (at least MIN_BATCH): (obs, state dict)."""
        obs, state = self._reset(jnp.asarray(keys, dtype=jnp.uint32), self.params)
        return np.asarray(obs), self.flatten(state)

    def step(self, state, keys: np.ndarray, actions: np.ndarray):
        """step_env of a batched EnvState: (obs, new EnvState, reward, done), numpy but the state."""
        obs, state, reward, done, _ = self._step(jnp.asarray(keys, dtype=jnp.uint32), state,
                                                 jnp.asarray(actions, dtype=jnp.int32), self.params)
        return np.asarray(obs), state, np.asarray(reward), np.asarray(done)

    def run_subsystem(self, sub: Subsystem, flat: dict[str, np.ndarray], keys: np.ndarray,
                      actions: np.ndarray) -> dict[str, np.ndarray]:
        """`sub` applied to a batched state dict (at least MIN_BATCH envs), jitted and vmapped."""
        if sub.name not in self._subsystems:
            def one(s, k, a, p, call=sub.call):
                return call(self.logic, s, k, a, p, self.static_params)

            self._subsystems[sub.name] = jax.jit(jax.vmap(one, in_axes=(0, 0, 0, None)))
        out = self._subsystems[sub.name](self.unflatten(flat), jnp.asarray(keys, dtype=jnp.uint32),
                                         jnp.asarray(actions, dtype=jnp.int32), self.params)
        return self.flatten(out)

    def interrupted(self, flat: dict[str, np.ndarray], actions: np.ndarray) -> np.ndarray:
        """craftax_step's first line: the action becomes NOOP (0) while sleeping (or resting)."""
        busy = np.zeros(actions.shape, bool)
        for name in self.interrupting:
            busy |= np.asarray(flat[name], bool)
        return np.where(busy, 0, actions).astype(np.int32)

    # -- where things are ----------------------------------------------------------------------
    def action_name(self, action: int) -> str:
        try:
            return self.actions(int(action)).name
        except ValueError:
            return "not an action"

    def source_of(self, name: str) -> str:
        """'<file>:<line>' of upstream function `name` (as the module resolves it)."""
        try:
            fn = inspect.unwrap(getattr(self.logic, name))
            return f"{inspect.getsourcefile(fn)}:{inspect.getsourcelines(fn)[1]}"
        except (AttributeError, TypeError, OSError):
            return "(source not found)"

    def step_calls(self) -> list[str]:
        """The game_logic functions the installed craftax_step calls, in source order."""
        source = textwrap.dedent(inspect.getsource(self.logic.craftax_step))
        calls = []
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                calls.append((node.lineno, node.col_offset, node.func.id))
        names = [name for _, _, name in sorted(calls)]
        return [n for n in names if inspect.isfunction(getattr(self.logic, n, None))]

    def step_order_problem(self) -> str | None:
        """None when the installed craftax_step calls exactly the subsystems the finder replays,
        in that order; else what differs (a new release's craftax_step, a fork's)."""
        found = [n for n in self.step_calls() if n not in STEP_OWN_CALLS]
        expected = [s.name for s in self.subsystems]
        if found == expected:
            return None
        missing = [n for n in found if n not in expected]
        gone = [n for n in expected if n not in found]
        parts = []
        if missing:
            parts.append(f"it calls {missing}, which the finder does not replay")
        if gone:
            parts.append(f"it no longer calls {gone}")
        if not parts:
            parts.append(f"its order is {found}")
        return (f"the installed craftax_step ({self.source_of('craftax_step')}) is not the one the finder replays "
                f"(pycraftax/porting/upstream.py): " + "; ".join(parts))
