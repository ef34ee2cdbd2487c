"""The divergence finder: `pycraftax conformance`.

Compares the built rules (the C extension) with whatever craftax package is installed, for
each game at a chosen size and seed, in phases:
  worlds   reset_env of N world keys (split(PRNGKey(seed), N)), every leaf and the obs
  random   lockstep from those worlds, uniform random actions
  busy     lockstep from those worlds, the busy policy (inject.busy_actions: DO 30%, moves 20%)
  inject   lockstep from busy injected states (inject.mutate / inject.perturb)
Lockstep: C `step_with_keys` and upstream `jit(vmap(step_env))` from the same states with the
same per-step keys and actions; after every step every state leaf (floats bitwise), the obs,
reward and done are compared.

At the first divergence it prints the env, step, action and key, the first differing leaves
with index and both values, the upstream function responsible (found by replaying that one step
subsystem by subsystem in craftax_step's order against the C rules' matching functions:
c_rules.py) and a one-line command that reproduces exactly that case (`--replay FILE`: the
state before the step, its key and action, saved); it exits 1. Either way it ends with one
summary line. Exit 2: the finder could not run (bad arguments, craftax missing).

Upstream compiles are cached on disk (JAX's persistent compilation cache, --jax-cache), so only
the first run on a machine pays them.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from pycraftax.porting import jax_version_note

PHASES = ("worlds", "random", "busy", "inject")
PHASE_TITLES = {"worlds": "reset worlds", "random": "random policy", "busy": "busy policy",
                "inject": "busy injected states"}
MAX_LEAVES_SHOWN = 6
DEFAULT_JAX_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pycraftax" / "jax"


def format_count(n: int) -> str:
    return f"{n:,}"


# -- comparing -----------------------------------------------------------------------------------
@dataclasses.dataclass
class LeafDiff:
    name: str
    index: tuple
    ours: object
    theirs: object
    count: int  # differing elements of this leaf in this env


def _differs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise inequality of two [N, ...] arrays; floats bitwise."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype == np.float32 or b.dtype == np.float32:
        return a.astype(np.float32).view(np.uint32) != b.astype(np.float32).view(np.uint32)
    return a.astype(np.int64) != b.astype(np.int64)


def compare(ours: dict[str, np.ndarray], theirs: dict[str, np.ndarray], names: list[str]):
    """(first env that differs, its differing leaves in `names` order) or None."""
    masks = {}
    for name in names:
        d = _differs(ours[name], theirs[name])
        if d.any():
            masks[name] = d.reshape(d.shape[0], -1)
    if not masks:
        return None
    env = int(min(np.flatnonzero(m.any(axis=1))[0] for m in masks.values()))
    leaves = []
    for name, m in masks.items():
        if not m[env].any():
            continue
        d = _differs(ours[name][env:env + 1], theirs[name][env:env + 1])[0]
        index = tuple(int(i) for i in np.argwhere(d)[0]) if d.ndim else ()
        leaves.append(LeafDiff(name, index, np.asarray(ours[name])[env][index], np.asarray(theirs[name])[env][index],
                               int(m[env].sum())))
    return env, leaves


def _pick(state: dict[str, np.ndarray], env: int, copies: int) -> dict[str, np.ndarray]:
    """Env `env` of a batched dict, repeated `copies` times."""
    return {k: np.repeat(np.asarray(v)[env:env + 1], copies, axis=0) for k, v in state.items()}


# -- attributing ---------------------------------------------------------------------------------
@dataclasses.dataclass
class Attribution:
    subsystem: str | None = None  # the upstream function whose C twin differs
    position: int = 0  # its place in craftax_step's order (1-based)
    leaves: list = dataclasses.field(default_factory=list)
    note: str = ""  # why no subsystem is named, or what else is known
    seconds: float = 0.0  # how long the replay took


def attribute(game, rules, pre: dict[str, np.ndarray], key: np.ndarray, action: int,
              upstream_after: dict[str, np.ndarray]) -> Attribution:
    """Replay one step of one env (`pre`, batch of 1) subsystem by subsystem in craftax_step's
    order: each upstream function and its C twin get the same input (upstream's output of the
    subsystem before), and the first whose outputs differ is responsible. upstream_after:
    upstream step_env's state of that step (batch of 1), which the chained replay must reach."""
    from pycraftax import jax_random
    from pycraftax.porting.upstream import MIN_BATCH

    state = _pick(pre, 0, MIN_BATCH)
    actions = game.interrupted(state, np.full(MIN_BATCH, action, np.int32))
    rng = np.asarray(key, np.uint32)
    zero_keys = np.zeros((MIN_BATCH, 2), np.uint32)
    for position, sub in enumerate(game.subsystems, 1):
        keys = zero_keys
        if sub.keyed:
            rng, sub_key = jax_random.split(rng, 2)
            keys = np.repeat(sub_key[None], MIN_BATCH, axis=0)
        theirs = game.run_subsystem(sub, state, keys, actions)
        if not rules.has(sub.name):
            return Attribution(note=f"upstream's {sub.name} has no C hook to replay against (pycraftax/porting/"
                                    "c_rules.py): the replay stops there")
        ours = rules.apply(sub.name, state, keys, actions)
        found = compare(ours, theirs, game.leaf_names)
        if found is not None:
            return Attribution(sub.name, position, found[1])
        state = theirs
    # Every subsystem agrees on its own: the chain must then reach upstream's step but for the
    # step's own tail (timestep, light level, state_rng).
    tail = {"timestep", "light_level", "state_rng"}
    chain = compare(_pick(state, 0, 1), upstream_after, [n for n in game.leaf_names if n not in tail])
    if chain is not None:
        return Attribution(note="the subsystem-by-subsystem replay does not reproduce upstream's step_env (leaf "
                                f"{chain[1][0].name!r}): the finder's list of craftax_step's calls does not match "
                                "the installed craftax (pycraftax/porting/upstream.py)")
    return Attribution(note="every subsystem agrees given the same input")


