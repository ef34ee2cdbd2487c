"""`pycraftax play`: Craftax in a window, for a person to play or to watch an agent play.

The keys are upstream's play_craftax / play_craftax_classic key map; the picture is upstream's
textured render of the player's view and inventory (pycraftax.pixels), with the achievements
unlocked so far beside it. Backspace steps back through the last states (set_state), Escape or
closing the window quits. With an agent (`--agent fast-1e9`, `--checkpoint FILE`) the agent
plays; the person watches, pauses it with P and steps it with the right arrow while paused.

Needs pygame (`pip install "pycraftax[play]"`). Without a display, SDL_VIDEODRIVER=dummy runs it
headless (the tests script its key events that way).
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

import numpy as np

from pycraftax.params import CLASSIC_ENV_ID, CLASSIC_PIXELS_ENV_ID

# upstream's key maps: pygame key name -> action index
FULL_KEYS = {
    "q": 0, "w": 3, "d": 2, "s": 4, "a": 1, "space": 5, "1": 11, "2": 12, "3": 13, "4": 20, "5": 14, "6": 15,
    "7": 16, "8": 21, "t": 8, "tab": 6, "r": 7, "f": 9, "p": 10, "e": 17, ",": 19, ".": 18, "y": 22, "u": 23,
    "i": 24, "o": 25, "g": 26, "h": 27, "j": 28, "z": 29, "x": 30, "c": 31, "v": 32, "b": 33, "n": 34, "m": 35,
    "k": 36, "l": 37, "[": 38, "]": 39, "-": 40, "=": 41, ";": 42,
}
CLASSIC_KEYS = {
    "q": 0, "w": 3, "d": 2, "s": 4, "a": 1, "space": 5, "t": 8, "tab": 6, "r": 7, "f": 9, "p": 10, "1": 11,
    "2": 12, "3": 13, "4": 14, "5": 15, "6": 16,
}
NOOP = 0
PANEL_WIDTH = 260  # the achievements column beside the picture
BACKGROUND = (20, 20, 25)
TEXT = (230, 230, 230)


def pygame_problem() -> str | None:
    """Why play mode cannot start here (None when it can)."""
    try:
        import pygame  # noqa: F401
    except ImportError:
        return 'play mode needs pygame: pip install "pycraftax[play]" (or pip install pygame)'
    return None


@dataclass
class Game:
    """One env being played: the env (one C env), what the person sees (picture size, the
    achievements unlocked and when), and the states to step back to."""

    env_id: str = "Craftax-Symbolic-v1"
    seed: int = 0
    block_size: int = 32
    history: int = 100
    policy: object = None  # weights of a policy that plays instead of the person
    greedy: bool = False
    env: object = field(init=False)
    step_count: int = field(init=False, default=0)
    episode_return: float = field(init=False, default=0.0)
    unlocked: list = field(init=False, default_factory=list)  # (step, name), in order
    messages: collections.deque = field(init=False, default_factory=lambda: collections.deque(maxlen=4))

    def __post_init__(self):
        import pycraftax
        from pycraftax import pixels
        from pycraftax.achievements import names_by_index

        if isinstance(self.history, (bool, np.bool_)) or not isinstance(self.history, (int, np.integer)) \
                or self.history < 0:
            raise ValueError(f"history must be an int >= 0 (states kept to step back to), got {self.history!r}")
        pixels.check_block_size(self.block_size)
        if self.policy is not None:
            from pycraftax.train.policy import Policy

            self._model = Policy(self.policy)
            if self._model.env_id != self.env_id:
                raise ValueError(f"the agent plays {self._model.env_id!r}, not {self.env_id!r}")
        self.names = names_by_index(self.env_id)
        self.keys = CLASSIC_KEYS if self.env_id in (CLASSIC_ENV_ID, CLASSIC_PIXELS_ENV_ID) else FULL_KEYS
        self.env = pycraftax.make(self.env_id, num_envs=1, backend="c", seed=self.seed)
        self.obs, _ = self.env.reset(seed=self.seed)
        self._rng = np.random.default_rng(self.seed)
        self._past: collections.deque = collections.deque(maxlen=self.history)
        self._done = np.zeros(1, bool)
        if self.policy is not None:
            self._hidden = self._model.initial_state(1)

    # -- the game -------------------------------------------------------------------------------
    def state(self) -> dict:
        return self.env.get_state()

    def must_wait(self) -> bool:
        """Whether the player sleeps or rests: upstream's play loop then steps with NOOP."""
        s = self.state()
        return bool(s["is_sleeping"][0]) or bool(s.get("is_resting", np.zeros(1, bool))[0])

    def step(self, action: int) -> None:
        if not 0 <= action < self.env.num_actions:
            raise ValueError(f"action must be in [0, {self.env.num_actions}), got {action}")
        if self._past.maxlen:
            self._past.append((self.env.get_state(), self.env.key, self.step_count, self.episode_return,
                               len(self.unlocked), self._agent_memory()))
        before = self.state()["achievements"][0].copy()
        self.obs, reward, terminated, truncated, info = self.env.step(np.array([action], dtype=np.int32))
        self._done = info["done"]
        self.step_count += 1
        self.episode_return += float(reward[0])
        after = np.asarray(info["achievements"][0], bool) if self._done[0] else self.state()["achievements"][0]
        for k in np.flatnonzero(after & ~before):
            self.unlocked.append((self.step_count, self.names[k]))
        if self._done[0]:
            why = "died or won" if terminated[0] else "the time limit"
            self.messages.append(f"episode over ({why}): return {self.episode_return:.1f}; a new world")
            self.step_count, self.episode_return = 0, 0.0

    def step_back(self) -> bool:
        """Back to the state before the last step (False when none is kept)."""
        if not self._past:
            return False
        state, key, self.step_count, self.episode_return, unlocked, memory = self._past.pop()
        self.env.set_state(state)
        self.env.key = key
        del self.unlocked[unlocked:]
        self._restore_agent_memory(memory)
        self.obs = self.env.observe()
        return True

    def agent_action(self) -> int:
        self._hidden, logits = self._model.step(self.obs, self._done, self._hidden)
        return int(self._model.act(self._rng, logits, self.greedy)[0])

    def _agent_memory(self):
        return None if self.policy is None else (self._hidden, self._done.copy())

    def _restore_agent_memory(self, memory) -> None:
        if memory is not None:
            self._hidden, self._done = memory

    def picture(self) -> np.ndarray:
        return self.env.render(0, self.block_size)

    def close(self) -> None:
        self.env.close()


