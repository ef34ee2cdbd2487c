/* craftax/obs.h: the symbolic observation, render_craftax_symbolic of
 * craftax/craftax/renderer.py: 8268 float32 = a 9x11 local view x 83 channels
 * (37 block one-hot, 5 item one-hot, 40 mob multi-hot, 1 visibility) + 51 scalars.
 */
#ifndef CRAFTAX_OBS_H
#define CRAFTAX_OBS_H

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "state.h"

static inline CRAFTAX_HD int craftax_is_boss_vulnerable(const CraftaxState *s) {
    const int l = s->player_level;
    int alive = 0;
    for (int i = 0; i < CRAFTAX_MAX_MELEE_MOBS; i++) alive += s->mobs[l].melee_mobs.mask[i];
    for (int i = 0; i < CRAFTAX_MAX_RANGED_MOBS; i++) alive += s->mobs[l].ranged_mobs.mask[i];
    return alive == 0 && s->boss_timesteps_to_spawn_this_round <= 0;
}

/* _add_mob_to_map: a scatter of `on_screen && mask` for every slot, dead or alive. A dead
 * or off-screen slot writes 0 and can erase a mob drawn before it; negative local
 * coordinates wrap once (JAX scatter) and coordinates still out of range are dropped.
 * Returns 0 for a dropped slot, else 1 with the view cell (r * 11 + c), the mob channel
 * (0..39) and the value to write. */
static inline CRAFTAX_HD int craftax_obs_mob_slot(const CraftaxState *s, const int32_t pos[2], uint8_t mask,
                                                  int32_t type_id, int mob_class, int *cell, int *channel,
                                                  int *on_screen) {
    const int32_t lx = pos[0] - s->player_position[0] + CRAFTAX_OBS_ROWS / 2;
    const int32_t ly = pos[1] - s->player_position[1] + CRAFTAX_OBS_COLS / 2;
    *on_screen = lx >= 0 && ly >= 0 && lx < CRAFTAX_OBS_ROWS && ly < CRAFTAX_OBS_COLS && mask;
    int32_t ix = lx < 0 ? lx + CRAFTAX_OBS_ROWS : lx;
    int32_t iy = ly < 0 ? ly + CRAFTAX_OBS_COLS : ly;
    int32_t ch = mob_class * CRAFTAX_NUM_MOB_TYPES + type_id;
    ch = ch < 0 ? ch + CRAFTAX_NUM_MOB_CLASSES * CRAFTAX_NUM_MOB_TYPES : ch;
    if (ix < 0 || iy < 0 || ix >= CRAFTAX_OBS_ROWS || iy >= CRAFTAX_OBS_COLS || ch < 0 ||
        ch >= CRAFTAX_NUM_MOB_CLASSES * CRAFTAX_NUM_MOB_TYPES)
        return 0;
    *cell = ix * CRAFTAX_OBS_COLS + iy;
    *channel = ch;
    return 1;
}

/* Byte layout of the compact record, see craftax_render_compact_lanes below. */
#define CRAFTAX_OBS_COMPACT_CELLS 208
#define CRAFTAX_OBS_COMPACT_SIZE 1008

/* The mob layer of the view, every slot of every mob class in upstream's scatter order,
 * into the float obs (`obs`) or the compact record's mob bits (`rec`), whichever is not NULL. */
static inline CRAFTAX_HD void craftax_obs_scatter_mob(float *obs, uint8_t *rec, const CraftaxState *s,
                                                      const int32_t pos[2], uint8_t mask, int32_t type_id,
                                                      int mob_class) {
    int cell, ch, on_screen;
    if (!craftax_obs_mob_slot(s, pos, mask, type_id, mob_class, &cell, &ch, &on_screen)) return;
    if (obs) {
        obs[cell * CRAFTAX_OBS_CHANNELS + 42 + ch] = on_screen ? 1.0f : 0.0f;
        return;
    }
    uint8_t *byte = rec + CRAFTAX_OBS_COMPACT_CELLS + cell * 8 + 3 + ch / 8;
    const uint8_t bit = (uint8_t)(1u << (ch % 8));
    *byte = on_screen ? (uint8_t)(*byte | bit) : (uint8_t)(*byte & ~bit);
}
/* The level's 14 mob slots in upstream's scatter order: melee 0-2, passive 3-5, ranged 6-7,
 * mob projectiles 8-10, player projectiles 11-13 (their obs class is that order's index). */
