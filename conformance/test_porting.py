"""The porting workflow in CI (docs/PORTING.md): the divergence finder `pycraftax conformance`
locates a deliberately wrong rule, and passes once upstream makes the same change.

The perturbed test build (conformance/perturbed_build.py: -DPYCRAFTAX_TEST_PERTURB, never in a
shipped build) changes one rule per game: every hit on the player does 1 more damage
(craftax_get_damage_done_to_player, called by update_mobs), and Craftax-Classic's inventory holds
at most 8 of each item (craftax_classic_cap_inventory). For each game:
  * the finder run on that build against craftax 1.6.1 exits 1 naming the upstream subsystem
    whose C twin differs, the leaf it changed, the modified rules' fingerprint, and a reproducer
    that, run, shows the same case;
  * the same finder run, with upstream's function patched in the process to make the same change,
    exits 0: the perturbed rule, exercised by these very phases (the run above diverged in them),
    now agrees with upstream.
Each run is a subprocess that imports the perturbed package. Sizes: the finder's defaults but
the worlds phase (reset is not perturbed, and its compile is the costliest).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("jax")
pytest.importorskip("craftax")

from conformance import perturbed_build  # noqa: E402
from pycraftax import _rules_hash, rules  # noqa: E402

pytestmark = pytest.mark.jax

PHASES = ["--phases", "random,busy,inject"]

FULL_GAME_PATCH = """
from craftax.craftax import game_logic
hit = game_logic.get_damage_done_to_player
# every hit on the player does 1 more damage (update_mobs calls this for melee and projectile hits)
game_logic.get_damage_done_to_player = lambda state, static_params, damage: hit(state, static_params, damage) + 1.0
"""
CLASSIC_PATCH = """
import jax, jax.numpy as jnp
from craftax.craftax_classic import game_logic
def cap_inventory(state):  # the inventory holds at most 8 of each item
    return state.replace(inventory=jax.tree_util.tree_map(lambda x: jnp.minimum(x, 8), state.inventory))