# -- one game ------------------------------------------------------------------------------------
@dataclasses.dataclass
class Divergence:
    env_id: str
    phase: str
    seed: int
    num_envs: int
    step: int  # -1: the reset itself
    env: int
    action: int | None
    key: np.ndarray
    leaves: list
    attribution: Attribution | None = None
    reproduce: str | None = None  # the one-line command that reproduces the case
    pre_state: dict | None = None  # the env's state before the step (batch of 1)
    upstream_after: dict | None = None  # upstream's state after it (batch of 1)


class GameCheck:
    """The C env and the installed craftax's env of one game, stepped side by side."""

    def __init__(self, env_id: str, num_envs: int, seed: int):
        import pycraftax
        from pycraftax.porting import upstream

        self.env_id, self.num_envs, self.seed = env_id, num_envs, seed
        self.game = upstream.Game(env_id)
        self.env = pycraftax.make(env_id, num_envs=num_envs, backend="c", seed=0)
        self.names = self.game.leaf_names
        self.env_steps = {}

    # -- what must agree before any step --------------------------------------------------------
    def layout_problems(self) -> list[str]:
        """Differences of state layout, action count, obs shape and default params between the two
        builds: the two cannot be stepped side by side until they agree."""
        from pycraftax import params as pparams

        problems = []
        self.env.reset(seed=0)  # get_state needs states to read the leaf names from
        ours = set(self.env.get_state())
        missing, extra = sorted(set(self.names) - ours), sorted(ours - set(self.names))
        if missing or extra:
            problems.append(f"EnvState leaves differ: upstream only {missing}, C only {extra}")
        if self.env.num_actions != self.game.env.num_actions:
            problems.append(f"action count differs: upstream {self.game.env.num_actions}, C {self.env.num_actions}")
        their_obs = tuple(self.game.env.observation_space(self.game.params).shape)
        if their_obs != tuple(self.env.single_observation_space.shape):
            problems.append(f"obs shape differs: upstream {their_obs}, C {tuple(self.env.single_observation_space.shape)}")
        classic = self.env_id == pparams.CLASSIC_ENV_ID
        pairs = (("EnvParams", pparams.ClassicEnvParams() if classic else pparams.EnvParams(), self.game.params),
                 ("StaticEnvParams", pparams.ClassicStaticEnvParams() if classic else pparams.StaticEnvParams(),
                  self.game.static_params))
        for label, c_defaults, theirs_all in pairs:
            for field in dataclasses.fields(c_defaults):
                if field.name == "fractal_noise_angles":
                    continue
                theirs = getattr(theirs_all, field.name, "(absent)")
                ours_value = getattr(c_defaults, field.name)
                if theirs == "(absent)" or not np.array_equal(np.asarray(theirs), np.asarray(ours_value)):
                    problems.append(f"{label} default {field.name}: upstream {theirs}, C {ours_value}")
        return problems

    # -- phases ---------------------------------------------------------------------------------
    def world_keys(self) -> np.ndarray:
        from pycraftax import jax_random

        return jax_random.split(jax_random.prng_key(self.seed), self.num_envs)

    def worlds(self) -> tuple[dict, Divergence | None]:
        """C and upstream reset_env of the world keys; (C's states, divergence or None)."""
        keys = self.world_keys()
        obs, _ = self.env.reset_with_keys(keys)
        ours = self.env.get_state()
        their_obs, theirs = self.game.reset(keys)
        found = compare({**ours, "obs": obs}, {**theirs, "obs": their_obs}, self.names + ["obs"])
        if found is None:
            return ours, None
        env, leaves = found
        return ours, Divergence(self.env_id, "worlds", self.seed, self.num_envs, -1, env, None, keys[env], leaves,
                                Attribution(note="reset_env (world_gen.py: generate_world) and the obs of the new "
                                                 "world: the finder replays steps only"))

    def streams(self, phase: str, steps: int) -> tuple[np.ndarray, np.ndarray, np.random.Generator]:
        """The phase's per-step keys [T, N, 2] and actions [T, N], fixed by (seed, phase, N, T)."""
        from pycraftax.porting import inject

        rng = np.random.default_rng([self.seed, PHASES.index(phase), self.num_envs, steps])
        keys = rng.integers(0, 2**32, size=(steps, self.num_envs, 2), dtype=np.uint32)
        if phase == "busy":
            actions = inject.busy_actions(rng, steps, self.num_envs, self.env.num_actions)
        else:
            actions = rng.integers(0, self.env.num_actions, size=(steps, self.num_envs)).astype(np.int32)
        return keys, actions, rng

    def start_state(self, phase: str, worlds: dict, rng: np.random.Generator) -> dict:
        from pycraftax.params import CLASSIC_ENV_ID
        from pycraftax.porting import inject

        state = {k: v.copy() for k, v in worlds.items()}
        if phase != "inject":
            return state
        return inject.perturb(state, rng) if self.env_id == CLASSIC_ENV_ID else inject.mutate(state, rng)

    def lockstep(self, phase: str, worlds: dict, steps: int):
        """Step both sides from the phase's start state; the first Divergence or None."""
        keys, actions, rng = self.streams(phase, steps)
        start = self.start_state(phase, worlds, rng)
        self.env.set_state(start)
        pre = self.env.get_state()
        state = self.game.unflatten(pre)
        for t in range(steps):
            obs, reward, done, _ = self.env.step_with_keys(actions[t], keys[t])
            ours = self.env.get_state()
            their_obs, state, their_reward, their_done = self.game.step(state, keys[t], actions[t])
            theirs = self.game.flatten(state)
            found = compare({**ours, "obs": obs, "reward": reward, "done": done},
                            {**theirs, "obs": their_obs, "reward": their_reward, "done": their_done},
                            self.names + ["obs", "reward", "done"])
            if found is not None:
                env, leaves = found
                self.env_steps[phase] = t * self.num_envs
                return Divergence(self.env_id, phase, self.seed, self.num_envs, t, env, int(actions[t, env]),
                                  keys[t, env], leaves, pre_state=_pick(pre, env, 1),
                                  upstream_after=_pick(theirs, env, 1))
            pre = ours
        self.env_steps[phase] = steps * self.num_envs
        return None

    def attribute(self, d: Divergence) -> Attribution:
        from pycraftax.porting import c_rules

        reason = c_rules.unavailable_reason()
        if reason is not None:
            return Attribution(note=f"subsystem not named: {reason}")
        from pycraftax import rules as prules

        if c_rules.fingerprint() != prules.rules_fingerprint():
            return Attribution(note=f"subsystem not named: the parity-test extension was built from other rules "
                                    f"({c_rules.fingerprint()}) than the C extension ({prules.rules_fingerprint()}); "
                                    + c_rules.BUILD_HINT)
        rules = c_rules.Rules(self.env_id, self.env.params)
        return attribute(self.game, rules, d.pre_state, d.key, d.action, d.upstream_after)

    def replay_case(self, path: Path, d: Divergence) -> None:
        """Save what `--replay` needs to step exactly this case again."""
        np.savez_compressed(path, env_id=self.env_id, phase=d.phase, seed=d.seed, num_envs=d.num_envs, step=d.step,
                            env=d.env, action=d.action, key=d.key,
                            **{"state/" + k: v for k, v in d.pre_state.items()})


