"""Benchmark report: tables (and a plot) from the raw JSON in bench/results/.

    python bench/report.py [--results bench/results] [--out bench/REPORT.md]

Every number in the report is read from a result file, which is named beside it, with the
machine and commit recorded there: the report holds no figure of its own. Kinds read:
worldgen-*.json and step-*.json (C reference vs upstream on one CPU, bench/worldgen.py and
bench/step.py), cuda-step*.json (CUDA env sweeps, cuda/bench_step.py), upstream-gpu*.json
(upstream craftax on the GPU, bench/upstream_jax.py) and trainer-*.json (training
throughput, cuda/bench_trainer.py). Unknown files are listed, not guessed at.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _fmt(value, digits: int = 0) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and abs(value) >= 1e6:
        return f"{value / 1e6:,.2f} M"
    if isinstance(value, float) and abs(value) >= 1e4:
        return f"{value / 1e3:,.0f} k"
    return f"{value:,.{digits}f}" if isinstance(value, float) else f"{value:,}"


def _machine(d: dict) -> str:
    m = d.get("machine", {})
    where = d.get("device") or f"{m.get('cpu', '?')} ({m.get('cores', '?')} cores)"
    return f"{where}, commit {str(m.get('commit', '?'))[:10]}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" ---: " for _ in header) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def worldgen_section(path: Path, d: dict) -> list[str]:
    rows = [[f"C reference, {r['threads']} thread(s)", _fmt(r["worlds_per_s"]), _fmt(r["worlds_per_s_per_core"])]
            for r in d.get("c", [])]
    rows += [[f"upstream reset_env (jit, vmap {r['num_envs']}), {r['cores']} core(s)", _fmt(r["worlds_per_s"]),
              _fmt(r["worlds_per_s_per_core"])] for r in d.get("upstream", [])]
    out = [f"### World generation ({path.name}; {_machine(d)})", ""]
    out += _table(["", "worlds/s", "worlds/s per core"], rows)
    if "ratio_per_core" in d:
        out += ["", f"Per-core ratio C / upstream: **{d['ratio_per_core']:.1f}x**."]
    return out + [""]


def step_section(path: Path, d: dict) -> list[str]:
    rows = [[f"C reference, {r['threads']} thread(s), {r['num_envs']} envs", _fmt(r["steps_per_s"]),
             _fmt(r["steps_per_s_per_core"])] for r in d.get("c", [])]
    for r in d.get("upstream", []):
        what = "env.step (official auto-reset)" if r.get("auto_reset") else "step_env (no reset)"
        rows.append([f"upstream {what}, {r['cores']} core(s), {r['num_envs']} envs", _fmt(r["steps_per_s"]),
                     _fmt(r["steps_per_s_per_core"])])
    out = [f"### Env step on the CPU ({path.name}; {_machine(d)})", ""]
    out += _table(["", "steps/s", "steps/s per core"], rows)
    if "ratio_per_core_vs_official_step" in d:
        out += ["", f"Per-core ratio C / upstream official env.step: **{d['ratio_per_core_vs_official_step']:.0f}x**"
                f" (vs step_env without resets: {d.get('ratio_per_core_vs_step_env', float('nan')):.1f}x)."]
    return out + [""]


def _cuda_rows(d: dict) -> list[dict]:
    if "results" in d:
        return d["results"]
    rows = []
    for run in d.get("runs", []):
        rows += run.get("results", [])
    return rows


def _utc_seconds(stamp: str | None) -> float | None:
    import calendar
    import time

    try:
        return calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))
    except (TypeError, ValueError):
        return None


def _same_run_upstream(d: dict, upstream_files: list[Path]) -> tuple[Path, dict] | None:
    """The upstream-on-GPU measurement made in the same device call (within 30 minutes) as
    the CUDA sweep `d`, if any: only then is a ratio side by side."""
    when = _utc_seconds(d.get("time_utc"))
    if when is None:
        return None
    best = None  # the nearest in time, when several calls ran within the window
    for path in upstream_files:
        u = json.loads(path.read_text())
        other = _utc_seconds(u.get("time_utc"))
        if other is not None and abs(other - when) <= 1800 and (best is None or abs(other - when) < best[0]):
            best = (abs(other - when), path, u)
    return best[1:] if best else None


UPSTREAM_MODES = (("auto", "official env.step"), ("optimistic", "optimistic reset"),
                  ("no_reset", "step_env, no resets"))


def _levels_note(d: dict) -> list[str]:
    """Which levels a reset generated (v31: level 0, the rest at the first descent to each)."""
    if d.get("settings", {}).get("PYCRAFTAX_CUDA_EAGER_FLOORS", "0") not in ("", "0"):
        return ["Eager levels (PYCRAFTAX_CUDA_EAGER_FLOORS=1): every reset generated all nine.", ""]
    generated = [r["levels_generated_per_env_at_end"] for r in _cuda_rows(d) if "levels_generated_per_env_at_end" in r]
    if not generated:
        return []
    return [f"Lazy levels: a reset generated level 0, a descent the level it reached; at the end the envs had "
            f"generated {min(generated):.4f}-{max(generated):.4f} levels each on average (random play seldom "
            "descends).", ""]


def cuda_section(path: Path, d: dict, upstream_files: list[Path] = ()) -> list[str]:
    paired = _same_run_upstream(d, list(upstream_files))
    best = {}
    if paired:
        for r in paired[1].get("results", []):
            best[r["mode"]] = max(best.get(r["mode"], 0.0), r["steps_per_s"])
    modes = [(m, label) for m, label in UPSTREAM_MODES if m in best]
    rows = []
    for r in _cuda_rows(d):
        steady = r.get("steady_env_steps_per_s", r.get("last_quarter_env_steps_per_s"))
        ratios = [f"{steady / best[m]:,.1f}x" if steady else "-" for m, _ in modes]
        ends = r.get("steady_episode_ends_per_env_step")
        rows.append([_fmt(r.get("num_envs")),
                     _fmt(r.get("fresh_env_steps_per_s", r.get("env_steps_per_s"))),
                     _fmt(steady), f"{100 * ends:.2f}% ({r.get('steady_steps', '?')})" if ends is not None else "-",
                     *ratios, _fmt(r.get("allocated_bytes_per_env", r.get("buffers_bytes_per_env")))])
    out = [f"### CUDA env ({path.name}; {_machine(d)})", ""]
    if d.get("note"):
        out += [d["note"], ""]
    out += _levels_note(d)
    if paired:
        measured = ", ".join(f"{label} {_fmt(best[m])} steps/s" for m, label in modes)
        out += [f"Upstream on the same GPU in the same session ({paired[0].name}): {measured}; "
                "the ratios are our steady rate over each.", ""]
    # World generation scales with the episodes that end, and early windows end fewer
    # (random play settles near 0.4% a step): the rate says how comparable two rows are.
    out += _table(["envs", "env-steps/s fresh", "env-steps/s steady", "envs ending a step (steady steps)",
                   *[f"ratio vs upstream {label}"
                                                                        for _, label in modes],
                   "bytes per env"], rows)
    return out + [""]


def upstream_gpu_section(path: Path, d: dict) -> list[str]:
    rows = [[r["mode"], _fmt(r["num_envs"]), _fmt(r["steps_per_s"]), f"{r['first_call_seconds']:.0f} s",
             r.get("device", "?")] for r in d.get("results", [])]
    out = [f"### Upstream craftax on the GPU ({path.name})", ""] + ([d["note"], ""] if d.get("note") else [])
    return out + _table(["mode", "envs", "steps/s", "first call", "device"], rows) + [""]


def trainer_section(path: Path, d: dict) -> list[str]:
    if "results" not in d:  # a before/after file: one section per measured part
        out = []
        for part, sub in d.items():
            if isinstance(sub, dict) and "results" in sub:
                out += trainer_section(path.with_name(f"{path.name} [{part}]"), sub)
        return out
    rows = []
    for r in d["results"]:
        shape = f"{_fmt(r.get('num_envs'))} x {r.get('num_steps', '?')}, {r.get('update_epochs', '?')} ep x " \
                f"{r.get('num_minibatches', '?')} mb, width {r.get('width', '?')}"
        rows.append([str(r.get("recipe", "?")), shape, f"{r.get('precision', '?')} / {r.get('encoder', '?')}",
                     r.get("resets", "auto"),
                     _fmt(r.get("train_steps_per_s")), _fmt(r.get("policy_only_steps_per_s")),
                     " / ".join(f"{r[k]:.3f}" if isinstance(r.get(k), float) else "-"
                                for k in ("env_s", "policy_s", "update_s"))])
    where = f"{d.get('gpu', '?')}, commit {str(d.get('commit', '?'))[:10]}"
    settings = ", ".join(f"{k}={v}" for k, v in d.get("settings", {}).items())
    out = [f"### Training throughput ({path.name}; {where}{'; ' + settings if settings else ''})", "",
           "Training steps/s with the env, and policy-only (the trainer's rate were the env free); "
           "seconds per iteration in env / policy forward / update.", ""]
    return out + _table(["recipe", "shape", "precision / encoder", "resets", "steps/s", "policy-only steps/s",
                         "env / policy / update s"], rows) + [""]


def training_run_section(path: Path, d: dict) -> list[str]:
    """A learning run summarised by bench/train_summary.py."""
    curve = ", ".join(f"{_fmt(c['env_steps'])}: {c['episode_return']:.1f}" for c in d.get("curve", []))
    top = list(d.get("achievement_success_rates", {}).items())
    rows = [[d.get("run", path.stem), d.get("recipe", "?"), d.get("resets", "?"), _fmt(d["env_steps"]),
             f"{d['final_return']:.2f} ({d['final_percent_of_max']:.2f}%)", _fmt(d.get("final_episodes")),
             f"{d['training_seconds']:.0f} s", _fmt(d.get("mean_steps_per_s"))]]
    commit = str(d.get("commit", "?"))
    commit = commit if " " in commit else commit[:10]  # a run in parts names each part's commit
    out = [f"### Training run ({path.name}; {d.get('gpu', '?')}, commit {commit})", "",
           "Score: mean return of the episodes that ended in the last 1% of updates (% of the 226 maximum, as "
           "the Craftax paper reports); training seconds = the iterations' own time.", ""]
    out += _table(["run", "recipe", "resets", "env steps", "score", "episodes", "training", "steps/s"], rows)
    out += ["", f"Curve (env steps: return): {curve}.", ""]
    if top:
        out += ["Success rates (last 50 updates): " + ", ".join(f"{n} {100 * v:.1f}%" for n, v in top if v > 0) + ".",
                ""]
    return out


SECTIONS = (("worldgen-", worldgen_section), ("step-", step_section), ("cuda-step", cuda_section),
            ("upstream-gpu", upstream_gpu_section), ("trainer-", trainer_section), ("train-", training_run_section))


def recorded_time(path: Path) -> str:
    """The run's UTC time as the file records it (ISO strings sort in time order); "" if none.
    File names alone misorder versions (cuda-step-v13 sorts before cuda-step-v9)."""
    try:
        d = json.loads(path.read_text())
    except ValueError:
        return ""
    stamp = d.get("time_utc") or d.get("date") if isinstance(d, dict) else None
    return stamp if isinstance(stamp, str) else ""


def build_report(results: Path) -> str:
    lines = ["# pycraftax benchmark report", "",
             f"Generated by `bench/report.py` from {results.relative_to(ROOT) if results.is_relative_to(ROOT) else results}"
             "; files of each kind newest first (by the run time they record, else by name).", ""]
    unknown = []
    files = sorted(results.glob("*.json"), key=lambda p: (recorded_time(p), p.name), reverse=True)
    upstream_files = [p for p in files if p.name.startswith("upstream-gpu")]
    for prefix, section in SECTIONS:
        chosen = [p for p in files if p.name.startswith(prefix)]
        if not chosen:
            continue
        for path in chosen:
            try:
                d = json.loads(path.read_text())
                lines += section(path, d, upstream_files) if section is cuda_section else section(path, d)
            except (KeyError, TypeError, ValueError) as exc:
                lines += [f"### {path.name}", "", f"(not readable as {prefix}*: {exc!r})", ""]
    for path in files:
        if not any(path.name.startswith(prefix) for prefix, _ in SECTIONS):
            unknown.append(path.name)
    if unknown:
        lines += ["### Other result files", ""] + [f"- {name}" for name in unknown] + [""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "REPORT.md")
    args = parser.parse_args()
    if not args.results.is_dir():
        parser.error(f"--results {args.results} is not a directory")
    args.out.write_text(build_report(args.results.resolve()))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
