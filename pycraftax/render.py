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

Craftax-Classic states (get_state() of Craftax-Classic-Symbolic-v1) draw the same way: its 17
block types are the first 17 of full Craftax's, its one 64x64 map has no items, and the
whole view is dimmed when its global light level is at or below the 0.05 under which the full
game dims a cell.

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
CLASSIC_VIEW_ROWS, CLASSIC_VIEW_COLS = 7, 9  # craftax_classic's OBS_DIM
# Craftax-Classic's mob classes, drawn as the full game's of the same role
CLASSIC_MOB_CLASSES = {"cows": MOB_CLASSES["passive_mobs"], "zombies": MOB_CLASSES["melee_mobs"],
                       "skeletons": MOB_CLASSES["ranged_mobs"], "arrows": MOB_CLASSES["mob_projectiles"]}
# Action direction -> (row, col) step: upstream DIRECTIONS for player_direction 1..4.
FACING = {1: (0, -1), 2: (0, 1), 3: (-1, 0), 4: (1, 0)}
STATUS_ROWS = 2  # tiles of status strip under the map


def _env_slice(state: dict, env: int) -> dict:
    return {name: np.asarray(value)[env] for name, value in state.items()}


def is_classic(state: dict) -> bool:
    """Whether a state dict is Craftax-Classic's (its mobs are zombies, cows, skeletons)."""
    return "zombies.position" in state


def render_frame(state: dict, env: int = 0, view: str = "local", tile: int = 16) -> np.ndarray:
    """uint8 [H, W, 3] picture of env `env` of a batched state dict (env.get_state() of
    full Craftax or of Craftax-Classic). view="local": the cells around the player that the
    agent sees (9x11; Classic 7x9); "floor": the whole map of the player's current floor
    (48x48; Classic's one 64x64 map)."""
    if view not in ("local", "floor"):
        raise ValueError(f"view must be 'local' or 'floor', got {view!r}")
    if not isinstance(tile, int) or tile < 4:
        raise ValueError(f"tile must be an int >= 4 (pixels per cell), got {tile!r}")
    s = _env_slice(state, env)
    if is_classic(s):
        level = 0
        blocks, items = s["map"], np.zeros_like(s["map"])
        light = np.full(blocks.shape, float(s["light_level"]), np.float32)
        view_rows, view_cols = CLASSIC_VIEW_ROWS, CLASSIC_VIEW_COLS
        mobs = [(s[f"{p}.position"], s[f"{p}.mask"], np.zeros(s[f"{p}.mask"].shape, int), colour, p == "arrows")
                for p, colour in CLASSIC_MOB_CLASSES.items()]
    else:
        level = int(s["player_level"])
        blocks, items, light = s["map"][level], s["item_map"][level], s["light_map"][level]
        view_rows, view_cols = VIEW_ROWS, VIEW_COLS
        mobs = [(s[f"{p}.position"][level], s[f"{p}.mask"][level], s[f"{p}.type_id"][level], colour,
                 p.endswith("projectiles")) for p, colour in MOB_CLASSES.items()]
    rows, cols = blocks.shape
    pr, pc = (int(v) for v in s["player_position"])
    if view == "local":
        top, left = pr - view_rows // 2, pc - view_cols // 2
        height, width = view_rows, view_cols
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
    for positions, masks, kinds, colour, small in mobs:
        for (row, col), alive, kind in zip(positions, masks, kinds):
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


# Status strip inventory: (label, leaf) of each game's main counts
_INVENTORY = (("wd", "inventory.wood"), ("st", "inventory.stone"), ("co", "inventory.coal"), ("ir", "inventory.iron"),
              ("di", "inventory.diamond"), ("sp", "inventory.sapphire"), ("ru", "inventory.ruby"),
              ("ar", "inventory.arrows"), ("to", "inventory.torches"))
_CLASSIC_INVENTORY = (("wd", "inventory.wood"), ("st", "inventory.stone"), ("co", "inventory.coal"),
                      ("ir", "inventory.iron"), ("di", "inventory.diamond"), ("sa", "inventory.sapling"),
                      ("wp", "inventory.wood_pickaxe"), ("sp", "inventory.stone_pickaxe"),
                      ("ip", "inventory.iron_pickaxe"), ("ws", "inventory.wood_sword"),
                      ("ss", "inventory.stone_sword"), ("is", "inventory.iron_sword"))