def replay(path: Path) -> tuple[GameCheck, Divergence | None]:
    """Step the saved case once more on both sides (its env repeated over the batch size it was
    found at) and attribute it again."""
    with np.load(path) as data:
        env_id, num_envs = str(data["env_id"]), int(data["num_envs"])
        pre = {k[len("state/"):]: data[k] for k in data.files if k.startswith("state/")}
        key, action = data["key"], int(data["action"])
        meta = dict(phase=str(data["phase"]), seed=int(data["seed"]), step=int(data["step"]), env=int(data["env"]))
    check = GameCheck(env_id, num_envs, meta["seed"])
    batch = _pick(pre, 0, num_envs)
    check.env.set_state(batch)
    keys = np.repeat(np.asarray(key, np.uint32)[None], num_envs, axis=0)
    actions = np.full(num_envs, action, np.int32)
    obs, reward, done, _ = check.env.step_with_keys(actions, keys)
    their_obs, state, their_reward, their_done = check.game.step(check.game.unflatten(batch), keys, actions)
    theirs = check.game.flatten(state)
    found = compare({**check.env.get_state(), "obs": obs, "reward": reward, "done": done},
                    {**theirs, "obs": their_obs, "reward": their_reward, "done": their_done},
                    check.names + ["obs", "reward", "done"])
    if found is None:
        return check, None
    return check, Divergence(env_id, meta["phase"], meta["seed"], num_envs, meta["step"], meta["env"], action, key,
                             found[1], pre_state=pre, upstream_after=_pick(theirs, 0, 1))