#define CRAFTAX_OBS_MOB_SLOTS                                                                                   \
    (CRAFTAX_MAX_MELEE_MOBS + CRAFTAX_MAX_PASSIVE_MOBS + CRAFTAX_MAX_RANGED_MOBS + CRAFTAX_MAX_MOB_PROJECTILES + \
     CRAFTAX_MAX_PLAYER_PROJECTILES)
static inline CRAFTAX_HD int craftax_obs_mob_slot_fields(const CraftaxLevelMobs *m, int slot, const int32_t **pos,
                                                         uint8_t *mask, int32_t *type_id) {
#define CRAFTAX_SLOT_OF(mobs, j) (*pos = (mobs).position[j], *mask = (mobs).mask[j], *type_id = (mobs).type_id[j])
    if (slot < CRAFTAX_MAX_MELEE_MOBS) return CRAFTAX_SLOT_OF(m->melee_mobs, slot), 0;
    slot -= CRAFTAX_MAX_MELEE_MOBS;
    if (slot < CRAFTAX_MAX_PASSIVE_MOBS) return CRAFTAX_SLOT_OF(m->passive_mobs, slot), 1;
    slot -= CRAFTAX_MAX_PASSIVE_MOBS;
    if (slot < CRAFTAX_MAX_RANGED_MOBS) return CRAFTAX_SLOT_OF(m->ranged_mobs, slot), 2;
    slot -= CRAFTAX_MAX_RANGED_MOBS;
    if (slot < CRAFTAX_MAX_MOB_PROJECTILES) return CRAFTAX_SLOT_OF(m->mob_projectiles, slot), 3;
    slot -= CRAFTAX_MAX_MOB_PROJECTILES;
    return CRAFTAX_SLOT_OF(m->player_projectiles, slot), 4;
#undef CRAFTAX_SLOT_OF
}
static inline CRAFTAX_HD void craftax_obs_scatter_mobs(float *obs, uint8_t *rec, const CraftaxState *s) {
    for (int slot = 0; slot < CRAFTAX_OBS_MOB_SLOTS; slot++) {
        const int32_t *pos;
        uint8_t mask;
        int32_t type_id;
        const int mob_class = craftax_obs_mob_slot_fields(&s->mobs[s->player_level], slot, &pos, &mask, &type_id);
        craftax_obs_scatter_mob(obs, rec, s, pos, mask, type_id, mob_class);
    }
}
/* The mob bits of the compact record `rec`, whose cells' mob bytes are 0. On the GPU with a
 * warp (lanes: common.h) each slot is a lane's: where slots hit the same cell and channel the
 * last in scatter order wins, and as the bits start at 0 only winners that write a 1 store. */
static inline CRAFTAX_HD void craftax_obs_scatter_mobs_compact_lanes(uint8_t *rec, const CraftaxState *s, int lane,
                                                                     int lanes) {
#ifdef __CUDA_ARCH__
    if (lanes > 1) {
        int cell = 0, ch = 0, on_screen = 0, dropped = 1;
        if (lane < CRAFTAX_OBS_MOB_SLOTS) {
            const int32_t *pos;
            uint8_t mask;
            int32_t type_id;
            const int mob_class = craftax_obs_mob_slot_fields(&s->mobs[s->player_level], lane, &pos, &mask, &type_id);
            dropped = !craftax_obs_mob_slot(s, pos, mask, type_id, mob_class, &cell, &ch, &on_screen);
        }
        const unsigned writers = __ballot_sync(0xffffffffu, !dropped);
        int sets = 0;
        if (!dropped) {
            const unsigned same_target = __match_any_sync(writers, cell * 64 + ch);
            sets = on_screen && lane == 31 - __clz(same_target);
        }
        /* one lane stores: several winners can share a byte */
        for (unsigned setters = __ballot_sync(0xffffffffu, sets); setters; setters &= setters - 1) {
            const int from = __ffs(setters) - 1;
            const int c = __shfl_sync(0xffffffffu, cell, from), h = __shfl_sync(0xffffffffu, ch, from);
            if (lane == 0) rec[CRAFTAX_OBS_COMPACT_CELLS + c * 8 + 3 + h / 8] |= (uint8_t)(1u << (h % 8));
        }
        return;
    }
#endif
    (void)lanes; /* one lane on a CPU */
    if (lane == 0) craftax_obs_scatter_mobs(0, rec, s);
}

