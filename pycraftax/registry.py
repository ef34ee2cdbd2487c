"""The env registry: which env ids and backends exist, and `make`, which builds one."""

from __future__ import annotations

import warnings

from pycraftax.params import CLASSIC_ENV_ID, CLASSIC_PIXELS_ENV_ID, CRAFTAX_ENV_ID, CRAFTAX_PIXELS_ENV_ID, split_params

__all__ = ["CLASSIC_ENV_ID", "CLASSIC_PIXELS_ENV_ID", "CRAFTAX_ENV_ID", "CRAFTAX_PIXELS_ENV_ID", "cuda_available",
           "list_envs", "make"]
_ENV_IDS = (CRAFTAX_ENV_ID, CLASSIC_ENV_ID, CRAFTAX_PIXELS_ENV_ID, CLASSIC_PIXELS_ENV_ID)
_CLASSIC_IDS = (CLASSIC_ENV_ID, CLASSIC_PIXELS_ENV_ID)
_PIXEL_IDS = (CRAFTAX_PIXELS_ENV_ID, CLASSIC_PIXELS_ENV_ID)
_BACKENDS = ("auto", "c", "cuda")
# The ids each backend builds
_IDS_OF_BACKEND = {"c": _ENV_IDS, "cuda": _ENV_IDS}


def list_envs(backend: str | None = None) -> list[str]:
    """Env ids this build provides (upstream's names); with backend="c" or "cuda", the ids
    that backend builds (whether a GPU is here or not: see cuda_available)."""
    if backend is None:
        return list(_ENV_IDS)
    if backend not in _IDS_OF_BACKEND:
        raise ValueError(f"unknown backend {backend!r}; choose one of {list(_IDS_OF_BACKEND)} (or None for all ids)")
    return list(_IDS_OF_BACKEND[backend])


def cuda_available() -> bool:
    """Whether backend="cuda" can be used here: cuda/build/libcraftax_cuda.so (or
    $PYCRAFTAX_CUDA_LIB) loads and a GPU is visible. `pycraftax.cuda_env.unavailable_reason()`
    says why not."""
    from pycraftax import cuda_env

    return cuda_env.available()


def make(env_id: str, num_envs: int = 1, backend: str = "auto", seed: int = 0, obs: str = "float",
         resets: str = "auto", reset_ratio: int | None = None, **params):
    """Create `num_envs` envs of `env_id`.

    resets: "auto" (default) resets each env that ends with a fresh world of its own, as
    upstream's CraftaxSymbolicEnv.step; "optimistic" is Craftax_Baselines'
    OptimisticResetVecEnvWrapper, the official PPO-RNN's default: num_envs / reset_ratio
    fresh worlds per step (reset_ratio defaults to min(16, num_envs) and must divide
    num_envs), shared by the envs that ended.

    obs: "float" (default) returns the symbolic obs, float32 [N, 8268]; "compact" (needs
    backend="cuda") returns compact uint8 records [N, 1008] that expand exactly to it
    (env.expand_obs() on the GPU, pycraftax.obs_compact.expand() in numpy; Classic's are
    [N, 224], expanded by env.expand_obs()).

    params are upstream EnvParams fields (max_timesteps, day_length, always_diamond,
    mob_despawn_distance, max_attribute, god_mode, fractal_noise_angles); StaticEnvParams
    fields are accepted only at upstream's defaults.

    "Craftax-Pixels-v1" and "Craftax-Classic-Pixels-v1" are the same games observed as upstream's
    pixel envs observe them: float32 [N, 130, 110, 3] and [N, 63, 63, 3] in [0, 1], the
    textured picture / 255 (textures from the installed craftax distribution:
    `pip install --no-deps craftax==1.6.1`; pycraftax.textures). backend="cuda" renders them on
    the GPU (pycraftax.cuda_pixels_env, equal to C on every pixel), as "auto" does where a GPU is.

    "Craftax-Classic-Symbolic-v1" (obs float32 [N, 1345], 17 actions, 22 achievements) takes
    craftax_classic's EnvParams fields instead (max_timesteps, day_length, always_diamond,
    zombie_health, cow_health, skeleton_health, mob_despawn_distance, spawn_cow_chance,
    spawn_zombie_base_chance, spawn_zombie_night_chance, spawn_skeleton_chance,
    fractal_noise_angles); it runs on both backends, "auto" picking CUDA where it is
    available as for the full game (pycraftax.classic_cuda_env.CudaClassicEnv).

    num_envs is any integer >= 1 (numpy integers too). A batch that does not fit in the
    memory it would use (host memory for "c", GPU memory for "cuda") raises MemoryError here,
    saying how many envs fit. Seeding, threads and spaces: pycraftax.vec_env.CraftaxVecEnv.
    """
    from pycraftax import rules, vec_env
    from pycraftax.jax_random import prng_key

    if isinstance(env_id, str) and rules.VARIANT_MARK in env_id:
        env_id = rules.official_id(env_id)  # this build's variant id ("...-rules-<fingerprint>") names its game
    if env_id not in _ENV_IDS:
        raise ValueError(f"unknown env id {env_id!r}; available: {list(_ENV_IDS)}")
    num_envs = vec_env.check_num_envs(num_envs)
    if backend not in _BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {list(_BACKENDS)}")
    vec_env.check_obs_mode(obs)
    classic = env_id in _CLASSIC_IDS
    pixel = env_id in _PIXEL_IDS
    if obs == "compact" and backend != "cuda":
        raise ValueError(f"obs='compact' needs backend='cuda' (got backend={backend!r})")
    if obs == "compact" and pixel:
        raise ValueError(f"obs='compact' encodes the symbolic obs; {env_id!r} has only obs='float'")
    env_params, static_params = split_params(params, classic=classic)
    vec_env.check_resets(resets, reset_ratio, num_envs)
    prng_key(seed)  # validates the seed before any allocation
    if backend in ("cuda", "auto"):
        from pycraftax import cuda_env

        reason = cuda_env.unavailable_reason()
        if reason is None:
            if pixel:
                from pycraftax.cuda_pixels_env import CudaClassicPixelsEnv, CudaPixelsEnv

                cuda_class = CudaClassicPixelsEnv if classic else CudaPixelsEnv
            elif classic:
                from pycraftax.classic_cuda_env import CudaClassicEnv as cuda_class
            else:
                cuda_class = cuda_env.CudaCraftaxEnv
            return cuda_class(num_envs, seed, env_params, static_params, obs=obs, resets=resets,
                              reset_ratio=reset_ratio)
        if backend == "cuda":
            raise RuntimeError(
                f"backend='cuda' is not available: {reason}; use backend='c' (or 'auto', which falls back to C)"
            )
        warnings.warn(
            f"pycraftax: no CUDA backend available ({reason}), using the C reference (backend='c')", stacklevel=2
        )

    if pixel:
        from pycraftax.pixels_env import CraftaxClassicPixelsEnv, CraftaxPixelsEnv

        c_class = CraftaxClassicPixelsEnv if classic else CraftaxPixelsEnv
    elif classic:
        from pycraftax.classic_env import CraftaxClassicEnv as c_class
    else:
        from pycraftax.env import CraftaxEnv as c_class
    return c_class(num_envs, seed, env_params, static_params, resets=resets, reset_ratio=reset_ratio)