# -- reporting -----------------------------------------------------------------------------------
def _value(v) -> str:
    v = np.asarray(v)
    if v.dtype == np.float32:
        return str(np.float32(v))  # the shortest text that is this float32 (0.29999998, not 0.3)
    return str(v.item()) if v.ndim == 0 else str(v.tolist())


def describe_divergence(d: Divergence, game, rules_source=None) -> list[str]:
    where = "reset" if d.step < 0 else f"step {d.step}"
    action = "" if d.action is None else f", action {d.action} ({game.action_name(d.action)})"
    lines = [f"DIVERGENCE in {d.env_id}, {PHASE_TITLES[d.phase]} (seed {d.seed}, {d.num_envs} envs): {where}, "
             f"env {d.env}{action}, key {[int(k) for k in d.key]}",
             "  first differing leaves (C vs upstream):"]
    for leaf in d.leaves[:MAX_LEAVES_SHOWN]:
        more = f" ({leaf.count} elements differ)" if leaf.count > 1 else ""
        lines.append(f"    {leaf.name}{list(leaf.index) if leaf.index else ''}: C {_value(leaf.ours)} vs upstream "
                     f"{_value(leaf.theirs)}{more}")
    if len(d.leaves) > MAX_LEAVES_SHOWN:
        lines.append(f"    ... and {len(d.leaves) - MAX_LEAVES_SHOWN} more leaves: "
                     + ", ".join(x.name for x in d.leaves[MAX_LEAVES_SHOWN:]))
    a = d.attribution
    if a is not None and a.subsystem:
        lines.append(f"  upstream function responsible: {a.subsystem} ({game.source_of(a.subsystem)}), subsystem "
                     f"{a.position} of {len(game.subsystems)} of craftax_step; the C rules' "
                     f"{rules_source(a.subsystem) if rules_source else a.subsystem} differs given the same input, "
                     "replayed subsystem by subsystem in upstream's order:")
        for leaf in a.leaves[:MAX_LEAVES_SHOWN]:
            lines.append(f"    after {a.subsystem}: {leaf.name}{list(leaf.index) if leaf.index else ''}: "
                         f"C {_value(leaf.ours)} vs upstream {_value(leaf.theirs)}")
    elif a is not None:
        note = a.note
        if note == "every subsystem agrees given the same input":
            names = {leaf.name for leaf in d.leaves}
            if names <= {"obs"}:
                note = "only the obs differs: get_obs (render_craftax_symbolic) of the stepped state"
            elif names <= {"done"}:
                note = "only done differs: is_terminal (is_game_over)"
            else:
                note = ("every subsystem agrees given the same input: the difference is craftax_step's own "
                        "(the action interrupt, call order, key splits, reward, timestep, light level, state_rng; "
                        "reference_c/include/craftax/step.h or craftax_classic/game_logic.h: craftax_classic_step)")
        lines.append(f"  upstream function responsible: {note}")
    if d.reproduce:
        lines.append(f"  reproduce: {d.reproduce}")
    return lines