class Window:
    """The pygame window of a Game: the picture, the achievements, the controls."""

    def __init__(self, game: Game, fps: float = 15.0):
        import pygame

        self.pygame, self.game, self.fps = pygame, game, fps
        pygame.display.init()  # the display and fonts only: no sound is played
        pygame.font.init()
        pygame.key.set_repeat(250, 75)
        height, width, _ = game.picture().shape
        self.size = (width + PANEL_WIDTH, max(height, 360))
        self.screen = pygame.display.set_mode(self.size)
        pygame.display.set_caption(f"pycraftax play: {game.env_id}")
        self.font = pygame.font.Font(None, 20)
        self.clock = pygame.time.Clock()
        self.paused = False
        self.quit = False

    def handle(self, events) -> None:
        """Apply one frame's events: a key of the key map steps the game (unless an agent plays),
        Backspace steps back, P pauses the agent and the right arrow steps it while paused."""
        pg, game = self.pygame, self.game
        for event in events:
            if event.type == pg.QUIT or (event.type == pg.KEYDOWN and event.key == pg.K_ESCAPE):
                self.quit = True
            elif event.type == pg.KEYDOWN and event.key == pg.K_BACKSPACE:
                if not game.step_back():
                    game.messages.append("no earlier state kept")
            elif event.type == pg.KEYDOWN and game.policy is not None:
                if event.key == pg.K_p:
                    self.paused = not self.paused
                elif event.key == pg.K_RIGHT and self.paused:
                    game.step(game.agent_action())
            elif event.type == pg.KEYDOWN and game.policy is None:
                action = game.keys.get(pg.key.name(event.key))
                if action is not None and not game.must_wait():
                    game.step(action)
        if self.quit:
            return
        if game.policy is not None and not self.paused:
            game.step(game.agent_action())
        elif game.policy is None and game.must_wait():
            game.step(NOOP)  # asleep or resting: time passes, as upstream's loop does

    def draw(self) -> None:
        pg, game = self.pygame, self.game
        self.screen.fill(BACKGROUND)
        picture = game.picture()
        self.screen.blit(pg.surfarray.make_surface(picture.transpose(1, 0, 2)), (0, 0))
        x, y = picture.shape[1] + 10, 8
        who = "agent" + (" (paused: P, right arrow steps)" if self.paused else " (P pauses)") \
            if game.policy is not None else "you"
        lines = [f"{game.env_id}", f"player: {who}", f"step {game.step_count}, return {game.episode_return:.1f}",
                 f"achievements {len(game.unlocked)} / {len(game.names)}:"]
        lines += [f"  {step:>5}  {name.lower()}" for step, name in game.unlocked[-14:]]
        lines += [""] + list(game.messages) + ["", "Backspace: step back   Esc: quit"]
        for line in lines:
            self.screen.blit(self.font.render(line, True, TEXT), (x, y))
            y += 18
        pg.display.flip()

    def frame(self, events=None) -> None:
        self.handle(self.pygame.event.get() if events is None else events)
        if not self.quit:
            self.draw()
        self.clock.tick(self.fps)

    def close(self) -> None:
        self.pygame.quit()


