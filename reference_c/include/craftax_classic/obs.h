/* craftax_classic/obs.h: render_craftax_symbolic of craftax/craftax_classic/renderer.py,
 * the 1,345-float symbolic observation: a 7 x 9 view of 21 channels (17 block one-hot, then
 * zombie, cow, skeleton, arrow), 12 inventory counts and 4 intrinsics (as float16 / 10),
 * the direction one-hot, light level and is_sleeping.
 */
#ifndef CRAFTAX_CLASSIC_OBS_H
#define CRAFTAX_CLASSIC_OBS_H

#include "craftax/game_logic_utils.h"
#include "craftax_classic/state.h"

/* float32 x rounded to the nearest float16 (ties to even), for 2^-14 <= |x| < 65504 and
 * x = 0: the range of every count / 10 the obs shows. */
static inline CRAFTAX_HD float craftax_classic_round_f16(float x) {
    uint32_t u = craftax_f32_bits(x);
    u += 0xFFFu + ((u >> 13) & 1u);
    return craftax_bits_f32(u & ~0x1FFFu);
}

/* `jnp.array([...]).astype(float16) / 10.0`: XLA turns the float16 division by a constant
 * into a multiply by float16(0.1) = 0.0999755859375 (the product of two float16 values is
 * exact in float32, then rounded to float16); widened to float32 by the concatenation. So a
 * health of 7 shows as 0.69970703125, not float16(0.7) = 0.7001953125. */
#define CRAFTAX_CLASSIC_F16_TENTH 0.0999755859375f
static inline CRAFTAX_HD float craftax_classic_f16_div10(int32_t n) {
    return craftax_classic_round_f16(craftax_classic_round_f16((float)n) * CRAFTAX_CLASSIC_F16_TENTH);
}

/* mob_map.at[local][type].set(on_screen) for one mob: a masked or off-screen mob writes 0
 * where its local position lands after JAX's scatter indexing (a negative index wraps once,
 * out-of-range drops the write), so it can clear an earlier mob's mark of its class. Returns
 * the view cell written (x * OBS_COLS + y), or -1 for a dropped write; *value the value. */
static inline CRAFTAX_HD int craftax_classic_obs_mob_cell(const CraftaxClassicState *s, const int32_t pos[2],
                                                         uint8_t mask, int *value) {
    const int32_t l0 = pos[0] - s->player_position[0] + CRAFTAX_CLASSIC_OBS_ROWS / 2;
    const int32_t l1 = pos[1] - s->player_position[1] + CRAFTAX_CLASSIC_OBS_COLS / 2;
    *value = l0 >= 0 && l0 < CRAFTAX_CLASSIC_OBS_ROWS && l1 >= 0 && l1 < CRAFTAX_CLASSIC_OBS_COLS && mask;
    const int32_t x = craftax_jwrite(l0, CRAFTAX_CLASSIC_OBS_ROWS), y = craftax_jwrite(l1, CRAFTAX_CLASSIC_OBS_COLS);
    return x < 0 || y < 0 ? -1 : x * CRAFTAX_CLASSIC_OBS_COLS + y;
}

/* lax.dynamic_slice's start on an axis of `size`: clamped so the window fits (the player's
 * view never needs it: its start stays inside the padding). */
static inline CRAFTAX_HD int32_t craftax_dynamic_slice_start_clamp(int32_t start, int32_t size, int32_t window) {
    return craftax_min_i32(craftax_max_i32(start, 0), size - window);
}

/* The block of view cell (x, y): a dynamic_slice of the map padded by MAX_OBS_DIM + 2 = 11
 * cells of OUT_OF_BOUNDS. */
static inline CRAFTAX_HD int craftax_classic_obs_block(const CraftaxClassicState *s, int x, int y) {
    const int pad = 11, padded = CRAFTAX_CLASSIC_MAP_SIZE + 2 * pad;
    const int32_t start0 = craftax_dynamic_slice_start_clamp(s->player_position[0] - CRAFTAX_CLASSIC_OBS_ROWS / 2 + pad,
                                                            padded, CRAFTAX_CLASSIC_OBS_ROWS) - pad;
    const int32_t start1 = craftax_dynamic_slice_start_clamp(s->player_position[1] - CRAFTAX_CLASSIC_OBS_COLS / 2 + pad,
                                                            padded, CRAFTAX_CLASSIC_OBS_COLS) - pad;
    const int32_t wx = start0 + x, wy = start1 + y;
    const int in_map = wx >= 0 && wx < CRAFTAX_CLASSIC_MAP_SIZE && wy >= 0 && wy < CRAFTAX_CLASSIC_MAP_SIZE;
    return in_map ? s->map[wx][wy] : BLOCK_OUT_OF_BOUNDS;
}

