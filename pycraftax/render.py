"""Pictures and videos of Craftax states, for looking at what an agent does.

A flat-colour tile renderer of our own: one colour per block type, a small marker per item
(torch, ladders), mob (by class and floor-specific type) and projectile, the player as a
white tile with a tick towards where it faces, dark cells dimmed by the light map, and a
status strip (health, food, drink, energy, mana, floor, main inventory). It reads only the
state dict of `env.get_state()`, so it draws C and CUDA envs alike. It is not pixel-equal to
upstream's textured renderer (whose textures are upstream's assets); the observation the
agent gets is the symbolic one either way.

    frames = [render_frame(env.get_state(), 0)]           # uint8 [H, W, 3]
    save_gif("episode.gif", frames, fps=8)

`pycraftax render` (cli.py) records an episode of a trained policy or of random actions.
"""

from __future__ import annotations

import numpy as np

# Block type -> (name, RGB), in upstream's BlockType order (constants.py, craftax 1.6.1).
BLOCKS: tuple[tuple[str, tuple[int, int, int]], ...] = (
    ("INVALID", (0, 0, 0)), ("OUT_OF_BOUNDS", (0, 0, 0)), ("GRASS", (88, 160, 62)), ("WATER", (58, 110, 200)),
    ("STONE", (128, 128, 128)), ("TREE", (30, 100, 35)), ("WOOD", (150, 105, 60)), ("PATH", (190, 175, 140)),
    ("COAL", (45, 45, 45)), ("IRON", (190, 150, 120)), ("DIAMOND", (150, 240, 245)),
    ("CRAFTING_TABLE", (170, 120, 50)), ("FURNACE", (90, 70, 70)), ("SAND", (225, 210, 150)),
    ("LAVA", (235, 90, 20)), ("PLANT", (120, 200, 90)), ("RIPE_PLANT", (210, 200, 60)), ("WALL", (70, 65, 75)),
    ("DARKNESS", (10, 10, 15)), ("WALL_MOSS", (70, 100, 70)), ("STALAGMITE", (110, 100, 95)),
    ("SAPPHIRE", (40, 70, 220)), ("RUBY", (200, 30, 60)), ("CHEST", (180, 130, 30)), ("FOUNTAIN", (120, 180, 230)),
    ("FIRE_GRASS", (170, 80, 40)), ("ICE_GRASS", (200, 225, 240)), ("GRAVEL", (150, 140, 130)),
    ("FIRE_TREE", (200, 60, 30)), ("ICE_SHRUB", (160, 200, 220)), ("ENCHANTMENT_TABLE_FIRE", (230, 120, 40)),
    ("ENCHANTMENT_TABLE_ICE", (110, 170, 240)), ("NECROMANCER", (120, 40, 150)), ("GRAVE", (100, 100, 110)),
    ("GRAVE2", (95, 95, 105)), ("GRAVE3", (90, 90, 100)), ("NECROMANCER_VULNERABLE", (200, 90, 230)),
)
BLOCK_NAMES: tuple[str, ...] = tuple(name for name, _ in BLOCKS)
BLOCK_COLOURS = np.array([colour for _, colour in BLOCKS], dtype=np.uint8)
ITEM_COLOURS = {1: (255, 200, 40), 2: (250, 250, 250), 3: (120, 60, 20), 4: (150, 150, 150)}  # torch, ladders
# Mob classes of the state (leaf prefix) -> marker colour; the type id shades it so that a
# floor's different mobs stay apart.
MOB_CLASSES = {"passive_mobs": (250, 170, 200), "melee_mobs": (220, 30, 30), "ranged_mobs": (160, 60, 220),
               "mob_projectiles": (255, 140, 0), "player_projectiles": (255, 255, 120)}
FLOOR_NAMES = ("Overworld", "Dungeon", "Gnomish Mines", "Sewers", "Vaults", "Troll Mines", "Fire Realm", "Ice Realm",
               "Graveyard")
