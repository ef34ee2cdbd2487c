"""cuda/dev/ncu_source_lines.py: per-line sums come from the line rows only (not the SASS rows
under them), files are told apart, and shares are of the whole kernel."""

from __future__ import annotations

import gzip
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

HEADER = '"Line No","Source","Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed"'
EXPORT = "\n".join([
    '"File Path","/build/reference_c/include/craftax/step_world.h"',
    '"Function Name","void k(int)"',
    HEADER,
    '"10","a = b;","-","-","30","100"',
    '"","","0x10","  LDG R1, [R2]","30","100"',
    '"11","c = d;","-","-","10","300"',
    '"File Path","/build/reference_c/include/craftax/rng.h"',
    '"Function Name","void k(int)"',
    HEADER,
    '"23","<Unable to open source file>","-","-","60","600"',
    '"","","0x20","  SHF.L R3, R3, 0x1","60","600"',
]) + "\n"


def _module():
    spec = importlib.util.spec_from_file_location("ncu_source_lines", ROOT / "cuda" / "dev" / "ncu_source_lines.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_line_rows_summed_by_file_and_line(tmp_path):
    tool = _module()
    path = tmp_path / "src.csv.gz"
    with gzip.open(path, "wt") as f:
        f.write(EXPORT)
    lines = tool.source_lines(path)
    assert [(f, n, s, i) for f, n, _, s, i in lines] == [
        ("step_world.h", 10, 30.0, 100.0), ("step_world.h", 11, 10.0, 300.0), ("rng.h", 23, 60.0, 600.0)]
    text = tool.report(lines, top=2)
    assert "100 stall samples, 1,000 instructions executed" in text
    assert "   60.0% rng.h" in text and "   40.0% step_world.h" in text
    assert " 60.00%  60.00%i rng.h:23" in text and "step_world.h:10  a = b;" in text
    assert "step_world.h:11" not in text  # beyond --top