def play(game: Game, fps: float = 15.0, max_frames: int | None = None) -> Game:
    """Run the window until the person quits (or for max_frames frames)."""
    window = Window(game, fps)
    try:
        frames = 0
        while not window.quit and (max_frames is None or frames < max_frames):
            window.frame()
            frames += 1
    finally:
        window.close()
    return game


def controls(env_id: str) -> list[str]:
    """The key map as lines 'key: action'."""
    keys = CLASSIC_KEYS if env_id in (CLASSIC_ENV_ID, CLASSIC_PIXELS_ENV_ID) else FULL_KEYS
    names = ACTION_NAMES_CLASSIC if keys is CLASSIC_KEYS else ACTION_NAMES
    return [f"{key}: {names[action].lower()}" for key, action in keys.items()]


ACTION_NAMES = (
    "NOOP", "LEFT", "RIGHT", "UP", "DOWN", "DO", "SLEEP", "PLACE_STONE", "PLACE_TABLE", "PLACE_FURNACE", "PLACE_PLANT",
    "MAKE_WOOD_PICKAXE", "MAKE_STONE_PICKAXE", "MAKE_IRON_PICKAXE", "MAKE_WOOD_SWORD", "MAKE_STONE_SWORD",
    "MAKE_IRON_SWORD", "REST", "DESCEND", "ASCEND", "MAKE_DIAMOND_PICKAXE", "MAKE_DIAMOND_SWORD", "MAKE_IRON_ARMOUR",
    "MAKE_DIAMOND_ARMOUR", "SHOOT_ARROW", "MAKE_ARROW", "CAST_FIREBALL", "CAST_ICEBALL", "PLACE_TORCH",
    "DRINK_POTION_RED", "DRINK_POTION_GREEN", "DRINK_POTION_BLUE", "DRINK_POTION_PINK", "DRINK_POTION_CYAN",
    "DRINK_POTION_YELLOW", "READ_BOOK", "ENCHANT_SWORD", "ENCHANT_ARMOUR", "MAKE_TORCH", "LEVEL_UP_DEXTERITY",
    "LEVEL_UP_STRENGTH", "LEVEL_UP_INTELLIGENCE", "ENCHANT_BOW",
)
ACTION_NAMES_CLASSIC = ACTION_NAMES[:17]