/* x / 10 in upstream is computed by XLA as x * float32(0.1) when x
 * is a run-time value. In reset_env the intrinsics are compile-time constants (health 9,
 * food 9, ...) and XLA folds x / 10 with a true division: 9 / 10 = 0.9f where the
 * multiplication gives 0.90000004f. So upstream's obs of a fresh world is not the obs of
 * the same state rendered later; `folded` selects the reset-time rounding. */
static inline CRAFTAX_HD float craftax_div10(float x, int folded) { return folded ? x / 10.0f : x * 0.1f; }
static inline CRAFTAX_HD float craftax_sqrt_div10(int32_t n) { return sqrtf((float)n) * 0.1f; }

/* The 51 scalars after the map view, as a table: scalar k is one field read and one
 * conversion, so that a warp's lanes render them side by side (the obs kernel's lane 0 had
 * rendered all 51 one after another, each store through a uint8_t pointer making the next
 * field's load wait for it). */
enum {
    CRAFTAX_SCALAR_SQRT_DIV10,  /* int32 n: sqrt(n) * 0.1 */
    CRAFTAX_SCALAR_SCALED,      /* int32 n: n * (1 / arg), arg 1, 2 or 4 */
    CRAFTAX_SCALAR_DIV10_INT,   /* int32 n: craftax_div10(n) */
    CRAFTAX_SCALAR_DIV10_FLOAT, /* float x: craftax_div10(x) */
    CRAFTAX_SCALAR_FLOAT,       /* float x as it is */
    CRAFTAX_SCALAR_EQUALS,      /* int32 n: n == arg */
    CRAFTAX_SCALAR_FLAG,        /* uint8 b: b != 0 */
    CRAFTAX_SCALAR_LEVEL_CLEARED, /* monsters_killed[player_level] >= CRAFTAX_MONSTERS_KILLED_TO_CLEAR_LEVEL */
    CRAFTAX_SCALAR_BOSS_VULNERABLE
};
typedef struct {
    uint32_t offset; /* of the field in CraftaxState */
    uint8_t kind, arg;
} CraftaxObsScalar;
#define CRAFTAX_OBS_NUM_SCALARS 51
#define CRAFTAX_SCALAR_OF(field, k, kind, arg) {(uint32_t)(offsetof(CraftaxState, field) + 4 * (k)), kind, arg}
#define CRAFTAX_SCALAR_INV_SQRT(field, k) CRAFTAX_SCALAR_OF(inventory.field, k, CRAFTAX_SCALAR_SQRT_DIV10, 0)
#define CRAFTAX_SCALAR_INV_SCALED(field, k, divisor) CRAFTAX_SCALAR_OF(inventory.field, k, CRAFTAX_SCALAR_SCALED, divisor)
static CRAFTAX_LANE_TABLE CraftaxObsScalar CRAFTAX_OBS_SCALARS[CRAFTAX_OBS_NUM_SCALARS] = {
    CRAFTAX_SCALAR_INV_SQRT(wood, 0), CRAFTAX_SCALAR_INV_SQRT(stone, 0), CRAFTAX_SCALAR_INV_SQRT(coal, 0),
    CRAFTAX_SCALAR_INV_SQRT(iron, 0), CRAFTAX_SCALAR_INV_SQRT(diamond, 0), CRAFTAX_SCALAR_INV_SQRT(sapphire, 0),
    CRAFTAX_SCALAR_INV_SQRT(ruby, 0), CRAFTAX_SCALAR_INV_SQRT(sapling, 0), CRAFTAX_SCALAR_INV_SQRT(torches, 0),
    CRAFTAX_SCALAR_INV_SQRT(arrows, 0),
    CRAFTAX_SCALAR_INV_SCALED(books, 0, 2), CRAFTAX_SCALAR_INV_SCALED(pickaxe, 0, 4),
    CRAFTAX_SCALAR_INV_SCALED(sword, 0, 4),
    CRAFTAX_SCALAR_OF(sword_enchantment, 0, CRAFTAX_SCALAR_SCALED, 1),
    CRAFTAX_SCALAR_OF(bow_enchantment, 0, CRAFTAX_SCALAR_SCALED, 1), CRAFTAX_SCALAR_INV_SCALED(bow, 0, 1),
    CRAFTAX_SCALAR_INV_SQRT(potions, 0), CRAFTAX_SCALAR_INV_SQRT(potions, 1), CRAFTAX_SCALAR_INV_SQRT(potions, 2),
    CRAFTAX_SCALAR_INV_SQRT(potions, 3), CRAFTAX_SCALAR_INV_SQRT(potions, 4), CRAFTAX_SCALAR_INV_SQRT(potions, 5),
    CRAFTAX_SCALAR_OF(player_health, 0, CRAFTAX_SCALAR_DIV10_FLOAT, 0),
    CRAFTAX_SCALAR_OF(player_food, 0, CRAFTAX_SCALAR_DIV10_INT, 0),
    CRAFTAX_SCALAR_OF(player_drink, 0, CRAFTAX_SCALAR_DIV10_INT, 0),
    CRAFTAX_SCALAR_OF(player_energy, 0, CRAFTAX_SCALAR_DIV10_INT, 0),
    CRAFTAX_SCALAR_OF(player_mana, 0, CRAFTAX_SCALAR_DIV10_INT, 0),
    CRAFTAX_SCALAR_OF(player_xp, 0, CRAFTAX_SCALAR_DIV10_INT, 0),
    CRAFTAX_SCALAR_OF(player_dexterity, 0, CRAFTAX_SCALAR_DIV10_INT, 0),
    CRAFTAX_SCALAR_OF(player_strength, 0, CRAFTAX_SCALAR_DIV10_INT, 0),
    CRAFTAX_SCALAR_OF(player_intelligence, 0, CRAFTAX_SCALAR_DIV10_INT, 0),
    /* the direction one-hot: direction - 1 == i */
    CRAFTAX_SCALAR_OF(player_direction, 0, CRAFTAX_SCALAR_EQUALS, 1),
    CRAFTAX_SCALAR_OF(player_direction, 0, CRAFTAX_SCALAR_EQUALS, 2),
    CRAFTAX_SCALAR_OF(player_direction, 0, CRAFTAX_SCALAR_EQUALS, 3),
    CRAFTAX_SCALAR_OF(player_direction, 0, CRAFTAX_SCALAR_EQUALS, 4),
    CRAFTAX_SCALAR_INV_SCALED(armour, 0, 2), CRAFTAX_SCALAR_INV_SCALED(armour, 1, 2),
    CRAFTAX_SCALAR_INV_SCALED(armour, 2, 2), CRAFTAX_SCALAR_INV_SCALED(armour, 3, 2),
    CRAFTAX_SCALAR_OF(armour_enchantments, 0, CRAFTAX_SCALAR_SCALED, 1),
    CRAFTAX_SCALAR_OF(armour_enchantments, 1, CRAFTAX_SCALAR_SCALED, 1),
    CRAFTAX_SCALAR_OF(armour_enchantments, 2, CRAFTAX_SCALAR_SCALED, 1),
    CRAFTAX_SCALAR_OF(armour_enchantments, 3, CRAFTAX_SCALAR_SCALED, 1),
    CRAFTAX_SCALAR_OF(light_level, 0, CRAFTAX_SCALAR_FLOAT, 0),
    CRAFTAX_SCALAR_OF(is_sleeping, 0, CRAFTAX_SCALAR_FLAG, 0),
    CRAFTAX_SCALAR_OF(is_resting, 0, CRAFTAX_SCALAR_FLAG, 0),
    {(uint32_t)offsetof(CraftaxState, learned_spells), CRAFTAX_SCALAR_FLAG, 0},
    {(uint32_t)(offsetof(CraftaxState, learned_spells) + 1), CRAFTAX_SCALAR_FLAG, 0},
    CRAFTAX_SCALAR_OF(player_level, 0, CRAFTAX_SCALAR_DIV10_INT, 0),
    CRAFTAX_SCALAR_OF(monsters_killed, 0, CRAFTAX_SCALAR_LEVEL_CLEARED, 0),
    {0, CRAFTAX_SCALAR_BOSS_VULNERABLE, 0},
};
#undef CRAFTAX_SCALAR_INV_SQRT
#undef CRAFTAX_SCALAR_INV_SCALED
#undef CRAFTAX_SCALAR_OF