VIEW_ROWS, VIEW_COLS = 9, 11  # the agent's local view (upstream OBS_DIM)
# Action direction -> (row, col) step: upstream DIRECTIONS for player_direction 1..4.
FACING = {1: (0, -1), 2: (0, 1), 3: (-1, 0), 4: (1, 0)}
STATUS_ROWS = 2  # tiles of status strip under the map


def _env_slice(state: dict, env: int) -> dict:
    return {name: np.asarray(value)[env] for name, value in state.items()}


def render_frame(state: dict, env: int = 0, view: str = "local", tile: int = 16) -> np.ndarray:
    """uint8 [H, W, 3] picture of env `env` of a batched state dict (env.get_state()).
    view="local": the 9x11 cells around the player that the agent sees; "floor": the whole
    48x48 map of the player's current floor."""
    if view not in ("local", "floor"):
        raise ValueError(f"view must be 'local' or 'floor', got {view!r}")
    if not isinstance(tile, int) or tile < 4:
        raise ValueError(f"tile must be an int >= 4 (pixels per cell), got {tile!r}")
    s = _env_slice(state, env)
    level = int(s["player_level"])
    blocks, items, light = s["map"][level], s["item_map"][level], s["light_map"][level]
    rows, cols = blocks.shape
    pr, pc = (int(v) for v in s["player_position"])
    if view == "local":
        top, left = pr - VIEW_ROWS // 2, pc - VIEW_COLS // 2
        height, width = VIEW_ROWS, VIEW_COLS
    else:
        top, left, height, width = 0, 0, rows, cols
    r = np.arange(top, top + height)[:, None]
    c = np.arange(left, left + width)[None, :]
    inside = (r >= 0) & (r < rows) & (c >= 0) & (c < cols)
    rc, cc = np.clip(r, 0, rows - 1), np.clip(c, 0, cols - 1)
    cell_block = np.where(inside, blocks[rc, cc], 1)  # OUT_OF_BOUNDS outside the map
    cells = BLOCK_COLOURS[cell_block].astype(np.float32)
    # Upstream shows a cell when its light level exceeds 0.05; dim the ones it hides.
    lit = np.where(inside, light[rc, cc] > 0.05, False)
    cells = np.where(lit[..., None], cells, cells * 0.25)
    image = np.repeat(np.repeat(cells, tile, 0), tile, 1)

    def cell_box(row: int, col: int, margin: int):
        y, x = (row - top) * tile, (col - left) * tile
        return slice(y + margin, y + tile - margin), slice(x + margin, x + tile - margin)

    def visible(row: int, col: int) -> bool:
        return top <= row < top + height and left <= col < left + width

    for row, col in zip(*np.nonzero(items)):
        if visible(row, col):
            image[cell_box(row, col, tile * 3 // 8)] = ITEM_COLOURS.get(int(items[row, col]), (255, 0, 255))
    for prefix, colour in MOB_CLASSES.items():
        small = prefix.endswith("projectiles")
        for (row, col), alive, kind in zip(s[f"{prefix}.position"][level], s[f"{prefix}.mask"][level],
                                           s[f"{prefix}.type_id"][level]):
            if alive and visible(int(row), int(col)):
                shade = 1.0 - 0.08 * int(kind)
                image[cell_box(int(row), int(col), tile * 3 // 8 if small else tile // 6)] = \
                    np.array(colour, np.float32) * shade
    image[cell_box(pr, pc, tile // 8)] = (255, 255, 255)
    dr, dc = FACING.get(int(s["player_direction"]), (0, 0))
    cy, cx = (pr - top) * tile + tile // 2, (pc - left) * tile + tile // 2
    for k in range(tile // 2):
        image[cy + dr * k - 1: cy + dr * k + 1, cx + dc * k - 1: cx + dc * k + 1] = (0, 0, 0)
    return np.concatenate([image.astype(np.uint8), _status_strip(s, level, image.shape[1], tile)], axis=0)


def _status_strip(s: dict, level: int, width: int, tile: int) -> np.ndarray:
    """Vitals as bars (each out of 9) and the floor and main inventory as text."""
    from PIL import Image, ImageDraw

    strip = Image.new("RGB", (width, STATUS_ROWS * tile), (20, 20, 25))
    draw = ImageDraw.Draw(strip)
    vitals = (("HP", float(s["player_health"]), (220, 40, 40)), ("FD", int(s["player_food"]), (220, 150, 60)),
              ("DR", int(s["player_drink"]), (60, 130, 230)), ("EN", int(s["player_energy"]), (230, 220, 60)),
              ("MP", int(s["player_mana"]), (170, 90, 230)))
    bar_width = max(1, width // len(vitals))
    for k, (_, value, colour) in enumerate(vitals):
        filled = int(round(bar_width * min(max(value, 0.0), 9.0) / 9.0))
        draw.rectangle([k * bar_width + 1, 2, k * bar_width + max(filled - 2, 1), tile // 2], fill=colour)
    inv = [("wd", "inventory.wood"), ("st", "inventory.stone"), ("co", "inventory.coal"), ("ir", "inventory.iron"),
           ("di", "inventory.diamond"), ("sp", "inventory.sapphire"), ("ru", "inventory.ruby"),
           ("ar", "inventory.arrows"), ("to", "inventory.torches")]
    text = f"{FLOOR_NAMES[level]}  " + " ".join(f"{a}{int(s[k])}" for a, k in inv if int(s[k]))
    draw.text((2, tile // 2 + 2), text, fill=(230, 230, 230))
    return np.asarray(strip, dtype=np.uint8)


def save_gif(path: str, frames: list[np.ndarray], fps: float = 8.0) -> None:
    """Write frames (uint8 [H, W, 3], same size) as a looping GIF."""
    from PIL import Image

    if not frames:
        raise ValueError("frames is empty: nothing to save")
    if fps <= 0:
        raise ValueError(f"fps must be > 0, got {fps}")
    images = [Image.fromarray(f) for f in frames]
    images[0].save(path, save_all=True, append_images=images[1:], duration=int(round(1000 / fps)), loop=0)


def record_episode(policy=None, seed: int = 0, max_steps: int = 1000, view: str = "local", tile: int = 16,
                   greedy: bool = False, progress=None) -> tuple[list[np.ndarray], dict]:
    """Play one episode of one C env and return (frames, summary). `policy`: flax-named
    weights (pycraftax.train.evaluation.load_policy) or None for uniformly random actions.
    The summary has the return, length, whether it ended, and the achievements unlocked
    with the step each first appeared."""
    import pycraftax
    from pycraftax.achievements import NAMES_BY_INDEX

    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps}")
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=1, backend="c", seed=seed)
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    act = _policy_actor(policy, rng, greedy)
    frames = [render_frame(env.get_state(), 0, view, tile)]
    unlocked: dict[str, int] = {}
    total, ended, done = 0.0, False, np.zeros(1, bool)
    for t in range(1, max_steps + 1):
        action = act(obs, done)
        before = env.get_state()["achievements"][0].copy()
        obs, reward, terminated, truncated, info = env.step(action)
        total += float(reward[0])
        done = info["done"]
        if done[0]:
            after = np.asarray(info["achievements"][0], bool)
            ended = True
        else:
            state = env.get_state()
            after = state["achievements"][0]
            frames.append(render_frame(state, 0, view, tile))
        for k in np.flatnonzero(after & ~before):
            unlocked.setdefault(NAMES_BY_INDEX[k], t)
        if progress is not None:
            progress(t)
        if ended:
            break
    env.close()
    return frames, {"return": total, "length": t, "ended": ended, "achievements": unlocked}


def _policy_actor(policy, rng: np.random.Generator, greedy: bool):
    if policy is None:
        return lambda obs, done: rng.integers(0, 43, size=1, dtype=np.int32)
    from pycraftax.train import interop
    from pycraftax.train import numpy_ppo as npp

    cfg = interop.infer_model_config(policy)
    hidden = [np.zeros((1, cfg.hidden), policy["params/Dense_0/kernel"].dtype)]

    def act(obs, done):
        hidden[0], logits, _, _ = npp.forward(policy, obs[None], done[None], hidden[0])
        if greedy:
            return logits[0].argmax(-1).astype(np.int32)
        return npp.sample_actions(rng, logits[0])[0]

    return act
