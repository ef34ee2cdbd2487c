"""Craftax as people see it: the textured pixel renderer (reference_c/include/craftax/pixels.h
and craftax_classic/pixels.h) over upstream's textures (pycraftax/textures.py).

    atlas("craftax", 10)                    # the float32 atlas the C renderer reads
    render_states("craftax", states, 64)    # float32 [N, 13 * 64, 11 * 64, 3], 0..255
    picture(env, index=0, block_size=32)    # uint8 [H, W, 3]: the local view with the inventory
    picture(env, view="floor")              # uint8: the whole floor the player is on

The pixel envs (Craftax-Pixels-v1, Craftax-Classic-Pixels-v1, pycraftax/pixels_env.py) render
the same picture at the agent's block size (10, Classic 7) and divide by 255, bit for bit as
craftax 1.6.1 does.
"""

from __future__ import annotations

import threading

import numpy as np

from pycraftax import textures

__all__ = ["AGENT_BLOCK", "FULL", "CLASSIC", "HUMAN_BLOCK", "atlas", "floor_picture", "picture", "picture_shape",
           "render_states"]

FULL, CLASSIC = textures.FULL, textures.CLASSIC
# pixels per map cell: the pixel envs' (upstream BLOCK_PIXEL_SIZE_AGENT) and upstream's play window's
AGENT_BLOCK = {FULL: 10, CLASSIC: 7}
HUMAN_BLOCK = 64
VIEWS = ("local", "floor")
_GAME_CODE = {FULL: 0, CLASSIC: 1}
_ATLASES: dict[tuple[str, int], np.ndarray] = {}
_LOCK = threading.Lock()


def _native():
    from pycraftax import _native

    return _native


def check_block_size(block_size) -> int:
    """block_size as an int in the renderer's range; ValueError naming it otherwise."""
    lib = _native().lib
    low, high = int(lib.CRAFTAX_PIXELS_MIN_BLOCK), int(lib.CRAFTAX_PIXELS_MAX_BLOCK)
    if isinstance(block_size, (bool, np.bool_)) or not isinstance(block_size, (int, np.integer)) \
            or not low <= block_size <= high:
        raise ValueError(f"block_size must be an int in [{low}, {high}] (pixels per map cell), got {block_size!r}")
    return int(block_size)


def _check_game(game: str) -> int:
    if game not in _GAME_CODE:
        raise ValueError(f"game must be one of {list(_GAME_CODE)}, got {game!r}")
    return _GAME_CODE[game]


def atlas(game: str, block_size: int) -> np.ndarray:
    """The C renderer's texture atlas of `game` at `block_size` pixels a cell: float32, every
    texture at the offset the C layout gives it (craftax_pixels_section). Built once per process
    from the cached textures."""
    code = _check_game(game)
    block = check_block_size(block_size)
    with _LOCK:
        if (game, block) in _ATLASES:
            return _ATLASES[(game, block)]
    native = _native()
    lib, ffi = native.lib, native.ffi
    prepared = textures.textures(game, block)
    flat = np.zeros(int(lib.craftax_pixels_atlas_size(code, block)), dtype=np.float32)
    section = ffi.new("CraftaxPixelSection *")
    for index in range(int(lib.craftax_pixels_num_sections(code))):
        native.check(lib.craftax_pixels_section(code, block, index, section), "craftax_pixels_section")
        name = ffi.string(section.name).decode()
        shape = (section.count, section.rows, section.cols, section.channels)
        values = prepared[name].reshape(shape)  # a mismatch is a bug in textures.py: reshape raises
        flat[section.offset:section.offset + values.size] = values.ravel()
    with _LOCK:
        return _ATLASES.setdefault((game, block), flat)


def picture_shape(game: str, block_size: int) -> tuple[int, int, int]:
    """(height, width, 3) of `game`'s picture at `block_size`."""
    native = _native()
    height, width = native.ffi.new("int32_t *"), native.ffi.new("int32_t *")
    native.check(native.lib.craftax_pixels_picture_shape(_check_game(game), check_block_size(block_size), height,
                                                         width), "craftax_pixels_picture_shape")
    return int(height[0]), int(width[0]), 3


def render_states(game: str, states: np.ndarray, block_size: int, scaled: bool = False) -> np.ndarray:
    """render_craftax_pixels of raw C states (uint8 [N, state_size] of `game`): float32
    [N, height, width, 3], upstream's 0..255 values (times 1/255, as the pixel envs' obs, with
    `scaled`)."""
    native = _native()
    states = np.ascontiguousarray(states, dtype=np.uint8)
    out = np.empty((states.shape[0], *picture_shape(game, block_size)), dtype=np.float32)
    table = atlas(game, block_size)
    native.check(native.lib.craftax_pixels_render(_check_game(game), native.ptr(states, "void *"), states.shape[0],
                                                  native.ptr(table, "float *"), block_size, int(bool(scaled)),
                                                  native.ptr(out, "float *")), "craftax_pixels_render")
    return out


def _to_uint8(pixels: np.ndarray) -> np.ndarray:
    return np.clip(pixels, 0.0, 255.0).astype(np.uint8)


def game_of(env) -> str:
    """The game ("craftax" or "craftax_classic") of a pycraftax env."""
    return CLASSIC if "Classic" in env.env_id else FULL