/* Scalar k (0..50). The field is loaded before the conversion branches, so that lanes on
 * different kinds wait for their loads together. */
static inline CRAFTAX_HD float craftax_obs_scalar(const CraftaxState *s, int k, int fresh_world) {
    const CraftaxObsScalar e = CRAFTAX_OBS_SCALARS[k];
    const char *field = (const char *)s + e.offset;
    if (e.kind == CRAFTAX_SCALAR_LEVEL_CLEARED) field += 4 * s->player_level;
    int32_t n = 0;
    float x = 0.0f;
    if (e.kind == CRAFTAX_SCALAR_FLAG)
        n = *(const uint8_t *)field;
    else if (e.kind == CRAFTAX_SCALAR_DIV10_FLOAT || e.kind == CRAFTAX_SCALAR_FLOAT)
        memcpy(&x, field, 4);
    else if (e.kind != CRAFTAX_SCALAR_BOSS_VULNERABLE)
        memcpy(&n, field, 4);
    switch (e.kind) {
    case CRAFTAX_SCALAR_SQRT_DIV10: return craftax_sqrt_div10(n);
    case CRAFTAX_SCALAR_SCALED: return (float)n * (e.arg == 4 ? 0.25f : e.arg == 2 ? 0.5f : 1.0f);
    case CRAFTAX_SCALAR_DIV10_INT: return craftax_div10((float)n, fresh_world);
    case CRAFTAX_SCALAR_DIV10_FLOAT: return craftax_div10(x, fresh_world);
    case CRAFTAX_SCALAR_FLOAT: return x;
    case CRAFTAX_SCALAR_EQUALS: return n == e.arg ? 1.0f : 0.0f;
    case CRAFTAX_SCALAR_FLAG: return n ? 1.0f : 0.0f;
    case CRAFTAX_SCALAR_LEVEL_CLEARED: return n >= CRAFTAX_MONSTERS_KILLED_TO_CLEAR_LEVEL ? 1.0f : 0.0f;
    default: return craftax_is_boss_vulnerable(s) ? 1.0f : 0.0f;
    }
}

