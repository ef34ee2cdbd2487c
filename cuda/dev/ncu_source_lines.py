"""cuda/dev/ncu_source_lines.py: where a kernel's stalls are, by source file and line.

    ncu --section SourceCounters --section WarpStateStats --kernel-name regex:K --launch-count 1 \\
        -o prof python3 run.py                       # a -lineinfo build of the library
    ncu -i prof.ncu-rep --page source --csv --print-source cuda,sass > src.csv
    python cuda/dev/ncu_source_lines.py src.csv [--top 40]    # .csv or .csv.gz

Reads the export's per-line rows (a "File Path" row opens each file, a "Line No" row names the
columns, then one row per source line with the metrics summed over its SASS, followed by the
SASS rows themselves, which have no line number) and prints each file's share of the warp
stall samples, then the lines with the most samples: share of samples, share of executed
instructions, file:line. The source text is printed when the export carries it (ncu could read
the files where it ran).
"""

from __future__ import annotations

import argparse
import collections
import csv
import gzip
from pathlib import Path

SAMPLES = "Warp Stall Sampling (All Samples)"
INSTRUCTIONS = "Instructions Executed"


def _number(text: str) -> float:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def source_lines(path: Path) -> list[tuple[str, int, str, float, float]]:
    """(file, line, source, stall samples, instructions executed) for every source line."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", newline="") as f:
        rows = list(csv.reader(f))
    out, file_name, columns = [], None, None
    for row in rows:
        if not row:
            continue
        if row[0] == "File Path":
            file_name, columns = Path(row[1]).name, None
        elif row[0] == "Line No":
            columns = {name: i for i, name in enumerate(row)}
        elif columns is not None and file_name is not None and row[0].strip().isdigit():
            def metric(name: str) -> float:
                return _number(row[columns[name]]) if name in columns and columns[name] < len(row) else 0.0
            out.append((file_name, int(row[0]), row[1], metric(SAMPLES), metric(INSTRUCTIONS)))
    return out


def report(lines: list[tuple[str, int, str, float, float]], top: int) -> str:
    samples = sum(x[3] for x in lines) or 1.0
    instructions = sum(x[4] for x in lines) or 1.0
    per_file = collections.Counter()
    for file_name, _, _, s, _ in lines:
        per_file[file_name] += s
    text = [f"{samples:,.0f} stall samples, {instructions:,.0f} instructions executed"]
    text += [f"  {100 * s / samples:5.1f}% {name}" for name, s in per_file.most_common()]
    for file_name, line, source, s, i in sorted(lines, key=lambda x: -x[3])[:top]:
        shown = "" if source.startswith("<") else "  " + source.strip()[:100]
        text.append(f"{100 * s / samples:6.2f}% {100 * i / instructions:6.2f}%i {file_name}:{line}{shown}")
    return "\n".join(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("export", type=Path)
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    print(report(source_lines(args.export), args.top))


if __name__ == "__main__":
    main()
