"""The texture atlases of the pixel renderers, prepared from the official craftax distribution's
own image files.

The images are upstream's (craftax 1.6.1, `craftax/craftax/assets` and
`craftax/craftax_classic/assets`); pycraftax neither redraws nor ships them. They are found
through the installed distribution's metadata, without importing craftax (so neither JAX nor
craftax's other dependencies are needed): `pip install --no-deps craftax==1.6.1` is enough.

Each texture is prepared as upstream's `load_all_textures_given_size` prepares it (RGBA; in
the full game the alpha channel thresholded to 0/1 by `alpha // 255`; Classic's player and
mobs keep `alpha / 255`; a nearest-neighbour PIL resize to the block size; colours times
alpha where upstream applies it), so that the renderers' float arithmetic sees upstream's
exact texture values (conformance/test_pixels.py compares every array with upstream's).

An atlas is built once per (game, block size, distribution version, image bytes) and kept in
the user's cache directory ($PYCRAFTAX_CACHE_DIR, else $XDG_CACHE_HOME/pycraftax, else
~/.cache/pycraftax); where that is not writable it is rebuilt in memory each time.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import io
import os
import threading
from pathlib import Path

import numpy as np

__all__ = ["TexturesMissing", "asset_dir", "classic_textures", "craftax_textures", "cache_dir"]

DISTRIBUTION = "craftax"
EXPECTED_VERSION = "1.6.1"
INSTALL_HINT = f"pip install --no-deps {DISTRIBUTION}=={EXPECTED_VERSION}"
# Bumped whenever the preparation below changes, so that older cached atlases are not read.
_FORMAT = 1

FULL, CLASSIC = "craftax", "craftax_classic"
# The full game's OBS_DIM and inventory rows; Classic's
VIEW = {FULL: (9, 11), CLASSIC: (7, 9)}

# Block types in upstream's BlockType order -> image file (the full game's 37; Classic's 17
# are the first 17). OUT_OF_BOUNDS and DARKNESS are replaced by flat colours below.
BLOCK_FILES = (
    "debug_tile.png", "debug_tile.png", "grass.png", "water.png", "stone.png", "tree.png", "wood.png", "path.png",
    "coal.png", "iron.png", "diamond.png", "table.png", "furnace.png", "sand.png", "lava.png", "plant_on_grass.png",
    "ripe_plant_on_grass.png", "wall2.png", "debug_tile.png", "wall_moss.png", "stalagmite.png", "sapphire.png",
    "ruby.png", "chest.png", "fountain.png", "fire_grass.png", "ice_grass.png", "gravel.png", "fire_tree.png",
    "ice_shrub.png", "enchantment_table_fire.png", "enchantment_table_ice.png", "necromancer.png", "grave.png",
    "grave2.png", "grave3.png", "necromancer_vulnerable.png",
)
OUT_OF_BOUNDS, DARKNESS = 1, 18
CLASSIC_NUM_BLOCKS = 17
ITEM_FILES = ("debug.png", "torch_in_inventory.png", "ladder_down.png", "ladder_up.png", "ladder_down_blocked.png")
PLAYER_FILES = ("player-left.png", "player-right.png", "player-up.png", "player-down.png", "player-sleep.png")
MELEE_FILES = ("zombie.png", "gnome_warrior.png", "orc_soldier.png", "lizard.png", "knight.png", "troll.png",
               "pigman.png", "frost_troll.png")
PASSIVE_FILES = ("cow.png", "bat.png", "snail.png")
RANGED_FILES = ("skeleton.png", "gnome_archer.png", "orc_mage.png", "kobold.png", "knight_archer.png",
                "deep_thing.png", "fire_elemental.png", "ice_elemental.png")
PROJECTILE_FILES = ("arrow-up.png", "dagger.png", "fireball.png", "iceball.png", "arrow-up.png", "slimeball.png",
                    "fireball.png", "iceball.png")
POTION_FILES = tuple(f"potion_{c}.png" for c in ("red", "green", "blue", "pink", "cyan", "yellow"))
ARMOUR_PIECES = ("helmet", "chestplate", "pants", "boots")


class TexturesMissing(RuntimeError):
    """The craftax distribution whose images the pixel renderers read is not installed."""


def _missing(detail: str) -> TexturesMissing:
    return TexturesMissing(
        f"the pixel envs and the textured renderer read upstream's texture images from the installed "
        f"'{DISTRIBUTION}' distribution, which {detail}. Install it (JAX is not needed): {INSTALL_HINT}"
    )


def asset_dir(game: str = FULL) -> Path:
    """The directory of `game`'s images ("craftax" or "craftax_classic") inside the installed
    craftax distribution; TexturesMissing (saying how to install it) when it is absent."""
    if game not in (FULL, CLASSIC):
        raise ValueError(f"game must be {FULL!r} or {CLASSIC!r}, got {game!r}")
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise _missing("is not installed") from None
    path = Path(dist.locate_file(f"craftax/{game}/assets"))
    if not (path / "grass.png").is_file():
        raise _missing(f"(version {dist.version}) has no images at {path}")
    return path


def cache_dir() -> Path:
    """Where prepared atlases are kept: $PYCRAFTAX_CACHE_DIR, else $XDG_CACHE_HOME/pycraftax,
    else ~/.cache/pycraftax."""
    explicit = os.environ.get("PYCRAFTAX_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pycraftax"


# -- upstream's preparation of one image ---------------------------------------------------------
class _Images:
    """Reads and prepares the images of one asset directory, each file read once."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.raw: dict[str, bytes] = {}

    def bytes_of(self, name: str) -> bytes:
        if name not in self.raw:
            path = self.directory / name
            if not path.is_file():
                raise _missing(f"has no image {name} at {self.directory}")
            self.raw[name] = path.read_bytes()
        return self.raw[name]

    def rgba(self, name: str, size: int, clamp_alpha: bool = True) -> np.ndarray:
        """int64 [size, size, 4]: the 16 x 16 image as RGBA, alpha // 255 when clamp_alpha,
        then (for another size) PIL's nearest-neighbour resize of those uint8 values."""
        from PIL import Image

        with Image.open(io.BytesIO(self.bytes_of(name))) as image:
            pixels = np.asarray(image.convert("RGBA")).astype(np.int64)
        if pixels.shape[:2] != (16, 16):
            raise ValueError(f"{self.directory / name}: expected a 16 x 16 image, got {pixels.shape[:2]}")
        if clamp_alpha:
            pixels[:, :, 3] //= 255
        if size != 16:
            resized = Image.fromarray(pixels.astype(np.uint8)).resize((size, size), resample=Image.NEAREST)
            pixels = np.asarray(resized).astype(np.int64)
        return pixels

    def rgb(self, name: str, size: int) -> np.ndarray:
        return self.rgba(name, size)[:, :, :3]

    def premultiplied(self, name: str, size: int) -> np.ndarray:
        """Colours times the 0/1 alpha (upstream's apply_alpha)."""
        pixels = self.rgba(name, size)
        return pixels[:, :, :3] * pixels[:, :, 3:4]