/* The scalars into v[0..51), a lane's share of them (lanes: common.h). */
static inline CRAFTAX_HD void craftax_render_symbolic_scalars_lanes(const CraftaxState *s, float *v, int fresh_world,
                                                                    int lane, int lanes) {
    CRAFTAX_FOR_LANE(k, CRAFTAX_OBS_NUM_SCALARS, lane, lanes) v[k] = craftax_obs_scalar(s, k, fresh_world);
}
static inline CRAFTAX_HD void craftax_render_symbolic_scalars(const CraftaxState *s, float *obs, int fresh_world) {
    craftax_render_symbolic_scalars_lanes(s, obs + CRAFTAX_OBS_MAP_SIZE, fresh_world, 0, 1);
}

/* `fresh_world`: the state was just generated by reset_env (see craftax_div10).
 * Lanes (common.h): the zero fill and the 99 view cells are shared (a warp writes the
 * 33 KB coalesced) and so are the scalars; the mob scatter is lane 0's. */
static inline CRAFTAX_HD void craftax_render_symbolic_lanes(const CraftaxState *s, float *obs, int fresh_world,
                                                            int lane, int lanes) {
    const int level = s->player_level;
    const int32_t x0 = s->player_position[0] - CRAFTAX_OBS_ROWS / 2;
    const int32_t y0 = s->player_position[1] - CRAFTAX_OBS_COLS / 2;
    CRAFTAX_FOR_LANE(i, CRAFTAX_OBS_SIZE, lane, lanes) obs[i] = 0.0f;
    craftax_lanes_sync(lanes);

    /* Mob layer first, unmasked, exactly as the scatter builds it. */
    if (lane == 0) craftax_obs_scatter_mobs(obs, 0, s);
    craftax_lanes_sync(lanes);

    CRAFTAX_FOR_LANE(rc, CRAFTAX_OBS_ROWS * CRAFTAX_OBS_COLS, lane, lanes) {
        const int r = rc / CRAFTAX_OBS_COLS, c = rc % CRAFTAX_OBS_COLS;
        {
            float *cell = obs + (r * CRAFTAX_OBS_COLS + c) * CRAFTAX_OBS_CHANNELS;
            const int32_t x = x0 + r, y = y0 + c;
            /* Off the map the view is padded with light 0: the whole cell reads 0. */
            const int inside = x >= 0 && y >= 0 && x < CRAFTAX_MAP_SIZE && y < CRAFTAX_MAP_SIZE;
            const int visible = inside && s->light_map[level][x][y] > 0.05f;
            if (!visible) {
                for (int ch = 0; ch < CRAFTAX_OBS_CHANNELS; ch++) cell[ch] = 0.0f;
                continue;
            }
            const uint8_t block = s->map[level][x][y];
            const uint8_t item = s->item_map[level][x][y];
            if (block < CRAFTAX_NUM_BLOCK_TYPES) cell[block] = 1.0f;
            if (item < CRAFTAX_NUM_ITEM_TYPES) cell[CRAFTAX_NUM_BLOCK_TYPES + item] = 1.0f;
            cell[CRAFTAX_OBS_CHANNELS - 1] = 1.0f;
        }
    }
    craftax_render_symbolic_scalars_lanes(s, obs + CRAFTAX_OBS_MAP_SIZE, fresh_world, lane, lanes);
    craftax_lanes_sync(lanes);
}

