"""pycraftax/_leaf_table.py (the leaf table as data, which the CUDA backend reads without the C
extension) equals the C extension's craftax_leaf table; regenerate it with
`python reference_c/tools/write_leaf_table.py` when the state layout changes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from pycraftax import _leaf_table, _state
from pycraftax._native import lib

TOOL = Path(__file__).resolve().parent.parent / "reference_c" / "tools" / "write_leaf_table.py"


def load_tool():
    spec = importlib.util.spec_from_file_location("write_leaf_table", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_checked_in_table_equals_the_c_extension():
    tool = load_tool()
    assert list(_leaf_table.LEAF_ROWS) == tool.c_leaf_rows(), "regenerate: python reference_c/tools/write_leaf_table.py"
    assert _leaf_table.STATE_SIZE == int(lib.craftax_state_size())
    assert _leaf_table.FLOORS_PENDING_OFFSET == int(lib.craftax_state_floors_pending_offset())
    assert TOOL.is_file() and (Path(_leaf_table.__file__).read_text() == tool.table_text())


def test_state_module_reads_the_table():
    assert len(_state.LEAVES) == len(_leaf_table.LEAF_ROWS) == int(lib.craftax_num_leaves())
    assert _state.STATE_SIZE == int(lib.craftax_state_size())
