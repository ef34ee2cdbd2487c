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
 * out-of-range drops the write), so it can clear an earlier mob's mark of its class. */
static inline CRAFTAX_HD void craftax_classic_obs_add_mob(float *obs, const CraftaxClassicState *s,
                                                         const int32_t pos[2], uint8_t mask, int channel) {
    const int32_t l0 = pos[0] - s->player_position[0] + CRAFTAX_CLASSIC_OBS_ROWS / 2;
    const int32_t l1 = pos[1] - s->player_position[1] + CRAFTAX_CLASSIC_OBS_COLS / 2;
    const int on_screen = l0 >= 0 && l0 < CRAFTAX_CLASSIC_OBS_ROWS && l1 >= 0 && l1 < CRAFTAX_CLASSIC_OBS_COLS && mask;
    const int32_t x = craftax_jwrite(l0, CRAFTAX_CLASSIC_OBS_ROWS), y = craftax_jwrite(l1, CRAFTAX_CLASSIC_OBS_COLS);
    if (x < 0 || y < 0) return;
    obs[(x * CRAFTAX_CLASSIC_OBS_COLS + y) * CRAFTAX_CLASSIC_OBS_CHANNELS + channel] = on_screen ? 1.0f : 0.0f;
}

/* lax.dynamic_slice's start on an axis of `size`: clamped so the window fits (the player's
 * view never needs it: its start stays inside the padding). */
static inline CRAFTAX_HD int32_t craftax_dynamic_slice_start_clamp(int32_t start, int32_t size, int32_t window) {
    return craftax_min_i32(craftax_max_i32(start, 0), size - window);
}

/* renderer.py:render_craftax_symbolic into obs[CRAFTAX_CLASSIC_OBS_SIZE]. */
static inline CRAFTAX_HD void craftax_classic_render_symbolic(const CraftaxClassicState *s, float *obs) {
    /* dynamic_slice of the map padded by MAX_OBS_DIM + 2 = 11 cells of OUT_OF_BOUNDS */
    const int pad = 11, padded = CRAFTAX_CLASSIC_MAP_SIZE + 2 * pad;
    const int32_t start0 = craftax_dynamic_slice_start_clamp(s->player_position[0] - CRAFTAX_CLASSIC_OBS_ROWS / 2 + pad,
                                                            padded, CRAFTAX_CLASSIC_OBS_ROWS) - pad;
    const int32_t start1 = craftax_dynamic_slice_start_clamp(s->player_position[1] - CRAFTAX_CLASSIC_OBS_COLS / 2 + pad,
                                                            padded, CRAFTAX_CLASSIC_OBS_COLS) - pad;
    memset(obs, 0, sizeof(float) * CRAFTAX_CLASSIC_OBS_MAP_SIZE);
    for (int x = 0; x < CRAFTAX_CLASSIC_OBS_ROWS; x++)
        for (int y = 0; y < CRAFTAX_CLASSIC_OBS_COLS; y++) {
            const int32_t wx = start0 + x, wy = start1 + y;
            const int in_map = wx >= 0 && wx < CRAFTAX_CLASSIC_MAP_SIZE && wy >= 0 && wy < CRAFTAX_CLASSIC_MAP_SIZE;
            const int block = in_map ? s->map[wx][wy] : BLOCK_OUT_OF_BOUNDS;
            obs[(x * CRAFTAX_CLASSIC_OBS_COLS + y) * CRAFTAX_CLASSIC_OBS_CHANNELS + block] = 1.0f;
        }
    const int mobs0 = CRAFTAX_CLASSIC_NUM_BLOCK_TYPES;
    for (int i = 0; i < CRAFTAX_CLASSIC_MAX_ZOMBIES; i++)
        craftax_classic_obs_add_mob(obs, s, s->zombies.position[i], s->zombies.mask[i], mobs0 + 0);
    for (int i = 0; i < CRAFTAX_CLASSIC_MAX_COWS; i++)
        craftax_classic_obs_add_mob(obs, s, s->cows.position[i], s->cows.mask[i], mobs0 + 1);
    for (int i = 0; i < CRAFTAX_CLASSIC_MAX_SKELETONS; i++)
        craftax_classic_obs_add_mob(obs, s, s->skeletons.position[i], s->skeletons.mask[i], mobs0 + 2);
    for (int i = 0; i < CRAFTAX_CLASSIC_MAX_ARROWS; i++)
        craftax_classic_obs_add_mob(obs, s, s->arrows.position[i], s->arrows.mask[i], mobs0 + 3);

    float *v = obs + CRAFTAX_CLASSIC_OBS_MAP_SIZE;
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

#endif