# -- the command ---------------------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    from pycraftax.params import CLASSIC_ENV_ID, CRAFTAX_ENV_ID

    parser.add_argument("--env", dest="env_ids", action="append", choices=(CRAFTAX_ENV_ID, CLASSIC_ENV_ID),
                        help="the game to check (repeat for both; default: both)")
    parser.add_argument("--num-envs", type=int, default=16, help="envs (and worlds) per phase")
    parser.add_argument("--steps", type=int, default=100, help="lockstep steps of the random and busy phases")
    parser.add_argument("--inject-steps", type=int, default=50, help="lockstep steps from injected states")
    parser.add_argument("--seed", type=int, default=0, help="seed of the worlds, keys, actions and injected states")
    parser.add_argument("--phases", default=",".join(PHASES),
                        help=f"comma-separated phases to run, of {','.join(PHASES)}")
    parser.add_argument("--replay", default=None, metavar="FILE",
                        help="step a saved divergence (the reproducer a failing run prints) again and name its cause "
                             "(default: none, run the phases)")
    parser.add_argument("--case-dir", default=str(Path(tempfile.gettempdir()) / "pycraftax-conformance"),
                        help="where a divergence's replay file is written")
    parser.add_argument("--jax-cache", default=str(DEFAULT_JAX_CACHE),
                        help="JAX's persistent compilation cache for upstream's compiles ('' to disable)")
    parser.add_argument("--pin-anchors", action="store_true",
                        help="on modified rules, after a run without divergence, pin this build's trajectory anchors "
                             "(pycraftax/variant_anchors.json) for its own regression tests")