def picture(env, index: int = 0, block_size: int = HUMAN_BLOCK, view: str = "local") -> np.ndarray:
    """uint8 [H, W, 3]: env `index` of a pycraftax env (any backend) as upstream's textured
    renderer draws it for people. view="local": the player's view with the inventory under it
    (upstream's play window at block_size 64); "floor": the whole map of the player's floor
    (floor_picture)."""
    if view not in VIEWS:
        raise ValueError(f"view must be one of {list(VIEWS)}, got {view!r}")
    num_envs = env.num_envs
    if isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer)) or not 0 <= index < num_envs:
        raise ValueError(f"index must be an int in [0, {num_envs}), got {index!r}")
    block = check_block_size(block_size)
    game = game_of(env)
    states = env._state_bytes(int(index))
    if view == "floor":
        return floor_picture(game, states, block)
    return _to_uint8(render_states(game, states, block)[0])


def floor_picture(game: str, state_bytes: np.ndarray, block_size: int) -> np.ndarray:
    """uint8 [rows * block, cols * block, 3]: the whole map of the player's floor in the same
    textures (blocks, items, mobs, projectiles, the player), each cell darkened by its light
    map value as the view darkens it (full game; Classic has no light map). No night, no
    inventory: an overview, not an observation."""
    from pycraftax import _state, classic_state

    block = check_block_size(block_size)
    tex = textures.textures(game, block)
    table = classic_state.TABLE if game == CLASSIC else _state.TABLE
    s = {name: value[0] for name, value in table.get_state(np.ascontiguousarray(state_bytes)[:1]).items()}
    if game == CLASSIC:
        blocks = s["map"]
        items = np.zeros_like(blocks)
        light = np.ones(blocks.shape, np.float32)
        mobs = [(s[f"{p}.position"], s[f"{p}.mask"], np.zeros(s[f"{p}.mask"].shape, np.int64), tex[f"{t}_texture"][None],
                 tex[f"{t}_texture_alpha"][None], None)
                for p, t in (("zombies", "zombie"), ("cows", "cow"), ("skeletons", "skeleton"))]
        mobs.append((s["arrows.position"], s["arrows.mask"], np.zeros(3, np.int64), tex["arrow_texture"][None],
                     tex["arrow_texture_alpha"][None], s["arrow_directions"]))
        sprite = 4 if s["is_sleeping"] else int(s["player_direction"]) - 1
        player_rgb, player_alpha = tex["player_textures"][sprite], tex["player_textures_alpha"][sprite]
    else:
        level = int(s["player_level"])
        blocks, items, light = s["map"][level], s["item_map"][level], s["light_map"][level]
        mobs = [(s[f"{p}.position"][level], s[f"{p}.mask"][level], s[f"{p}.type_id"][level], tex[f"{t}_textures"],
                 tex[f"{t}_texture_alphas"], s[f"{d}"][level] if d else None)
                for p, t, d in (("melee_mobs", "melee_mob", None), ("passive_mobs", "passive_mob", None),
                                ("ranged_mobs", "ranged_mob", None),
                                ("mob_projectiles", "projectile", "mob_projectile_directions"),
                                ("player_projectiles", "projectile", "player_projectile_directions"))]
        sprite = 4 if s["is_sleeping"] else int(s["player_direction"]) - 1
        player = tex["player_textures"][sprite]
        player_rgb, player_alpha = player[..., :3], np.repeat(player[..., 3:4], 3, axis=2)
    rows, cols = blocks.shape
    block_tex = tex["block_textures"]
    ids = np.clip(blocks, 0, block_tex.shape[0] - 1)
    image = block_tex[ids].transpose(0, 2, 1, 3, 4).reshape(rows * block, cols * block, 3).copy()

    def blend(r, c, rgb, alpha):
        cell = image[r * block:(r + 1) * block, c * block:(c + 1) * block]
        cell[...] = cell * (1 - alpha) + rgb * alpha

    if game == FULL:
        item_tex = tex["item_textures"]
        for r, c in zip(*np.nonzero((items > 0) & (items < item_tex.shape[0]))):
            item = item_tex[items[r, c]]
            blend(r, c, item[..., :3], np.repeat(item[..., 3:4], 3, axis=2))
    for positions, masks, kinds, rgbs, alphas, directions in mobs:
        for k, ((r, c), alive) in enumerate(zip(positions, masks)):
            if not alive or not (0 <= r < rows and 0 <= c < cols):
                continue
            kind = int(np.clip(kinds[k], 0, rgbs.shape[0] - 1))
            rgb, alpha = rgbs[kind], alphas[kind]
            if directions is not None:  # projectiles point where they fly, as in the view
                d = directions[k]
                if d[0] > 0 or d[1] > 0:
                    rgb, alpha = rgb[::-1], alpha[::-1]
                if d[1] != 0:
                    rgb, alpha = rgb.transpose(1, 0, 2), alpha.transpose(1, 0, 2)
            blend(int(r), int(c), rgb, alpha)
    pr, pc = (int(v) for v in s["player_position"])
    if 0 <= pr < rows and 0 <= pc < cols:
        blend(pr, pc, player_rgb, player_alpha)
    image *= np.repeat(np.repeat(np.clip(light, 0.0, 1.0), block, 0), block, 1)[..., None]
    return _to_uint8(image)