def _alpha3(rgba: np.ndarray) -> np.ndarray:
    return np.repeat(rgba[:, :, 3:4], 3, axis=2)


def _f32(tree: dict) -> dict[str, np.ndarray]:
    return {name: np.ascontiguousarray(value, dtype=np.float32) for name, value in tree.items()}


def _view_size(game: str, block: int) -> tuple[int, int]:
    rows, cols = VIEW[game]
    return rows * block, cols * block


def _full_textures(images: _Images, block: int) -> dict[str, np.ndarray]:
    small, digit = int(block * 0.8), int(block * 0.4)
    zeros_small = np.zeros((small, small, 3), np.int64)
    blocks = np.stack([images.rgb(f, block) for f in BLOCK_FILES])
    blocks[OUT_OF_BOUNDS] = 128
    blocks[DARKNESS] = 0
    digits = [np.zeros((digit, digit, 4), np.int64)] + [images.rgba(f"{k}.png", digit) for k in range(1, 10)]
    digits_with_zero = [images.rgba(f"{k}.png", digit) for k in range(10)]

    def mobs(files):
        rgba = [images.rgba(f, block) for f in files]
        return np.stack([t[:, :, :3] * t[:, :, 3:4] for t in rgba]), np.stack([_alpha3(t) for t in rgba])

    def tools(files):
        out = np.stack([images.premultiplied(f, small) for f in files])
        out[0] = zeros_small  # tier 0: no tool
        return out

    armour = np.stack([np.stack([zeros_small] * 4)] + [
        np.stack([images.premultiplied(f"{tier}_{piece}.png", small) for piece in ARMOUR_PIECES])
        for tier in ("iron", "diamond")])
    no_enchantment = np.zeros((small, small, 4), np.int64)
    rows, cols = _view_size(FULL, block)
    # distance of each pixel from the view's centre pixel over the largest such distance
    x = np.arange(rows)[:, None] - rows // 2
    y = np.arange(cols)[None, :] - cols // 2
    distance = np.sqrt((x * x + y * y).astype(np.float32))
    # XLA divides by the maximum as a multiply by its float32 reciprocal (so the farthest
    # pixel can be 0.99999994, not 1)
    normalised = distance * (np.float32(1) / distance.max())
    melee, melee_alpha = mobs(MELEE_FILES)
    passive, passive_alpha = mobs(PASSIVE_FILES)
    ranged, ranged_alpha = mobs(RANGED_FILES)
    projectile, projectile_alpha = mobs(PROJECTILE_FILES)
    return _f32({
        "block_textures": blocks,
        "smaller_block_textures": np.stack([images.rgb(f, small) for f in BLOCK_FILES]),
        "item_textures": np.stack([images.rgba(f, block) for f in ITEM_FILES]),
        "player_textures": np.stack([images.rgba(f, block) for f in PLAYER_FILES]),
        "number_textures": np.stack([t[:, :, :3] * _alpha3(t) if t.shape[2] == 4 else t for t in digits]),
        "number_textures_alpha": np.stack([_alpha3(t) if t.shape[2] == 4 else t for t in digits]),
        "number_textures_with_zero": np.stack([t[:, :, :3] * _alpha3(t) for t in digits_with_zero]),
        "number_textures_alpha_with_zero": np.stack([_alpha3(t) for t in digits_with_zero]),
        "health_texture": images.rgb("health.png", small),
        "hunger_texture": images.rgb("food.png", small),
        "thirst_texture": images.rgb("drink.png", small),
        "energy_texture": images.rgb("energy.png", small),
        "mana_texture": images.rgb("mana.png", small),
        "pickaxe_textures": tools(["debug.png"] + [f"{m}_pickaxe.png" for m in ("wood", "stone", "iron", "diamond")]),
        "sword_textures": tools(["debug.png"] + [f"{m}_sword.png" for m in ("wood", "stone", "iron", "diamond")]),
        "armour_textures": armour,
        "bow_textures": np.stack([zeros_small, images.rgb("bow.png", small)]),
        "player_projectile_textures": np.stack(
            [images.premultiplied(f, small) for f in ("arrow-up.png", "debug.png", "fireball.png", "iceball.png")]),
        "sapling_texture": images.rgb("sapling.png", small),
        "torch_inv_texture": images.rgb("torch_in_inventory.png", small),
        "melee_mob_textures": melee, "melee_mob_texture_alphas": melee_alpha,
        "passive_mob_textures": passive, "passive_mob_texture_alphas": passive_alpha,
        "ranged_mob_textures": ranged, "ranged_mob_texture_alphas": ranged_alpha,
        "projectile_textures": projectile, "projectile_texture_alphas": projectile_alpha,
        "night_noise_intensity_texture": np.repeat(normalised[:, :, None], 3, axis=2),
        "potion_textures": np.stack([images.rgb(f, small) for f in POTION_FILES]),
        "book_texture": images.rgb("book.png", small),
        "fireball_inv_texture": images.rgb("fireball.png", small),
        "iceball_inv_texture": images.rgb("iceball.png", small),
        "xp_texture": images.rgb("xp.png", small),
        "dex_texture": images.rgb("dexterity.png", small),
        "str_texture": images.rgb("strength.png", small),
        "int_texture": images.rgb("intelligence.png", small),
        "armour_enchantment_textures": np.stack([np.stack([no_enchantment] * 4)] + [
            np.stack([images.rgba(f"{piece}_{kind}_enchantment.png", small) for piece in ARMOUR_PIECES])
            for kind in ("fire", "ice")]),
        "sword_enchantment_textures": np.stack(
            [no_enchantment] + [images.rgba(f"sword_{kind}_enchantment.png", small) for kind in ("fire", "ice")]),
        "arrow_enchantment_textures": np.stack(
            [no_enchantment] + [images.rgba(f"arrow_{kind}_enchantment.png", small) for kind in ("fire", "ice")]),
    })