def _enable_jax_cache(directory: str) -> None:
    import jax

    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        jax.config.update("jax_compilation_cache_dir", directory)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


def _problem(message: str) -> int:
    print(f"pycraftax conformance: error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    from pycraftax import rules as prules
    from pycraftax.params import CLASSIC_ENV_ID, CRAFTAX_ENV_ID

    t0 = time.perf_counter()
    phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    bad = [p for p in phases if p not in PHASES]
    if bad or not phases:
        return _problem(f"--phases: unknown {bad or phases}; choose from {','.join(PHASES)}")
    for name, low in (("num_envs", 2), ("steps", 1), ("inject_steps", 1)):
        if getattr(args, name) < low:
            return _problem(f"--{name.replace('_', '-')} must be >= {low}, got {getattr(args, name)}")
    if args.replay and not Path(args.replay).is_file():
        return _problem(f"--replay: no such file {args.replay}")
    try:
        import craftax  # noqa: F401
        import jax  # noqa: F401
    except ImportError as e:
        return _problem(f"the finder compares with an installed craftax package (and jax): {e}. Install craftax "
                        "1.6.1 (pip install '.[jax]'), or put your fork first on PYTHONPATH")
    from pycraftax.porting import c_rules, upstream

    _enable_jax_cache(args.jax_cache)
    built = prules.rules_fingerprint()
    print(f"built rules: {built} ({prules.describe()}); upstream: {upstream.craftax_location()}")
    jax_note = jax_version_note()
    if jax_note:
        print(f"warning: {jax_note}")
    source = prules.source_fingerprint()
    if source is not None and source != built:
        print(f"warning: the rules headers of this source tree have fingerprint {source}, not the built {built}: "
              "rebuild (PYCRAFTAX_TEST_HOOKS=1 pip install -e \".[jax]\" from the repository root, as docs/PORTING.md "
              "does) to check your edits")
    reason = c_rules.unavailable_reason()
    if reason:
        print(f"note: a divergence will be located to its leaves but not its subsystem: {reason}")
    if args.replay:
        return _replay(Path(args.replay), built, t0)

    env_ids = args.env_ids or [CRAFTAX_ENV_ID, CLASSIC_ENV_ID]
    totals = {p: 0 for p in PHASES}
    for env_id in dict.fromkeys(env_ids):
        check = GameCheck(env_id, args.num_envs, args.seed)
        problems = check.layout_problems()
        order = check.game.step_order_problem()
        if order:
            print(f"warning: {env_id}: {order}")
        if problems:
            for p in problems:
                print(f"DIVERGENCE in {env_id}: {p}")
            print(f"pycraftax conformance: DIVERGED: {env_id}: {problems[0]}; built rules {built} vs "
                  f"{upstream.craftax_location()}")
            return 1
        check.env.reset_with_keys(check.world_keys())
        worlds = check.env.get_state()  # the lockstep phases start from C's worlds (the worlds phase compares them)
        for phase in phases:
            t = time.perf_counter()
            if phase == "worlds":
                worlds, d = check.worlds()
                done = f"{args.num_envs} worlds equal on every leaf and the obs"
                totals["worlds"] += args.num_envs
            else:
                steps = args.inject_steps if phase == "inject" else args.steps
                d = check.lockstep(phase, worlds, steps)
                totals[phase] += check.env_steps[phase]
                done = f"{check.env_steps[phase]:,} env steps equal on every leaf, obs, reward and done"
            if d is not None:
                return _report(check, d, args, built, t0)
            print(f"{env_id}: {PHASE_TITLES[phase]}: {done} ({time.perf_counter() - t:.1f} s)")
    steps = ", ".join(f"{p} {totals[p]:,}" for p in ("random", "busy", "inject") if p in phases)
    worlds_part = f"{totals['worlds']:,} worlds, " if "worlds" in phases else ""
    print(f"pycraftax conformance: no divergence: {', '.join(dict.fromkeys(env_ids))}; built rules {built} "
          f"({prules.describe()}) vs {upstream.craftax_location()}; {worlds_part}"
          f"{sum(totals[p] for p in ('random', 'busy', 'inject')):,} lockstep env steps ({steps}); "
          f"{time.perf_counter() - t0:.0f} s")
    if args.pin_anchors:
        return _pin(built)
    return 0


def _report(check: GameCheck, d: Divergence, args, built: str, t0: float) -> int:
    from pycraftax.porting import c_rules, upstream

    if d.step >= 0:
        t = time.perf_counter()
        d.attribution = check.attribute(d)
        d.attribution.seconds = time.perf_counter() - t
        case_dir = Path(args.case_dir)
        case_dir.mkdir(parents=True, exist_ok=True)
        path = case_dir / f"{d.env_id}-{d.phase}-seed{d.seed}-n{d.num_envs}-step{d.step}-env{d.env}.npz"
        check.replay_case(path, d)
        d.reproduce = f"pycraftax conformance --replay {path}"
    else:
        d.reproduce = (f"pycraftax conformance --env {d.env_id} --phases worlds --num-envs {d.num_envs} "
                       f"--seed {d.seed}")
    rules_source = None
    if c_rules.unavailable_reason() is None:
        rules = c_rules.Rules(check.env_id, check.env.params)
        rules_source = lambda name: f"{rules.function_name(name)} ({rules.source_of(name)})"  # noqa: E731
    for line in describe_divergence(d, check.game, rules_source):
        print(line)
    print(_diverged_line(d, built, upstream.craftax_location(), t0))
    return 1


def _diverged_line(d: Divergence, built: str, where: str, t0: float) -> str:
    a = d.attribution
    cause = f"{a.subsystem} " if a is not None and a.subsystem else ""
    at = "reset" if d.step < 0 else f"step {d.step}"
    repro = f"; reproduce: {d.reproduce}" if d.reproduce else ""
    replay = f" (the subsystem replay {a.seconds:.0f} s)" if a is not None and a.seconds else ""
    return (f"pycraftax conformance: DIVERGED: {d.env_id}, {PHASE_TITLES[d.phase]}, {at}, env {d.env}: {cause}"
            f"(leaf {d.leaves[0].name}); built rules {built} vs {where}; {time.perf_counter() - t0:.0f} s{replay}"
            f"{repro}")


def _replay(path: Path, built: str, t0: float) -> int:
    from pycraftax.porting import c_rules, upstream

    check, d = replay(path)
    if d is None:
        print(f"pycraftax conformance: no divergence: the case {path.name} steps the same on both sides now; built "
              f"rules {built} vs {upstream.craftax_location()}; {time.perf_counter() - t0:.0f} s")
        return 0
    t = time.perf_counter()
    d.attribution = check.attribute(d)
    d.attribution.seconds = time.perf_counter() - t
    d.reproduce = f"pycraftax conformance --replay {path}"
    rules_source = None
    if c_rules.unavailable_reason() is None:
        rules = c_rules.Rules(check.env_id, check.env.params)
        rules_source = lambda name: f"{rules.function_name(name)} ({rules.source_of(name)})"  # noqa: E731
    for line in describe_divergence(d, check.game, rules_source):
        print(line)
    print(_diverged_line(d, built, upstream.craftax_location(), t0))
    return 1


def _pin(built: str) -> int:
    from pycraftax import anchors
    from pycraftax import rules as prules
    from pycraftax.porting import upstream

    if not prules.is_modified():
        print(f"--pin-anchors: the built rules are {prules.describe()}, whose anchors are fixed in "
              "pycraftax/anchors.py (RELEASED_ANCHORS); nothing to pin")
        return 0
    path = anchors.pin_variant(built, upstream.craftax_location())
    print(f"pinned the trajectory anchors of modified rules {built} (both games) in {path}; commit it with the rules")
    return 0