static inline CRAFTAX_HD void craftax_render_symbolic(const CraftaxState *s, float *obs, int fresh_world) {
    craftax_render_symbolic_lanes(s, obs, fresh_world, 0, 1);
}

/* Compact observation record (the CUDA build's obs="compact"): CRAFTAX_OBS_COMPACT_SIZE bytes
 * per env that expand exactly to the 8268 floats (craftax_obs_compact_value):
 *   bytes [0, 204)   the 51 scalars, float32 (the obs' last 51 values, same bits);
 *   bytes [208, 1000) the 99 view cells (r * 11 + c), 8 bytes each: byte 0 the block (map
 *                    value), byte 1 the item, byte 2 1 when the cell is visible (else its 83
 *                    values are all 0), bytes 3..7 the 40 mob channels (obs channel 42 + k is
 *                    bit k % 8 of byte 3 + k / 8), as the mob scatter leaves them;
 *   bytes [1000, 1008) zero (16-byte records).
 * Mob bits of an invisible cell are kept as scattered; the expansion masks them. */
static inline CRAFTAX_HD void craftax_store_u64(uint8_t *p, uint64_t v) {
#ifdef __CUDA_ARCH__
    *(uint64_t *)p = v; /* 8-byte aligned by the layout */
#else
    memcpy(p, &v, 8);
#endif
}

/* The compact record of craftax_render_symbolic_lanes(s, ., fresh_world): same reads, same
 * order of the mob scatter. Lanes: cells, mob slots and scalars shared; ends synced. */
