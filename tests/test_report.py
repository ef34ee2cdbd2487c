"""bench/report.py: every figure comes from a result file, and a ratio against upstream is
printed only when upstream was measured in the same device session."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _report_module():
    spec = importlib.util.spec_from_file_location("bench_report", ROOT / "bench" / "report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data))


def _sweep(time_utc: str) -> dict:
    return {"time_utc": time_utc, "device": "GPU X", "machine": {"commit": "abc"},
            "results": [{"num_envs": 4096, "fresh_env_steps_per_s": 3.0e6, "steady_env_steps_per_s": 2.0e6,
                         "allocated_bytes_per_env": 1000}]}


def _upstream(time_utc: str) -> dict:
    return {"time_utc": time_utc, "results": [
        {"mode": "optimistic", "num_envs": 16384, "steps_per_s": 5.0e5, "first_call_seconds": 40.0, "device": "gpu"}]}


def test_ratio_only_with_upstream_from_the_same_session(tmp_path):
    report = _report_module()
    _write(tmp_path / "cuda-step-a.json", _sweep("2026-01-01T10:00:00Z"))
    _write(tmp_path / "upstream-gpu-a.json", _upstream("2026-01-01T10:10:00Z"))
    text = report.build_report(tmp_path)
    assert "| 4,096 | 3.00 M | 2.00 M | 4.0x | 1,000 |" in text
    _write(tmp_path / "upstream-gpu-a.json", _upstream("2026-01-01T12:00:00Z"))
    text = report.build_report(tmp_path)
    assert "4.0x" not in text and "| 4,096 | 3.00 M | 2.00 M | 1,000 |" in text


def test_unknown_files_are_listed_not_read(tmp_path):
    report = _report_module()
    _write(tmp_path / "mystery.json", {"x": 1})
    _write(tmp_path / "worldgen-a.json", {"c": [], "upstream": [], "machine": {}})
    text = report.build_report(tmp_path)
    assert "- mystery.json" in text and "World generation (worldgen-a.json" in text
