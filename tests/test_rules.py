"""Rules fingerprints (pycraftax/rules.py, pycraftax/_rules_hash.py): what a build records about
the game rules it compiled, and what changes when they are not a released game's: gymnasium ids
and env specs become variant ids, train/eval/summary say "modified rules <fingerprint>", the
anchors are the variant's own, and a CUDA library of other rules is refused."""

from __future__ import annotations

import json
import shutil

import gymnasium
import numpy as np
import pytest
from gymnasium.envs import registration

import pycraftax
from pycraftax import _rules_hash, anchors, rules
from pycraftax.params import CLASSIC_ENV_ID, CRAFTAX_ENV_ID

OTHER = "0123456789ab"  # a fingerprint of no released game


def test_build_runs_released_or_pinned_rules():
    """CI's guard against an accidental rules edit: the built rules are a released game's, or a
    variant whose anchors were pinned (`pycraftax conformance --pin-anchors`)."""
    fp = pycraftax.rules_fingerprint()
    variants = json.loads(anchors.VARIANT_FILE.read_text()) if anchors.VARIANT_FILE.exists() else {}
    assert rules.released_name(fp) or fp in variants, (
        f"the rules headers were edited: fingerprint {fp}, released {rules.RELEASED_RULES}. If the edit keeps the "
        f"game craftax 1.6.1 (the conformance suite passes), set RELEASED_RULES['craftax-1.6.1'] = '{fp}' in "
        "pycraftax/rules.py; if it changes the game, follow docs/PORTING.md (the finder, then --pin-anchors)")


def test_built_fingerprint_is_the_source_trees():
    """The build compiled this tree's headers: the value it carries is _rules_hash's of the tree."""
    assert rules.source_fingerprint() == _rules_hash.fingerprint() == pycraftax.rules_fingerprint()


def test_parity_test_extension_has_the_same_rules():
    from pycraftax.porting import c_rules

    assert c_rules.unavailable_reason() is None
    assert c_rules.fingerprint() == pycraftax.rules_fingerprint()


def test_fingerprint_covers_every_rules_header_and_switch(tmp_path):
    include = tmp_path / "reference_c" / "include"
    shutil.copytree(_rules_hash.ROOT / "reference_c" / "include", include)
    base = _rules_hash.fingerprint(tmp_path)
    assert base == _rules_hash.fingerprint()
    assert len(base) == 12 and int(base, 16) >= 0
    assert _rules_hash.fingerprint(tmp_path, ("PYCRAFTAX_TEST_PERTURB",)) != base
    api = include / "craftax_api.h"  # the C API is not rules
    api.write_text(api.read_text() + "\n/* an API comment */\n")
    assert _rules_hash.fingerprint(tmp_path) == base
    for header in (include / "craftax" / "game_constants.h", include / "craftax_classic" / "game_logic.h"):
        text = header.read_text()
        header.write_text(text.replace("\n", "\r\n"))  # a CRLF checkout hashes the same
        assert _rules_hash.fingerprint(tmp_path) == base
        header.write_text(text + "\n/* a comment is an edit too */\n")
        assert _rules_hash.fingerprint(tmp_path) != base
        header.write_text(text)
    (include / "craftax" / "new_rule.h").write_text("#define X 1\n")
    assert _rules_hash.fingerprint(tmp_path) != base


def test_cuda_library_of_other_rules_is_refused():
    rules.check_cuda_agrees(pycraftax.rules_fingerprint(), "libcraftax_cuda.so")
    with pytest.raises(RuntimeError, match=f"other rules \\(modified rules {OTHER}\\) than the C extension"):
        rules.check_cuda_agrees(OTHER, "libcraftax_cuda.so")


def test_released_rules_describe_themselves():
    fp = rules.RELEASED_RULES["craftax-1.6.1"]
    assert rules.describe(fp) == "craftax-1.6.1 rules"
    assert rules.modified_note(fp) is None
    assert rules.variant_id(CRAFTAX_ENV_ID, fp) == CRAFTAX_ENV_ID


@pytest.fixture
def modified(monkeypatch):
    """This build as one of modified rules, with a registry of its own."""
    monkeypatch.setattr(rules, "rules_fingerprint", lambda: OTHER)
    monkeypatch.setattr(registration, "registry", dict(registration.registry))
    return OTHER


def test_modified_rules_have_variant_ids(modified):
    variant = f"{CRAFTAX_ENV_ID}-rules-{OTHER}"
    assert rules.describe() == rules.modified_note() == f"modified rules {OTHER}"
    assert rules.variant_id(CRAFTAX_ENV_ID) == variant
    assert rules.official_id(variant) == CRAFTAX_ENV_ID
    with pytest.raises(ValueError, match=f"names rules ffffffffffff, but this build runs modified rules {OTHER}"):
        rules.official_id(f"{CRAFTAX_ENV_ID}-rules-ffffffffffff")
    env = pycraftax.make(variant, num_envs=2, backend="c")
    assert env.env_id == CRAFTAX_ENV_ID and env.spec_id == variant
    assert repr(env).startswith(f"CraftaxEnv({variant!r}")
    env.close()


