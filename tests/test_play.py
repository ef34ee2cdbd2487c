"""`pycraftax play`, headless (SDL's dummy video driver) with scripted key events: upstream's key
map, keys step the game as env.step would, sleeping passes time, Backspace steps back to the
exact earlier state, achievements are listed as they unlock, an agent plays (pause, single
steps), Escape and closing the window quit, and the command line runs the loop."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import numpy as np
import pytest

import pycraftax
from pycraftax import cli, play

pygame = pytest.importorskip("pygame", reason="play mode needs pygame (the [play] extra; tests install it)")

BLOCK = 8


@pytest.fixture(autouse=True)
def headless(monkeypatch):
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    yield
    pygame.quit()


def key(name: str):
    return pygame.event.Event(pygame.KEYDOWN, key=pygame.key.key_code(name))


def window(env_id="Craftax-Symbolic-v1", **kwargs) -> play.Window:
    return play.Window(play.Game(env_id, seed=kwargs.pop("seed", 1), block_size=BLOCK, **kwargs), fps=1000)


def _upstream_key_map(module: str) -> dict[str, str]:
    """{pygame constant name: action name} of upstream's play script, read as text from the
    installed craftax distribution (importing it would need JAX)."""
    dist = importlib.metadata.distribution("craftax")
    source = Path(dist.locate_file(f"craftax/{module}")).read_text()
    return dict(re.findall(r"pygame\.(K_\w+): Action\.(\w+)", source))


@pytest.mark.parametrize("module,keys,names", [
    ("craftax/play_craftax.py", play.FULL_KEYS, play.ACTION_NAMES),
    ("craftax_classic/play_craftax_classic.py", play.CLASSIC_KEYS, play.ACTION_NAMES_CLASSIC),
])
def test_key_map_is_upstreams(module, keys, names):
    upstream = _upstream_key_map(module)
    assert len(upstream) == len(keys) > 10
    ours = {pygame.key.name(getattr(pygame, constant)): action for constant, action in upstream.items()}
    assert {k: names[v] for k, v in keys.items()} == ours


def test_keys_step_the_game_as_env_step_does():
    w = window()
    reference = pycraftax.make("Craftax-Symbolic-v1", num_envs=1, backend="c", seed=1)
    reference.reset(seed=1)
    for name in ("a", "a", "space", "w", "d", "s", "q"):
        w.frame([key(name)])
        reference.step(np.array([play.FULL_KEYS[name]], np.int32))
    assert w.game.step_count == 7
    ours, theirs = w.game.state(), reference.get_state()
    for leaf in ours:
        np.testing.assert_array_equal(ours[leaf], theirs[leaf], err_msg=leaf)
    w.frame([pygame.event.Event(pygame.KEYDOWN, key=pygame.K_F1)])  # not in the key map: nothing happens
    assert w.game.step_count == 7
    w.close()


def test_step_back_restores_earlier_states_exactly():
    w = window(history=3)
    start = w.game.state()
    for name in ("a", "space", "d", "w"):
        w.frame([key(name)])
    assert w.game.step_count == 4
    for _ in range(3):
        w.frame([pygame.event.Event(pygame.KEYDOWN, key=pygame.K_BACKSPACE)])
    assert w.game.step_count == 1
    w.frame([pygame.event.Event(pygame.KEYDOWN, key=pygame.K_BACKSPACE)])  # only 3 kept
    assert w.game.step_count == 1 and "no earlier state kept" in w.game.messages
    # stepping again with the restored key stream replays the same step
    replay = window(history=0)
    replay.frame([key("a")])
    for leaf, value in w.game.state().items():
        np.testing.assert_array_equal(value, replay.game.state()[leaf], err_msg=leaf)
    np.testing.assert_array_equal(w.game.obs, replay.game.obs)
    assert not np.array_equal(start["player_direction"], w.game.state()["player_direction"]) or \
        not np.array_equal(start["timestep"], w.game.state()["timestep"])
    w.close()
    replay.close()


def test_sleep_passes_time_and_ignores_keys():
    w = window()
    state = w.game.state()
    state["is_sleeping"][:] = True
    state["player_energy"][:] = 0  # too tired to wake up at once
    w.game.env.set_state(state)
    w.frame([key("w")])  # ignored: the sleeper steps with NOOP instead
    w.frame([])
    assert w.game.step_count == 2
    assert w.game.state()["player_position"].tolist() == state["player_position"].tolist()
    w.close()


def test_unlocked_achievements_are_listed_and_drawn():
    w = window()
    state = w.game.state()
    state["inventory.wood"][:] = 9
    x, y = (int(v) for v in state["player_position"][0])
    dx, dy = {1: (0, -1), 2: (0, 1), 3: (-1, 0), 4: (1, 0)}[int(state["player_direction"][0])]
    state["map"][0, 0, x + dx, y + dy] = 2  # grass in front: a table can go there
    w.game.env.set_state(state)
    w.frame([key("t"), key("1")])  # place a table, then make a wooden pickaxe at it
    # holding wood counts as collecting it (upstream's inventory achievements)
    assert w.game.unlocked == [(1, "collect_wood"), (1, "place_table"), (2, "make_wood_pickaxe")]
    w.frame([pygame.event.Event(pygame.KEYDOWN, key=pygame.K_BACKSPACE)])
    assert w.game.unlocked == [(1, "collect_wood"), (1, "place_table")]  # stepping back takes it back
    w.close()


def test_classic_keys():
    w = window("Craftax-Classic-Symbolic-v1")
    assert w.game.keys is play.CLASSIC_KEYS
    w.frame([key("6")])  # MAKE_IRON_SWORD: not possible, but a step all the same
    assert w.game.step_count == 1 and w.game.env.num_actions == 17
    w.close()


def test_agent_plays_pauses_and_single_steps():
    from pycraftax import pretrained

    w = window(policy=pretrained.load("fast-1e9"))
    w.frame([])
    w.frame([])
    assert w.game.step_count == 2
    w.frame([key("p")])  # pause: this frame takes no step
    w.frame([key("w")])  # the person's keys do not move the agent's player
    assert w.game.step_count == 2 and w.paused
    w.frame([pygame.event.Event(pygame.KEYDOWN, key=pygame.K_RIGHT)])
    assert w.game.step_count == 3
    w.frame([pygame.event.Event(pygame.KEYDOWN, key=pygame.K_BACKSPACE)])
    assert w.game.step_count == 2
    w.close()


def test_escape_and_closing_the_window_quit():
    for make_event in (lambda: key("escape"), lambda: pygame.event.Event(pygame.QUIT)):
        w = window()
        w.frame([make_event()])
        assert w.quit and w.game.step_count == 0
        w.close()


def test_cli_play_runs_the_loop(capsys):
    assert cli.main(["play", "--max-frames", "3", "--block-size", "8"]) == 0
    out = capsys.readouterr().out
    assert "space: do" in out and "Backspace: step back" in out
    assert cli.main(["play", "--agent", "fast-1e9", "--max-frames", "4", "--block-size", "8"]) == 0
    assert cli.main(["play", "--env", "Craftax-Classic-Symbolic-v1", "--agent", "fast-1e9",
                     "--max-frames", "1"]) == 2
    assert "the agent plays 'Craftax-Symbolic-v1'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["play", "--history", "-1"])


def test_cli_play_without_pygame_is_a_clear_error(capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pygame", None)
    assert cli.main(["play", "--max-frames", "1"]) == 2
    assert 'pip install "pycraftax[play]"' in capsys.readouterr().err


def test_bad_game_arguments():
    with pytest.raises(ValueError, match="history must be an int >= 0"):
        play.Game(history=-1)
    with pytest.raises(ValueError, match="block_size"):
        play.Game(block_size=3)