def _classic_textures(images: _Images, block: int) -> dict[str, np.ndarray]:
    small, digit = int(block * 0.8), int(block * 0.6)
    blocks = np.stack([images.rgb(f, block) for f in BLOCK_FILES[:CLASSIC_NUM_BLOCKS]])
    blocks[OUT_OF_BOUNDS] = 128

    def fractional_alpha(rgba):
        return np.repeat(rgba[:, :, 3:4].astype(np.float32) / np.float32(255), 3, axis=2)

    def mob(name):
        rgba = images.rgba(name, block, clamp_alpha=False)
        return rgba[:, :, :3], fractional_alpha(rgba)

    digits = [np.zeros((digit, digit, 4), np.int64)] + [images.rgba(f"{k}.png", digit) for k in range(1, 10)]
    players = [images.rgba(f, block, clamp_alpha=False) for f in PLAYER_FILES]
    zombie, zombie_alpha = mob("zombie.png")
    cow, cow_alpha = mob("cow.png")
    skeleton, skeleton_alpha = mob("skeleton.png")
    arrow = images.rgba("arrow-up.png", block)
    rows, cols = _view_size(CLASSIC, block)
    # float64 as upstream computes it (numpy), rounded to float32 once
    xs, ys = np.meshgrid(np.linspace(-1, 1, rows), np.linspace(-1, 1, cols))
    intensity = 1 - np.exp(-0.5 * (xs**2 + ys**2) / (0.5**2)).T
    return _f32({
        "block_textures": blocks,
        "smaller_block_textures": np.stack([images.rgb(f, small) for f in BLOCK_FILES[:CLASSIC_NUM_BLOCKS]]),
        "player_textures": np.stack([p[:, :, :3] for p in players]),
        "player_textures_alpha": np.stack([fractional_alpha(p) for p in players]),
        "number_textures": np.stack([t[:, :, :3] * _alpha3(t) for t in digits]),
        "number_textures_alpha": np.stack([_alpha3(t) for t in digits]),
        "health_texture": images.rgb("health.png", small),
        "hunger_texture": images.rgb("food.png", small),
        "thirst_texture": images.rgb("drink.png", small),
        "energy_texture": images.rgb("energy.png", small),
        "wood_pickaxe_texture": images.rgb("wood_pickaxe.png", small),
        "stone_pickaxe_texture": images.premultiplied("stone_pickaxe.png", small),
        "iron_pickaxe_texture": images.premultiplied("iron_pickaxe.png", small),
        "wood_sword_texture": images.premultiplied("wood_sword.png", small),
        "stone_sword_texture": images.premultiplied("stone_sword.png", small),
        "iron_sword_texture": images.premultiplied("iron_sword.png", small),
        "sapling_texture": images.rgb("sapling.png", small),
        "zombie_texture": zombie, "zombie_texture_alpha": zombie_alpha,
        "cow_texture": cow, "cow_texture_alpha": cow_alpha,
        "skeleton_texture": skeleton, "skeleton_texture_alpha": skeleton_alpha,
        "arrow_texture": arrow[:, :, :3] * arrow[:, :, 3:4], "arrow_texture_alpha": _alpha3(arrow),
        "night_noise_intensity_texture": np.repeat(intensity[:, :, None], 3, axis=2),
    })


