"""Constants of the C headers against the installed craftax 1.6.1, value for value.

A tiny C program includes reference_c/include/craftax/constants.h and prints, as JSON,
the bit patterns of TORCH_LIGHT_MAP, every field of the six SmoothGenConfigs and the three
DungeonConfigs, and the block ids; the test holds them against upstream's constants.py
and world_gen_configs.py (float fields as the float32 upstream's tree_map stacks them).

    HYPOTHESIS_PROFILE=ci /work/venv/bin/python -m pytest conformance/test_constants.py
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import require_jax

upstream = require_jax()

from craftax.craftax import constants as up_constants  # noqa: E402
from craftax.craftax.world_gen import world_gen_configs as up_configs  # noqa: E402

pytestmark = pytest.mark.jax

INCLUDE = Path(__file__).resolve().parent.parent / "reference_c" / "include"

SMOOTH_FIELDS = [  # (C field, upstream field, kind)
    ("default_block", "default_block", "int"),
    ("sea_block", "sea_block", "int"),
    ("coast_block", "coast_block", "int"),
    ("mountain_block", "mountain_block", "int"),
    ("path_block", "path_block", "int"),
    ("inner_mountain_block", "inner_mountain_block", "int"),
    ("ore_requirement_blocks", "ore_requirement_blocks", "int5"),
    ("ores", "ores", "int5"),
    ("ore_chances", "ore_chances", "float5"),
    ("tree_requirement_block", "tree_requirement_block", "int"),
    ("tree", "tree", "int"),
    ("lava", "lava", "int"),
    ("player_spawn", "player_spawn", "int"),
    ("valid_ladder", "valid_ladder", "int"),
    ("ladder_up", "ladder_up", "int"),
    ("ladder_down", "ladder_down", "int"),
    ("water_strength", "player_proximity_map_water_strength", "int"),
    ("water_max", "player_proximity_map_water_max", "float"),
    ("mountain_strength", "player_proximity_map_mountain_strength", "int"),
    ("mountain_max", "player_proximity_map_mountain_max", "float"),
    ("default_light", "default_light", "float"),
    ("water_threshold", "water_threshold", "float"),
    ("sand_threshold", "sand_threshold", "float"),
    ("tree_threshold_uniform", "tree_threshold_uniform", "float"),
    ("tree_threshold_perlin", "tree_threshold_perlin", "float"),
]
DUNGEON_FIELDS = ["special_block", "fountain_block", "rare_path_replacement_block"]


def _c_program() -> str:
    lines = [
        "#include <stdio.h>",
        "#include <string.h>",
        "#include <stdint.h>",
        '#include "craftax/constants.h"',
        "static uint32_t bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }",
        "int main(void) {",
        '  printf("{\\"torch\\": [");',
        '  for (int i = 0; i < 81; i++) printf("%s%u", i ? "," : "", bits(CRAFTAX_TORCH_LIGHT_MAP[i / 9][i % 9]));',
        '  printf("], \\"smooth\\": [");',
        "  for (int c = 0; c < 6; c++) {",
        "    const CraftaxSmoothGenConfig *g = &CRAFTAX_SMOOTHGEN_CONFIGS[c];",
        '    printf("%s{", c ? "," : "");',
    ]
    for i, (field, _, kind) in enumerate(SMOOTH_FIELDS):
        sep = "," if i else ""
        if kind == "int":
            lines.append(f'    printf("{sep}\\"{field}\\": %d", (int)g->{field});')
        elif kind == "float":
            lines.append(f'    printf("{sep}\\"{field}\\": %u", bits(g->{field}));')
        elif kind == "int5":
            lines.append(
                f'    printf("{sep}\\"{field}\\": [%d,%d,%d,%d,%d]", (int)g->{field}[0], (int)g->{field}[1], '
                f"(int)g->{field}[2], (int)g->{field}[3], (int)g->{field}[4]);"
            )
        else:
            lines.append(
                f'    printf("{sep}\\"{field}\\": [%u,%u,%u,%u,%u]", bits(g->{field}[0]), bits(g->{field}[1]), '
                f"bits(g->{field}[2]), bits(g->{field}[3]), bits(g->{field}[4]));"
            )
    lines += [
        '    printf("}");',
        "  }",
        '  printf("], \\"dungeon\\": [");',
        "  for (int c = 0; c < 3; c++) {",
        "    const CraftaxDungeonConfig *d = &CRAFTAX_DUNGEON_CONFIGS[c];",
        '    printf("%s[%d,%d,%d]", c ? "," : "", d->special_block, d->fountain_block, d->rare_path_replacement_block);',
        "  }",
        '  printf("], \\"levels\\": [[%d,%d,%d,%d,%d,%d],[%d,%d,%d]]", CRAFTAX_SMOOTH_LEVEL[0], CRAFTAX_SMOOTH_LEVEL[1],',
        "         CRAFTAX_SMOOTH_LEVEL[2], CRAFTAX_SMOOTH_LEVEL[3], CRAFTAX_SMOOTH_LEVEL[4], CRAFTAX_SMOOTH_LEVEL[5],",
        "         CRAFTAX_DUNGEON_LEVEL[0], CRAFTAX_DUNGEON_LEVEL[1], CRAFTAX_DUNGEON_LEVEL[2]);",
        '  printf(", \\"num_blocks\\": %d", (int)CRAFTAX_NUM_BLOCK_TYPES);',
        '  printf(", \\"blocks\\": {");',
    ]
    for i, block in enumerate(up_constants.BlockType):
        sep = "," if i else ""
        lines.append(f'  printf("{sep}\\"{block.name}\\": %d", (int)BLOCK_{block.name});')
    lines += ['  printf("}}\\n");', "  return 0;", "}"]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def header(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to read the header constants")
    d = tmp_path_factory.mktemp("constants")
    (d / "dump.c").write_text(_c_program())
    subprocess.run([cc, "-std=c11", "-I", str(INCLUDE), "-o", str(d / "dump"), str(d / "dump.c")], check=True)
    out = subprocess.run([str(d / "dump")], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def f32_bits(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).view(np.uint32)


def test_torch_light_map_bitwise(header):
    expected = f32_bits(np.asarray(up_constants.TORCH_LIGHT_MAP)).reshape(-1)
    actual = np.array(header["torch"], dtype=np.uint32)
    bad = np.flatnonzero(expected != actual)
    assert bad.size == 0, (
        f"TORCH_LIGHT_MAP differs at {[(int(i) // 9, int(i) % 9) for i in bad]}: "
        f"C {actual[bad].view(np.float32).tolist()}, upstream {expected[bad].view(np.float32).tolist()}"
    )
    assert np.asarray(up_constants.TORCH_LIGHT_MAP).dtype == np.float32


def test_block_ids(header):
    assert header["num_blocks"] == len(up_constants.BlockType)
    for block in up_constants.BlockType:
        assert header["blocks"][block.name] == block.value, f"BLOCK_{block.name}"


SMOOTH_CONFIGS = [
    ("OVERWORLD_CONFIG", 0),
    ("GNOMISH_MINES_CONFIG", 1),
    ("TROLL_MINES_CONFIG", 2),
    ("FIRE_LEVEL_CONFIG", 3),
    ("ICE_LEVEL_CONFIG", 4),
    ("BOSS_LEVEL_CONFIG", 5),
]




@pytest.mark.parametrize("field,up_field,kind", SMOOTH_FIELDS, ids=[f[0] for f in SMOOTH_FIELDS])
def test_smoothgen_config_field(header, field, up_field, kind):
    """ALL_SMOOTHGEN_CONFIGS (stacked by tree_map, the form world gen uses) vs the C table."""
    stacked = np.asarray(getattr(up_configs.ALL_SMOOTHGEN_CONFIGS, up_field))
    assert stacked.shape[0] == 6
    actual = [cfg[field] for cfg in header["smooth"]]
    if kind in ("int", "int5"):
        assert np.array_equal(np.asarray(actual), stacked.astype(np.int64)), f"{field}: C {actual}, upstream {stacked.tolist()}"
    else:
        # water_max is stacked as int32 upstream (every config has the int 1); it is only used
        # in clip(prox / strength, 0, max) with a float32 prox, so its float32 value is what counts.
        assert stacked.dtype in (np.float32, np.int32), f"upstream stacks {up_field} as {stacked.dtype}"
        assert np.array_equal(np.asarray(actual, dtype=np.uint32), f32_bits(stacked)), (
            f"{field}: C {np.asarray(actual, np.uint32).view(np.float32).tolist()}, upstream {stacked.tolist()}"
        )


def test_smoothgen_config_order(header):
    """ALL_SMOOTHGEN_CONFIGS is overworld, gnomish mines, troll mines, fire, ice, boss."""
    for name, index in SMOOTH_CONFIGS:
        cfg = getattr(up_configs, name)
        assert header["smooth"][index]["default_block"] == int(cfg.default_block), name
        assert header["smooth"][index]["tree"] == int(cfg.tree), name
        assert header["smooth"][index]["ore_chances"] == f32_bits(np.asarray(cfg.ore_chances)).tolist(), name


def test_dungeon_configs(header):
    stacked = up_configs.ALL_DUNGEON_CONFIGS
    expected = np.stack([np.asarray(getattr(stacked, f)) for f in DUNGEON_FIELDS], axis=1)
    assert expected.shape == (3, 3)
    assert np.array_equal(np.asarray(header["dungeon"]), expected), f"C {header['dungeon']}, upstream {expected.tolist()}"


def test_level_order(header):
    """generate_world stacks (smooth0, dungeon0, smooth1, dungeon1, dungeon2, smooth2..5)."""
    assert header["levels"] == [[0, 2, 5, 6, 7, 8], [1, 3, 4]]