def _status_strip(s: dict, level: int, width: int, tile: int) -> np.ndarray:
    """Vitals as bars (each out of 9) and the floor and main inventory as text."""
    from PIL import Image, ImageDraw

    strip = Image.new("RGB", (width, STATUS_ROWS * tile), (20, 20, 25))
    draw = ImageDraw.Draw(strip)
    classic = is_classic(s)
    vitals = (("HP", float(s["player_health"]), (220, 40, 40)), ("FD", int(s["player_food"]), (220, 150, 60)),
              ("DR", int(s["player_drink"]), (60, 130, 230)), ("EN", int(s["player_energy"]), (230, 220, 60)))
    if not classic:
        vitals += (("MP", int(s["player_mana"]), (170, 90, 230)),)
    bar_width = max(1, width // len(vitals))
    for k, (_, value, colour) in enumerate(vitals):
        filled = int(round(bar_width * min(max(value, 0.0), 9.0) / 9.0))
        draw.rectangle([k * bar_width + 1, 2, k * bar_width + max(filled - 2, 1), tile // 2], fill=colour)
    where = "Classic" if classic else FLOOR_NAMES[level]
    inv = _CLASSIC_INVENTORY if classic else _INVENTORY
    text = f"{where}  " + " ".join(f"{a}{int(s[k])}" for a, k in inv if int(s[k]))
    draw.text((2, tile // 2 + 2), text, fill=(230, 230, 230))
    return np.asarray(strip, dtype=np.uint8)


def save_gif(path: str, frames: list[np.ndarray], fps: float = 8.0) -> None:
    """Write frames (uint8 [H, W, 3], same size) as a looping GIF."""
    from PIL import Image

    if not frames:
        raise ValueError("frames is empty: nothing to save")
    if fps <= 0:
        raise ValueError(f"fps must be > 0, got {fps}")
    frames = [np.asarray(f) for f in frames]
    first = frames[0].shape
    for i, f in enumerate(frames):
        if f.dtype != np.uint8 or f.ndim != 3 or f.shape[2] != 3 or f.shape != first:
            raise ValueError(f"frames[{i}] must be uint8 [H, W, 3] of the first frame's size {first}, got "
                             f"{f.dtype} {f.shape}")
    images = [Image.fromarray(f) for f in frames]
    images[0].save(path, save_all=True, append_images=images[1:], duration=int(round(1000 / fps)), loop=0)


def record_episode(policy=None, seed: int = 0, max_steps: int = 1000, view: str = "local", tile: int = 16,
                   greedy: bool = False, progress=None, env_id: str | None = None) -> tuple[list[np.ndarray], dict]:
    """Play one episode of one C env and return (frames, summary). `policy`: flax-named
    weights (pycraftax.train.evaluation.load_policy) or None for uniformly random actions.
    env_id: the env played; by default the one the policy's input size reads, or full
    Craftax for random actions. The summary has the env id, the return, length, whether it
    ended, and the achievements unlocked with the step each first appeared."""
    import pycraftax
    from pycraftax.achievements import names_by_index

    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps}")
    if policy is not None:
        from pycraftax.train.policy import Policy

        policy_env = Policy(policy).env_id
        if env_id is not None and env_id != policy_env:
            raise ValueError(f"env_id {env_id!r} does not match the policy, which reads {policy_env!r}")
        env_id = policy_env
    elif env_id is None:
        env_id = "Craftax-Symbolic-v1"
    names = names_by_index(env_id)
    env = pycraftax.make(env_id, num_envs=1, backend="c", seed=seed)
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    act = _policy_actor(policy, rng, greedy, env.num_actions)
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
            unlocked.setdefault(names[k], t)
        if progress is not None:
            progress(t)
        if ended:
            break
    env.close()
    return frames, {"env_id": env_id, "return": total, "length": t, "ended": ended, "achievements": unlocked}


def _policy_actor(policy, rng: np.random.Generator, greedy: bool, num_actions: int):
    if policy is None:
        return lambda obs, done: rng.integers(0, num_actions, size=1, dtype=np.int32)
    from pycraftax.train.policy import Policy

    model = Policy(policy)
    hidden = [model.initial_state(1)]

    def act(obs, done):
        hidden[0], logits = model.step(obs, done, hidden[0])
        return model.act(rng, logits, greedy)

    return act
