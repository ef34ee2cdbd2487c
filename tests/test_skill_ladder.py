"""The skill ladder (pycraftax/train/skill_ladder.py): the first occurrence of each achievement
in a run, from synthetic episode batches and from tiny CPU training runs (seconds), its
persistence over a resume, `pycraftax summary`'s ladder and the plot."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pycraftax import cli
from pycraftax.achievements import CLASSIC_NAMES_BY_INDEX
from pycraftax.train import skill_ladder, summary
from pycraftax.train.config import TrainConfig
from pycraftax.train.trainer import Trainer, set_blas_threads

CLASSIC = "Craftax-Classic-Symbolic-v1"
TINY = dict(num_envs=4, num_steps=8, total_timesteps=4 * 8 * 4, update_epochs=1, num_minibatches=2, width=16,
            hidden=8, checkpoint_every=1, seed=2, env_id=CLASSIC)
NAMES = CLASSIC_NAMES_BY_INDEX
WOOD, TABLE, IRON = NAMES.index("collect_wood"), NAMES.index("place_table"), NAMES.index("collect_iron")

set_blas_threads(1)


def batch(*episodes):
    """bool [episodes, 22] with the given achievement indices set in each episode."""
    ach = np.zeros((len(episodes), len(NAMES)), bool)
    for row, indices in enumerate(episodes):
        ach[row, list(indices)] = True
    return ach


def test_first_occurrences_of_synthetic_batches():
    ladder = skill_ladder.SkillLadder(NAMES)
    # two achievements first seen in the same batch, one of them at step 0; wood's earliest episode wins
    new = ladder.record(batch([WOOD], [WOOD, TABLE], []), [40, 0, 8], seconds=0.5, update=1)
    assert new == {"collect_wood": dict(env_steps=0, seconds=0.5, update=1),
                   "place_table": dict(env_steps=0, seconds=0.5, update=1)}
    assert ladder.record(np.zeros((0, len(NAMES)), bool), [], seconds=0.7, update=2) == {}
    new = ladder.record(batch([WOOD, IRON], [TABLE]), [64, 72], seconds=1.25, update=3)
    assert new == {"collect_iron": dict(env_steps=64, seconds=1.25, update=3)}  # wood, table keep their firsts
    assert list(ladder.firsts) == ["collect_wood", "place_table", "collect_iron"]
    assert "collect_diamond" not in ladder.firsts
    with pytest.raises(ValueError, match="achievements must be bool"):
        ladder.record(np.zeros((2, 5), bool), [1, 2], seconds=1.0, update=4)


def test_ladder_from_lines_keeps_the_earlier_record():
    lines = [dict(first_achievements={"collect_wood": dict(env_steps=32, seconds=0.1, update=1)}),
             dict(earlier_first_achievements={"collect_wood": dict(env_steps=32, seconds=0.1, update=1)},
                  first_achievements={"place_table": dict(env_steps=96, seconds=0.4, update=3)}),
             dict()]
    assert skill_ladder.ladder_from_lines(lines) == {"collect_wood": dict(env_steps=32, seconds=0.1, update=1),
                                                     "place_table": dict(env_steps=96, seconds=0.4, update=3)}


def start_with_episodes_ending(trainer: Trainer, achievements: dict[int, list[int]]) -> None:
    """Every episode ends on the trainer's next step (the time limit), env i holding achievements[i]."""
    state = trainer.env.get_state()
    state["timestep"][:] = 10000 - 1
    for env, indices in achievements.items():
        state["achievements"][env, indices] = True
    trainer.env.set_state(state)


def read_lines(path):
    return [json.loads(ln) for ln in open(path)]


def test_tiny_run_records_firsts_consistent_with_its_episodes(tmp_path):
    trainer = Trainer(TrainConfig(**TINY), str(tmp_path))
    start_with_episodes_ending(trainer, {0: [WOOD], 2: [WOOD, TABLE]})
    lines = trainer.run(progress=False)
    assert lines[0]["episodes"] == 4  # the four ended on the run's first step: 4 env steps
    firsts = trainer.ladder.firsts
    assert firsts["collect_wood"]["env_steps"] == firsts["place_table"]["env_steps"] == 4
    assert firsts["collect_wood"]["update"] == 1
    assert 0 < firsts["collect_wood"]["seconds"] <= trainer.train_seconds
    # every first is an achievement some episode of its update had, at a step within the run
    for name, first in firsts.items():
        line = lines[first["update"] - 1]
        assert line["first_achievements"][name] == first
        assert line["achievements"][name] > 0
        assert 0 < first["env_steps"] <= trainer.env_steps
    seen = {n for m in lines if m.get("achievements") for n, r in m["achievements"].items() if r > 0}
    assert set(firsts) <= seen and {"collect_wood", "place_table"} <= set(firsts)
    assert "collect_diamond" not in firsts  # never seen: absent
    saved = json.load(open(tmp_path / skill_ladder.LADDER_FILE))
    assert saved["env_id"] == CLASSIC and saved["achievements"] == 22 and saved["firsts"] == firsts
    assert (tmp_path / "learning_curve.png").stat().st_size > 0


def test_resume_keeps_earlier_firsts(tmp_path):
    cfg = TrainConfig(**TINY)
    first_part = Trainer(cfg, str(tmp_path))
    start_with_episodes_ending(first_part, {1: [WOOD]})
    first_part.run(max_updates=2, progress=False)
    earlier = dict(first_part.ladder.firsts)
    assert "collect_wood" in earlier
    resumed = Trainer.resume(str(tmp_path / "checkpoint.npz"))
    assert resumed.ladder.firsts == earlier and resumed.train_seconds == pytest.approx(first_part.train_seconds)
    start_with_episodes_ending(resumed, {3: [IRON]})
    resumed.run(progress=False)
    assert resumed.ladder.firsts["collect_wood"] == earlier["collect_wood"]
    assert resumed.ladder.firsts["collect_iron"]["update"] == 3
    assert resumed.ladder.firsts["collect_iron"]["seconds"] > earlier["collect_wood"]["seconds"]
    saved = json.load(open(tmp_path / skill_ladder.LADDER_FILE))["firsts"]
    assert saved == resumed.ladder.firsts
    lines = read_lines(tmp_path / "metrics.jsonl")
    assert lines[2]["earlier_first_achievements"] == earlier  # the second part's file holds the ladder it resumed
    assert skill_ladder.ladder_from_lines(lines[2:]) == skill_ladder.ladder_from_lines(lines) == saved


def test_summary_prints_and_plots_the_ladder(tmp_path, capsys):
    trainer = Trainer(TrainConfig(**TINY), str(tmp_path / "run"))
    start_with_episodes_ending(trainer, {0: [WOOD, TABLE], 1: [WOOD]})
    trainer.run(progress=False)
    png = tmp_path / "curve.png"
    assert cli.main(["summary", str(tmp_path / "run"), "--png", str(png)]) == 0
    text = capsys.readouterr().out
    assert "skill ladder (first occurrence of" in text and "of 22 achievements" in text
    ladder = text[text.index("skill ladder"):].splitlines()[1:]
    assert [row.split()[0] for row in ladder[:2]] == ["collect_wood", "place_table"]  # one step: in table order
    assert ladder[0].split()[1] == "4"
    assert png.stat().st_size > 0
    s = summary.summarize(summary.load(tmp_path / "run" / "metrics.jsonl"))
    assert list(s["skill_ladder"].items()) == list(skill_ladder.ordered(trainer.ladder.firsts).items())