static inline CRAFTAX_HD void craftax_render_compact_lanes(const CraftaxState *s, uint8_t *rec, int fresh_world,
                                                           int lane, int lanes) {
    const int level = s->player_level;
    const int32_t x0 = s->player_position[0] - CRAFTAX_OBS_ROWS / 2;
    const int32_t y0 = s->player_position[1] - CRAFTAX_OBS_COLS / 2;
    CRAFTAX_FOR_LANE(rc, CRAFTAX_OBS_ROWS * CRAFTAX_OBS_COLS, lane, lanes) {
        const int r = rc / CRAFTAX_OBS_COLS, c = rc % CRAFTAX_OBS_COLS;
        const int32_t x = x0 + r, y = y0 + c;
        const int inside = x >= 0 && y >= 0 && x < CRAFTAX_MAP_SIZE && y < CRAFTAX_MAP_SIZE;
        uint64_t word = 0;
        if (inside) {
            const uint64_t visible = s->light_map[level][x][y] > 0.05f;
            word = (uint64_t)s->map[level][x][y] | (uint64_t)s->item_map[level][x][y] << 8 | visible << 16;
        }
        craftax_store_u64(rec + CRAFTAX_OBS_COMPACT_CELLS + rc * 8, word);
    }
    if (lane == 0) {
        for (int i = 204; i < CRAFTAX_OBS_COMPACT_CELLS; i++) rec[i] = 0;
        for (int i = CRAFTAX_OBS_COMPACT_CELLS + 99 * 8; i < CRAFTAX_OBS_COMPACT_SIZE; i++) rec[i] = 0;
    }
    craftax_lanes_sync(lanes);
    craftax_obs_scatter_mobs_compact_lanes(rec, s, lane, lanes);
    craftax_render_symbolic_scalars_lanes(s, (float *)(void *)rec, fresh_world, lane, lanes);
    craftax_lanes_sync(lanes);
}

/* The 83 channels of view cell `cell` as a 128-bit mask (bit ch = channel ch is 1). */
static inline CRAFTAX_HD void craftax_obs_compact_cell_mask(const uint8_t *rec, int cell, uint64_t *lo,
                                                            uint64_t *hi) {
    const uint8_t *c = rec + CRAFTAX_OBS_COMPACT_CELLS + cell * 8;
    *lo = 0;
    *hi = 0;
    if (!c[2]) return;
    uint64_t mobs = 0;
    for (int b = 0; b < 5; b++) mobs |= (uint64_t)c[3 + b] << (8 * b);
    uint64_t l = mobs << 42, h = mobs >> 22; /* channels 42..81 */
    h |= 1ull << (82 - 64);                  /* visibility */
    if (c[0] < CRAFTAX_NUM_BLOCK_TYPES) l |= 1ull << c[0];
    if (c[1] < CRAFTAX_NUM_ITEM_TYPES) l |= 1ull << (CRAFTAX_NUM_BLOCK_TYPES + c[1]);
    *lo = l;
    *hi = h;
}

/* Float k of the obs from its compact record (bitwise the rendered value). */
static inline CRAFTAX_HD float craftax_obs_compact_value(const uint8_t *rec, int k) {
    if (k >= CRAFTAX_OBS_MAP_SIZE) {
        float v;
        memcpy(&v, rec + 4 * (k - CRAFTAX_OBS_MAP_SIZE), 4);
        return v;
    }
    const int cell = k / CRAFTAX_OBS_CHANNELS, ch = k - cell * CRAFTAX_OBS_CHANNELS;
    uint64_t lo, hi;
    craftax_obs_compact_cell_mask(rec, cell, &lo, &hi);
    const uint64_t bit = ch < 64 ? (lo >> ch) & 1u : (hi >> (ch - 64)) & 1u;
    return bit ? 1.0f : 0.0f;
}

static inline CRAFTAX_HD void craftax_expand_compact_obs(const uint8_t *rec, float *obs) {
    for (int k = 0; k < CRAFTAX_OBS_SIZE; k++) obs[k] = craftax_obs_compact_value(rec, k);
}

#endif