_BUILDERS = {FULL: _full_textures, CLASSIC: _classic_textures}
_MEMORY: dict[tuple[str, int], dict[str, np.ndarray]] = {}
_LOCK = threading.Lock()


def _check_block(block: int) -> int:
    if isinstance(block, (bool, np.bool_)) or not isinstance(block, (int, np.integer)) or not 3 <= block <= 256:
        raise ValueError(f"block_size must be an int in [3, 256] (pixels per map cell), got {block!r}")
    return int(block)


def textures(game: str, block_size: int) -> dict[str, np.ndarray]:
    """`game`'s textures at `block_size` pixels per cell as float32 arrays named as upstream's
    load_all_textures_given_size names them (those the renderer reads). Cached in memory, and
    on disk under cache_dir()."""
    block = _check_block(block_size)
    directory = asset_dir(game)
    with _LOCK:
        if (game, block) in _MEMORY:
            return _MEMORY[(game, block)]
        images = _Images(directory)
        # the key: the builder's format, the distribution's version and every image's bytes
        digest = hashlib.sha256(f"{_FORMAT}:{game}:{block}:{importlib.metadata.version(DISTRIBUTION)}".encode())
        for path in sorted(directory.glob("*.png")):
            digest.update(path.name.encode())
            digest.update(images.bytes_of(path.name))
        path = cache_dir() / f"textures-{game}-{block}-{digest.hexdigest()[:20]}.npz"
        result = _read_cache(path)
        if result is None:
            result = _BUILDERS[game](images, block)
            _write_cache(path, result)
        _MEMORY[(game, block)] = result
        return result


def _read_cache(path: Path) -> dict[str, np.ndarray] | None:
    try:
        with np.load(path) as data:
            return {name: data[name] for name in data.files}
    except (OSError, ValueError, KeyError):  # absent, unreadable or truncated: rebuild
        return None


def _write_cache(path: Path, arrays: dict[str, np.ndarray]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        with open(partial, "wb") as f:
            np.savez(f, **arrays)
        os.replace(partial, path)  # readers never see a half-written file
    except OSError:
        pass  # an unwritable cache only costs a rebuild next time


def craftax_textures(block_size: int = 10) -> dict[str, np.ndarray]:
    """The full game's textures (Craftax-Pixels-v1 renders at 10 pixels a cell)."""
    return textures(FULL, block_size)


def classic_textures(block_size: int = 7) -> dict[str, np.ndarray]:
    """Craftax-Classic's textures (Craftax-Classic-Pixels-v1 renders at 7 pixels a cell)."""
    return textures(CLASSIC, block_size)