game_logic.cap_inventory = cap_inventory
"""
# env id -> (the upstream subsystem responsible, its C twin, the first leaf that differs, the patch)
CASES = {
    "Craftax-Symbolic-v1": ("update_mobs", "craftax_update_mobs", "player_health", FULL_GAME_PATCH),
    "Craftax-Classic-Symbolic-v1": ("cap_inventory", "craftax_classic_cap_inventory", "inventory.", CLASSIC_PATCH),
}
RUNNER = """
import sys
from pycraftax.porting import set_reference_jax_flags
set_reference_jax_flags()
{patch}
from pycraftax import cli
sys.exit(cli.main(["conformance", *sys.argv[1:]]))
"""


@pytest.fixture(scope="module")
def perturbed():
    return perturbed_build.package()


@pytest.fixture(scope="module")
def jax_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("jax-cache")


def finder(package, *args, patch: str = "") -> subprocess.CompletedProcess:
    """`pycraftax conformance ARGS` with the perturbed package, upstream patched by `patch`."""
    return subprocess.run([sys.executable, "-c", RUNNER.format(patch=patch), *args], cwd=package,
                          env=perturbed_build.environment(package), capture_output=True, text=True, timeout=1200)


def perturbed_fingerprint() -> str:
    return _rules_hash.fingerprint(defines=(perturbed_build.SWITCH,))


def test_perturbed_build_reads_as_modified_rules(perturbed):
    out = subprocess.run([sys.executable, "-c", "import pycraftax, pycraftax.rules as r; "
                          "print(pycraftax.rules_fingerprint(), r.describe(), r.variant_id('Craftax-Symbolic-v1'))"],
                         cwd=perturbed, env=perturbed_build.environment(perturbed), capture_output=True,
                         text=True, check=True)
    fp = perturbed_fingerprint()
    assert fp != rules.rules_fingerprint()
    assert out.stdout.split() == [fp, "modified", "rules", fp, f"Craftax-Symbolic-v1-rules-{fp}"]


@pytest.mark.parametrize("env_id", list(CASES))
def test_wrong_rule_is_located_to_its_subsystem(perturbed, jax_cache, tmp_path, env_id):
    subsystem, c_function, leaf, _ = CASES[env_id]
    args = ["--env", env_id, "--jax-cache", str(jax_cache), "--case-dir", str(tmp_path), *PHASES]
    out = finder(perturbed, *args)
    lines = out.stdout.splitlines()
    assert out.returncode == 1, out.stdout + out.stderr
    fp = perturbed_fingerprint()
    assert lines[0].startswith(f"built rules: {fp} (modified rules {fp}); upstream: craftax 1.6.1 at "), lines[0]
    where = next(i for i, line in enumerate(lines) if line.startswith(f"DIVERGENCE in {env_id}"))
    assert lines[where + 1] == "  first differing leaves (C vs upstream):"
    assert lines[where + 2].startswith(f"    {leaf}"), lines[where + 2]
    responsible = next(line for line in lines if "upstream function responsible:" in line)
    assert f"upstream function responsible: {subsystem} (" in responsible, responsible
    assert f"the C rules' {c_function} " in responsible, responsible
    assert lines[-1].startswith(f"pycraftax conformance: DIVERGED: {env_id}, "), lines[-1]
    assert f": {subsystem} (leaf {leaf}" in lines[-1], lines[-1]
    reproduce = lines[-1].split("; reproduce: ")[1]
    assert reproduce.startswith("pycraftax conformance --replay ")
    if env_id != "Craftax-Symbolic-v1":
        return  # the reproducer is the same code for both games: run once (a run costs its compiles)
    again = finder(perturbed, *reproduce.split()[2:], "--jax-cache", str(jax_cache))
    assert again.returncode == 1, again.stdout + again.stderr
    assert [line for line in again.stdout.splitlines() if line.startswith(("DIVERGENCE", "    "))] == \
        [line for line in lines if line.startswith(("DIVERGENCE", "    "))]


@pytest.mark.parametrize("env_id", list(CASES))
def test_the_same_change_upstream_passes(perturbed, jax_cache, tmp_path, env_id):
    args = ["--env", env_id, "--jax-cache", str(jax_cache), "--case-dir", str(tmp_path), *PHASES]
    out = finder(perturbed, *args, patch=CASES[env_id][3])
    assert out.returncode == 0, out.stdout + out.stderr
    last = out.stdout.splitlines()[-1]
    assert last.startswith(f"pycraftax conformance: no divergence: {env_id}; built rules {perturbed_fingerprint()} "
                           "(modified rules"), last
    assert "4,000 lockstep env steps (random 1,600, busy 1,600, inject 800)" in last, last


@pytest.mark.parametrize("argv, message", [
    (["--num-envs", "1"], "--num-envs must be >= 2"),
    (["--steps", "0"], "--steps must be >= 1"),
    (["--phases", "worlds,dance"], "--phases: unknown ['dance']"),
    (["--seed", "-1"], "--seed must be in [0, 2**32)"),
    (["--replay", "/nonexistent/case.npz"], "--replay: no such file"),
])
def test_finder_rejects_bad_arguments(argv, message, capsys, tmp_path):
    import jax

    from pycraftax import cli

    cache = jax.config.jax_compilation_cache_dir
    try:
        code = cli.main(["conformance", "--jax-cache", str(tmp_path), *argv])
    except SystemExit as e:  # the options every subcommand shares are checked by cli.main's parser
        code = e.code
    assert code == 2
    assert message in capsys.readouterr().err
    # refused before anything global changed: this process's later compiles stay off the disk cache
    assert jax.config.jax_compilation_cache_dir == cache


def test_finder_names_a_craftax_step_it_does_not_replay(monkeypatch):
    """A release whose craftax_step calls a subsystem the finder's list lacks is named, not
    misattributed (upstream's own craftax_step read from its source)."""
    from pycraftax.porting import upstream

    game = upstream.Game("Craftax-Classic-Symbolic-v1")
    assert game.step_order_problem() is None
    monkeypatch.setattr(game, "subsystems", game.subsystems[:4] + game.subsystems[5:])
    problem = game.step_order_problem()
    assert "it calls ['update_mobs'], which the finder does not replay" in problem, problem


def test_porting_guides_patches_still_apply(tmp_path):
    """docs/PORTING.md's worked example: its patches apply (`git apply --check`, as the guide
    applies them) to the installed craftax's file and to this tree's header, each copied into a
    directory of its own outside any repository, so the guide does not drift from the code it edits."""
    import shutil
    from pathlib import Path

    import craftax

    root = Path(__file__).resolve().parent.parent
    site = Path(craftax.__file__).resolve().parent.parent
    cases = [("zombie-damage-craftax.patch", site, "craftax/craftax/constants.py"),
             ("zombie-damage-c.patch", root, "reference_c/include/craftax/game_constants.h"),
             ("zombie-damage-c-wrong.patch", root, "reference_c/include/craftax/game_constants.h")]
    for name, base, relative in cases:
        target = tmp_path / name / relative
        target.parent.mkdir(parents=True)
        shutil.copy2(base / relative, target)
        run = subprocess.run(["git", "apply", "--check", str(root / "docs" / "porting" / name)], cwd=tmp_path / name,
                             capture_output=True, text=True)
        assert run.returncode == 0, (name, run.stderr)


def test_finder_names_what_differs_before_any_step():
    """EnvParams defaults, static sizes, leaves and action counts must agree before the two
    builds can be stepped side by side: a fork changing one is named."""
    from pycraftax.porting import finder

    check = finder.GameCheck("Craftax-Classic-Symbolic-v1", 2, 0)
    assert check.layout_problems() == []
    check.game.params = check.game.params.replace(max_timesteps=5)
    assert check.layout_problems() == ["EnvParams default max_timesteps: upstream 5, C 10000"]
