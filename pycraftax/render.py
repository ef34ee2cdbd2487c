"""Pictures and videos of Craftax episodes for people, in upstream's own textures.

Frames come from the textured renderer of pycraftax.pixels (the C renderer that also makes the
pixel envs' observations, at a human block size): view="local" is the player's view with the
inventory under it, as upstream's play window draws it; view="floor" the whole floor the
player is on. The textures are read from the installed craftax distribution (pycraftax.textures:
`pip install --no-deps craftax==1.6.1` where it is missing).

    frames = [render_frame(env.get_state(), 0)]       # uint8 [H, W, 3]
    save_video("episode.gif", frames, fps=8)          # or .mp4, with imageio-ffmpeg installed

`pycraftax render` (cli.py) records an episode of a trained policy or of random actions.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

# Block type names in upstream's BlockType order (constants.py, craftax 1.6.1).
BLOCK_NAMES: tuple[str, ...] = (
    "INVALID", "OUT_OF_BOUNDS", "GRASS", "WATER", "STONE", "TREE", "WOOD", "PATH", "COAL", "IRON", "DIAMOND",
    "CRAFTING_TABLE", "FURNACE", "SAND", "LAVA", "PLANT", "RIPE_PLANT", "WALL", "DARKNESS", "WALL_MOSS", "STALAGMITE",
    "SAPPHIRE", "RUBY", "CHEST", "FOUNTAIN", "FIRE_GRASS", "ICE_GRASS", "GRAVEL", "FIRE_TREE", "ICE_SHRUB",
    "ENCHANTMENT_TABLE_FIRE", "ENCHANTMENT_TABLE_ICE", "NECROMANCER", "GRAVE", "GRAVE2", "GRAVE3",
    "NECROMANCER_VULNERABLE",
)
DEFAULT_BLOCK = 16  # the images' own size: each texture pixel one picture pixel
VIDEO_FORMATS = (".gif", ".mp4")


def is_classic(state: dict) -> bool:
    """Whether a state dict is Craftax-Classic's (its mobs are zombies, cows, skeletons)."""
    return "zombies.position" in state


def render_frame(state: dict, env: int = 0, view: str = "local", tile: int = DEFAULT_BLOCK) -> np.ndarray:
    """uint8 [H, W, 3] picture of env `env` of a batched state dict (env.get_state() of either
    game) at `tile` pixels a cell: view="local" the player's view with the inventory,
    "floor" the whole floor (pycraftax.pixels)."""
    from pycraftax import _state, classic_state, pixels

    if view not in pixels.VIEWS:
        raise ValueError(f"view must be one of {list(pixels.VIEWS)}, got {view!r}")
    block = pixels.check_block_size(tile)
    classic = is_classic(state)
    table = classic_state.TABLE if classic else _state.TABLE
    one = {name: np.asarray(value)[env:env + 1] for name, value in state.items()}
    raw = np.zeros((1, classic_state.STATE_SIZE if classic else _state.STATE_SIZE), dtype=np.uint8)
    table.write_state(raw, table.validate_state(one, 1))
    game = pixels.CLASSIC if classic else pixels.FULL
    if view == "floor":
        return pixels.floor_picture(game, raw, block)
    return np.clip(pixels.render_states(game, raw, block)[0], 0.0, 255.0).astype(np.uint8)


def _check_frames(frames: list[np.ndarray]) -> list[np.ndarray]:
    if not frames:
        raise ValueError("frames is empty: nothing to save")
    frames = [np.asarray(f) for f in frames]
    first = frames[0].shape
    for i, f in enumerate(frames):
        if f.dtype != np.uint8 or f.ndim != 3 or f.shape[2] != 3 or f.shape != first:
            raise ValueError(f"frames[{i}] must be uint8 [H, W, 3] of the first frame's size {first}, got "
                             f"{f.dtype} {f.shape}")
    return frames