/* The mobs' (position, mask) in the order the renderer scatters them; channel
 * NUM_BLOCK_TYPES + class (zombie, cow, skeleton, arrow). */
#define CRAFTAX_CLASSIC_OBS_NUM_MOBS \
    (CRAFTAX_CLASSIC_MAX_ZOMBIES + CRAFTAX_CLASSIC_MAX_COWS + CRAFTAX_CLASSIC_MAX_SKELETONS + CRAFTAX_CLASSIC_MAX_ARROWS)
static inline CRAFTAX_HD const int32_t *craftax_classic_obs_mob(const CraftaxClassicState *s, int k, uint8_t *mask,
                                                               int *mob_class) {
    if (k < 3) {
        *mask = s->zombies.mask[k];
        *mob_class = 0;
        return s->zombies.position[k];
    }
    if (k < 6) {
        *mask = s->cows.mask[k - 3];
        *mob_class = 1;
        return s->cows.position[k - 3];
    }
    if (k < 8) {
        *mask = s->skeletons.mask[k - 6];
        *mob_class = 2;
        return s->skeletons.position[k - 6];
    }
    *mask = s->arrows.mask[k - 8];
    *mob_class = 3;
    return s->arrows.position[k - 8];
}

/* The 22 floats after the view: 12 inventory counts and 4 intrinsics (float16 / 10), the
 * direction one-hot, light level, is_sleeping. */
static inline CRAFTAX_HD void craftax_classic_obs_scalars(const CraftaxClassicState *s, float *v) {
    const CraftaxClassicInventory *inv = &s->inventory;
    const int32_t counts[16] = {inv->wood,          inv->stone,         inv->coal,         inv->iron,
                                inv->diamond,       inv->sapling,       inv->wood_pickaxe, inv->stone_pickaxe,
                                inv->iron_pickaxe,  inv->wood_sword,    inv->stone_sword,  inv->iron_sword,
                                s->player_health,   s->player_food,     s->player_drink,   s->player_energy};
    for (int k = 0; k < 16; k++) v[k] = craftax_classic_f16_div10(counts[k]);
    for (int k = 0; k < 4; k++) v[16 + k] = s->player_direction - 1 == k ? 1.0f : 0.0f;
    v[20] = s->light_level;
    v[21] = s->is_sleeping ? 1.0f : 0.0f;
}

/* renderer.py:render_craftax_symbolic into obs[CRAFTAX_CLASSIC_OBS_SIZE]. */
static inline CRAFTAX_HD void craftax_classic_render_symbolic(const CraftaxClassicState *s, float *obs) {
    memset(obs, 0, sizeof(float) * CRAFTAX_CLASSIC_OBS_MAP_SIZE);
    for (int x = 0; x < CRAFTAX_CLASSIC_OBS_ROWS; x++)
        for (int y = 0; y < CRAFTAX_CLASSIC_OBS_COLS; y++)
            obs[(x * CRAFTAX_CLASSIC_OBS_COLS + y) * CRAFTAX_CLASSIC_OBS_CHANNELS + craftax_classic_obs_block(s, x, y)] =
                1.0f;
    for (int k = 0; k < CRAFTAX_CLASSIC_OBS_NUM_MOBS; k++) {
        uint8_t mask;
        int mob_class, value;
        const int32_t *pos = craftax_classic_obs_mob(s, k, &mask, &mob_class);
        const int cell = craftax_classic_obs_mob_cell(s, pos, mask, &value);
        if (cell >= 0)
            obs[cell * CRAFTAX_CLASSIC_OBS_CHANNELS + CRAFTAX_CLASSIC_NUM_BLOCK_TYPES + mob_class] = value ? 1.0f : 0.0f;
    }
    craftax_classic_obs_scalars(s, obs + CRAFTAX_CLASSIC_OBS_MAP_SIZE);
}

#endif
