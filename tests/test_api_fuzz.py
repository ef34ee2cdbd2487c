"""The fuzz suite's cases (fuzz/cases.py) under Hypothesis: every category of hostile input to
the public API (set_state dicts with masked arrays, ndarray subclasses, duck arrays, values
outside the domain, bad dtypes, shapes and keys; actions of every dtype, torch special tensors,
broken duck types; keys, the key setter, params, episode_progress; lifecycle misuse and
threads) is either taken and gives right results, or refused with an exception that names the
argument and what it must be, changing nothing. `nox -s fuzz` runs the same cases at scale in
child processes, where a crash is a finding.

Examples per category per HYPOTHESIS_PROFILE: dev 5, ci 40 (steps 15), thorough 400.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's fuzz/ package
from fuzz import cases  # noqa: E402

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "dev")
EXAMPLES = {"dev": 5, "ci": 40, "thorough": 400}.get(PROFILE, 5)


@pytest.mark.parametrize("category", cases.CATEGORIES)
def test_every_input_is_taken_right_or_refused_clearly(category):
    examples = EXAMPLES if category != "steps" else max(3, EXAMPLES * 3 // 8)

    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(seed=st.integers(0, 2**32 - 1))
    def run(seed):
        outcome, detail = cases.run_case(category, seed)
        assert outcome in ("ok", "refused"), (
            f"{category} seed {seed}: {outcome}: {detail}\n  reproduce: python -m fuzz.run --reproduce {category}:{seed}")

    run()


def test_the_judge_can_fail():
    """The verdicts are not vacuous: an unhelpful exception and a corrupted result are seen as such."""
    with pytest.raises(cases.Verdict, match="unhelpful"):
        cases.judge_refusal(IndexError("index 0 is out of bounds"), ("actions",))
    with pytest.raises(cases.Verdict, match="unhelpful"):
        cases.judge_refusal(TypeError("'<' not supported between instances of 'str' and 'int'"), ("state",))
    with pytest.raises(cases.Verdict, match="refused"):
        cases.judge_refusal(ValueError("actions[0] = 43 is outside [0, 43): actions must be integers in it"),
                            ("actions",))
    assert cases.same_state({"a": [1.0, 2.0]}, {"a": [1.0, 3.0]}) == "a at [1]"


def test_the_runner_records_a_crash_and_a_hang_and_goes_on(tmp_path):
    """fuzz/run.py's child processes: a worker that aborts during an input is a crash at that
    seed, one that stalls past --timeout a hang, and the batch goes on from the next seed."""
    import json

    from fuzz import run

    report = tmp_path / "report.json"
    code = run.main(["--inputs", "6", "--workers", "1", "--categories", "key_setter", "--batch", "10",
                     "--timeout", "2", "--selftest-crash-at", "1", "--selftest-hang-at", "3", "--report", str(report)])
    data = json.loads(report.read_text())
    row = data["table"]["key_setter"]
    assert code == 1 and row["inputs"] == 6 and row["crashes"] == 1 and row["hangs"] == 1
    assert row["ok"] + row["refused"] == 4 and row["unhelpful"] == row["corrupted"] == 0
    assert [(f["outcome"], f["seed"]) for f in data["findings"]] == [("crash", 1), ("hang", 3)]
    assert "--reproduce key_setter:1" in data["findings"][0]["reproduce"]