def save_gif(path: str, frames: list[np.ndarray], fps: float = 8.0) -> None:
    """Write frames (uint8 [H, W, 3], same size) as a looping GIF."""
    from PIL import Image

    if fps <= 0:
        raise ValueError(f"fps must be > 0, got {fps}")
    images = [Image.fromarray(f) for f in _check_frames(frames)]
    images[0].save(path, save_all=True, append_images=images[1:], duration=int(round(1000 / fps)), loop=0)


def mp4_writer_problem() -> str | None:
    """Why MP4 videos cannot be written here (None when they can): imageio's ffmpeg plugin
    needs the imageio-ffmpeg package, which ships ffmpeg."""
    try:
        import imageio_ffmpeg  # noqa: F401
        import imageio.v2  # noqa: F401
    except ImportError:
        return "MP4 needs imageio-ffmpeg: pip install imageio-ffmpeg (or write a .gif)"
    return None


def save_mp4(path: str, frames: list[np.ndarray], fps: float = 8.0) -> None:
    """Write frames (uint8 [H, W, 3], same size) as an H.264 MP4 (imageio-ffmpeg). Frames of an
    odd height or width get one black row or column, as the codec's 4:2:0 colour needs."""
    problem = mp4_writer_problem()
    if problem:
        raise RuntimeError(problem)
    import imageio.v2 as imageio

    if fps <= 0:
        raise ValueError(f"fps must be > 0, got {fps}")
    frames = _check_frames(frames)
    height, width = frames[0].shape[:2]
    pad = ((0, height % 2), (0, width % 2), (0, 0))
    with imageio.get_writer(path, format="FFMPEG", mode="I", fps=fps, codec="libx264", macro_block_size=1,
                            ffmpeg_log_level="error", output_params=["-pix_fmt", "yuv420p"]) as writer:
        for frame in frames:
            writer.append_data(np.pad(frame, pad))


def save_video(path: str, frames: list[np.ndarray], fps: float = 8.0) -> None:
    """save_gif or save_mp4, by the path's suffix (.gif or .mp4)."""
    suffix = Path(path).suffix.lower()
    if suffix not in VIDEO_FORMATS:
        raise ValueError(f"the video's file name must end in one of {list(VIDEO_FORMATS)}, got {path!r}")
    (save_mp4 if suffix == ".mp4" else save_gif)(path, frames, fps)


def record_episode(policy=None, seed: int = 0, max_steps: int = 1000, view: str = "local", tile: int = DEFAULT_BLOCK,
                   greedy: bool = False, progress=None, env_id: str | None = None) -> tuple[list[np.ndarray], dict]:
    """Play one episode of one C env and return (frames, summary). `policy`: flax-named
    weights (pycraftax.train.evaluation.load_policy) or None for uniformly random actions.
    env_id: the env played; by default the one the policy's input size reads, or full
    Craftax for random actions. Frames are textured pictures at `tile` pixels a cell
    (pycraftax.pixels.picture). The summary has the env id, the return, length, whether it
    ended, and the achievements unlocked with the step each first appeared."""
    import pycraftax
    from pycraftax import pixels
    from pycraftax.achievements import names_by_index

    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps}")
    if view not in pixels.VIEWS:
        raise ValueError(f"view must be one of {list(pixels.VIEWS)}, got {view!r}")
    pixels.check_block_size(tile)
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
    frames = [env.render(0, tile, view)]
    unlocked: dict[str, int] = {}
    total, ended, done = 0.0, False, np.zeros(1, bool)
    for t in range(1, max_steps + 1):
        action = act(obs, done)
        before = env.get_state()["achievements"][0].copy()
        obs, reward, terminated, truncated, info = env.step(action)
        total += float(reward[0])
        done = info["done"]
        if done[0]:  # the env has already started the next episode: its last frame is not drawn
            after = np.asarray(info["achievements"][0], bool)
            ended = True
        else:
            after = env.get_state()["achievements"][0]
            frames.append(env.render(0, tile, view))
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