def test_modified_rules_register_only_variant_gymnasium_ids(modified):
    from pycraftax import gymnasium_env

    ids = gymnasium_env.register_envs()
    assert ids == [f"pycraftax/{e}-rules-{OTHER}" for e in pycraftax.list_envs()]
    env = gymnasium.make(ids[0])
    assert env.spec.id == ids[0]
    env.reset(seed=0)
    env.close()
    for official, variant in zip(pycraftax.list_envs(), ids):
        with pytest.raises(RuntimeError, match=f"modified rules {OTHER}.*{variant}"):
            gymnasium.make(f"pycraftax/{official}")
        with pytest.raises(RuntimeError, match=variant):
            gymnasium.make_vec(f"pycraftax/{official}", num_envs=2, vectorization_mode="vector_entry_point")


def test_train_eval_and_summary_say_modified_rules(modified, capsys):
    from pycraftax.train import cli as train_cli
    from pycraftax.train import summary
    from pycraftax.train.config import TrainConfig
    from pycraftax.train.trainer import Trainer

    trainer = Trainer(TrainConfig(num_envs=4, num_steps=8, total_timesteps=32, num_minibatches=2, update_epochs=1,
                                  width=16, hidden=8))
    line = trainer.step()
    assert line["rules"] == OTHER  # every metrics line records the rules trained on
    train_cli._print_rules_note(CRAFTAX_ENV_ID)
    assert capsys.readouterr().out == (f"modified rules {OTHER}: not the released game; results are "
                                       f"{CRAFTAX_ENV_ID}-rules-{OTHER}'s\n")
    s = summary.summarize([line])
    assert s["rules"] == [OTHER]
    assert summary.report(s).splitlines()[0] == f"modified rules {OTHER}: not the released game's rules"
    released = dict(line, rules=rules.RELEASED_RULES["craftax-1.6.1"])
    assert "modified" not in summary.report(summary.summarize([released]))


def test_anchors_are_the_rules_own(modified, monkeypatch, tmp_path):
    released = rules.RELEASED_RULES["craftax-1.6.1"]
    assert anchors.pinned(CLASSIC_ENV_ID, released) == anchors.RELEASED_ANCHORS[CLASSIC_ENV_ID]
    monkeypatch.setattr(anchors, "VARIANT_FILE", tmp_path / "variant_anchors.json")
    with pytest.raises(LookupError, match=f"modified rules {OTHER} have no pinned anchors.*--pin-anchors"):
        anchors.pinned()
    # the pinned values are this build's hashes; a stand-in keeps the round trip fast
    monkeypatch.setattr(anchors, "trajectory_hash", lambda n, t, s, env_id: f"{env_id}/{n}/{t}/{s}")
    assert anchors.pin_variant(OTHER, "craftax 1.6.1 at /somewhere") == tmp_path / "variant_anchors.json"
    for env_id in (CRAFTAX_ENV_ID, CLASSIC_ENV_ID):
        assert anchors.pinned(env_id) == {case: f"{env_id}/{case[0]}/{case[1]}/{case[2]}"
                                          for case in anchors.RELEASED_ANCHORS[env_id]}
    assert json.loads((tmp_path / "variant_anchors.json").read_text())[OTHER]["verified_against"] == \
        "craftax 1.6.1 at /somewhere"
    with pytest.raises(ValueError, match="not this build's rules"):
        anchors.pin_variant("ffffffffffff", "x")


def test_action_stream_is_the_protocols_for_either_game():
    """Classic's anchors were pinned from craftax_test_uniform's stream times 17: the shared
    stream with 17 actions is that stream."""
    from pycraftax._test_hooks import ffi, lib

    key = np.array([anchors.ACTION_KEY_WORD, 5], dtype=np.uint32)
    u = np.empty(7 * 30, dtype=np.float32)
    lib.craftax_test_uniform(ffi.cast("uint32_t *", ffi.from_buffer(key)), u.size, ffi.cast("float *",
                                                                                           ffi.from_buffer(u)))
    expected = (u * np.float32(17)).astype(np.int32).reshape(30, 7)
    np.testing.assert_array_equal(anchors.action_stream(7, 30, 5, 17), expected)


@pytest.mark.parametrize("env_id", ["Craftax-Symbolic-v1", "Craftax-Classic-Symbolic-v1"])
def test_c_rules_step_a_subsystem_whatever_cpu_variant_is_loaded(env_id):
    """The finder's C twins run in the parity-test extension, a cffi module of its own: their
    params struct must be made by that module's ffi, not taken from the env (whose struct belongs
    to the loaded CPU variant: on an x86-64-v3 CPU cffi refused it, and the finder crashed)."""
    from pycraftax.porting import c_rules

    reason = c_rules.unavailable_reason()
    if reason:
        pytest.skip(reason)
    env = pycraftax.make(env_id, num_envs=2, backend="c", seed=0)
    env.reset(seed=0)
    rules = c_rules.Rules(env_id, env.params)
    state = env.get_state()
    after = rules.apply("move_player", state, np.zeros((2, 2), np.uint32), np.full(2, 1, np.int32))
    assert set(after) == set(state)
