/* craftax/params.h: EnvParams of craftax/craftax/craftax_state.py.
 *
 * This header is also read by cffi's cdef (pycraftax/_build.py), so it holds plain
 * declarations with literal sizes only. Defaults (upstream's): max_timesteps 100000,
 * day_length 300, always_diamond 0, mob_despawn_distance 14, max_attribute 5,
 * god_mode 0, no noise-angle overrides; craftax_default_params() fills them.
 */
#ifndef CRAFTAX_PARAMS_H
#define CRAFTAX_PARAMS_H

#include <stdint.h>

/* fractal_noise_angles is four optional arrays (None upstream); has_angles[i] says
 * whether field i is given. Their shapes are the noise gradient grids of
 * generate_smoothworld: water (4,4), mountain (4,4), paths (7,25), trees (13,13). */
typedef struct {
    int32_t max_timesteps;
    int32_t day_length;
    int32_t always_diamond;
    int32_t mob_despawn_distance;
    int32_t max_attribute;
    int32_t god_mode;
    int32_t has_angles[4];
    float angles_water[16];
    float angles_mountain[16];
    float angles_path[175];
    float angles_tree[169];
} CraftaxParams;

#endif
