/* craftax_api.c: the C API (craftax_api.h) over the rules headers, batched with OpenMP.
 * Build: compiled by pycraftax/_build.py through cffi; flags and their reasons live there.
 */
#include "craftax_api.h"

#include <float.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "craftax/obs.h"
#include "craftax/worldgen.h"
#include "state_domain.h"

#define API_VERSION 1

int craftax_api_version(void) { return API_VERSION; }

#ifndef CRAFTAX_RULES_FINGERPRINT
#define CRAFTAX_RULES_FINGERPRINT "unknown"
#endif
const char *craftax_rules_fingerprint(void) { return CRAFTAX_RULES_FINGERPRINT; }
size_t craftax_state_size(void) { return sizeof(CraftaxState); }
size_t craftax_state_floors_pending_offset(void) { return offsetof(CraftaxState, floors_pending); }
int craftax_obs_size(void) { return CRAFTAX_OBS_SIZE; }

#define U8 CRAFTAX_DTYPE_UINT8
#define I32 CRAFTAX_DTYPE_INT32
#define F32 CRAFTAX_DTYPE_FLOAT32
#define U32 CRAFTAX_DTYPE_UINT32
#define BOOL CRAFTAX_DTYPE_BOOL
#define L CRAFTAX_NUM_LEVELS
#define M CRAFTAX_MAP_SIZE
#define LEAF(name, member, storage, dtype, ndim, s0, s1, s2, lo, hi) \
    {name, (uint32_t)offsetof(CraftaxState, member), storage, dtype, ndim, {s0, s1, s2, 0}, lo, hi, 0, 0.0f, 0.0f}
/* A float32 leaf: finite values in [lo, hi]. */
#define FLOAT_LEAF(name, member, ndim, s0, s1, s2, lo, hi) \
    {name, (uint32_t)offsetof(CraftaxState, member), F32, F32, ndim, {s0, s1, s2, 0}, 0, 0, 0, lo, hi}
/* A [level][...] leaf kept inside the per-level mob records (state.h: CraftaxLevelMobs). */
#define LEVEL_LEAF(name, member, storage, dtype, ndim, s1, s2, lo, hi, flo, fhi)                              \
    {name,   (uint32_t)offsetof(CraftaxState, mobs[0].member), storage, dtype, ndim, {L, s1, s2, 0}, lo, hi, \
     (int32_t)sizeof(CraftaxLevelMobs), flo, fhi}
#define MOBS(prefix, member, n, pos_lo, pos_hi)                                                              \
    LEVEL_LEAF(prefix ".position", member.position, I32, I32, 3, n, 2, pos_lo, pos_hi, 0.0f, 0.0f),              \
        LEVEL_LEAF(prefix ".health", member.health, F32, F32, 2, n, 0, 0, 0, -FLT_MAX, FLT_MAX),                 \
        LEVEL_LEAF(prefix ".mask", member.mask, U8, BOOL, 2, n, 0, 0, 1, 0.0f, 0.0f),                            \
        LEVEL_LEAF(prefix ".attack_cooldown", member.attack_cooldown, I32, I32, 2, n, 0, INT_MIN, INT_MAX, 0.0f, \
                   0.0f),                                                                                        \
        LEVEL_LEAF(prefix ".type_id", member.type_id, I32, I32, 2, n, 0, 0, CRAFTAX_NUM_MOB_TYPES - 1, 0.0f, 0.0f)
#define INV(name, lo, hi) LEAF("inventory." #name, inventory.name, I32, I32, 0, 0, 0, 0, lo, hi)

/* The domain set_state accepts (docs/STATE_DOMAIN.md): every state reset or step can reach,
 * under any params make() accepts, and nothing the step can leave.
 *  - enum ranges, tool tiers, map coordinates of mobs, ladders and plants;
 *  - inventory counts 0..99 (clip_inventory_and_intrinsics caps them);
 *  - intrinsics up to their largest cap: food, drink and energy 7 + 2 * dexterity, mana
 *    6 + 3 * intelligence, health 8 + strength, attributes at most 99 (max_attribute's limit);
 *  - counters that upstream lets run freely and wrap in int32 as XLA's do (cooldowns, the
 *    boss timer and progress, monsters killed, xp, plant ages, the timestep, projectiles'
 *    positions): any int32;
 *  - the player's position: POSITION_MIN..POSITION_MAX on each axis (god mode walks off the
 *    map; there every map cell is within 32767 cells of the player on each axis, so upstream's
 *    squared int32 distances (get_distance_map) do not wrap, and pycraftax steps no further);
 *  - floats finite; health 0..8 + 99, light level 0..1 (the obs shows both), the mana
 *    recovery counter >= 0 (the step multiplies it by up to 25.5 each step).
 */
#define MAX_ATTRIBUTE 99
#define POSITION_MAX 32767
#define POSITION_MIN (M - 1 - POSITION_MAX)
static const CraftaxLeaf LEAVES[] = {
    LEAF("map", map, U8, I32, 3, L, M, M, 0, CRAFTAX_NUM_BLOCK_TYPES - 1),
    LEAF("item_map", item_map, U8, I32, 3, L, M, M, 0, CRAFTAX_NUM_ITEM_TYPES - 1),
    LEAF("mob_map", mob_map, U8, BOOL, 3, L, M, M, 0, 1),
    FLOAT_LEAF("light_map", light_map, 3, L, M, M, -FLT_MAX, FLT_MAX),
    LEAF("down_ladders", down_ladders, I32, I32, 2, L, 2, 0, 0, M - 1),
    LEAF("up_ladders", up_ladders, I32, I32, 2, L, 2, 0, 0, M - 1),
    LEAF("chests_opened", chests_opened, U8, BOOL, 1, L, 0, 0, 0, 1),
    LEAF("monsters_killed", monsters_killed, I32, I32, 1, L, 0, 0, INT_MIN, INT_MAX),
    LEAF("player_position", player_position, I32, I32, 1, 2, 0, 0, POSITION_MIN, POSITION_MAX),
    LEAF("player_level", player_level, I32, I32, 0, 0, 0, 0, 0, L - 1),
    LEAF("player_direction", player_direction, I32, I32, 0, 0, 0, 0, 1, 4),
    FLOAT_LEAF("player_health", player_health, 0, 0, 0, 0, 0.0f, 8.0f + MAX_ATTRIBUTE),
    LEAF("player_food", player_food, I32, I32, 0, 0, 0, 0, 0, 7 + 2 * MAX_ATTRIBUTE),
    LEAF("player_drink", player_drink, I32, I32, 0, 0, 0, 0, 0, 7 + 2 * MAX_ATTRIBUTE),
    LEAF("player_energy", player_energy, I32, I32, 0, 0, 0, 0, 0, 7 + 2 * MAX_ATTRIBUTE),
    LEAF("player_mana", player_mana, I32, I32, 0, 0, 0, 0, 0, 6 + 3 * MAX_ATTRIBUTE),
    LEAF("is_sleeping", is_sleeping, U8, BOOL, 0, 0, 0, 0, 0, 1),
    LEAF("is_resting", is_resting, U8, BOOL, 0, 0, 0, 0, 0, 1),
    FLOAT_LEAF("player_recover", player_recover, 0, 0, 0, 0, -FLT_MAX, FLT_MAX),
    FLOAT_LEAF("player_hunger", player_hunger, 0, 0, 0, 0, -FLT_MAX, FLT_MAX),
    FLOAT_LEAF("player_thirst", player_thirst, 0, 0, 0, 0, -FLT_MAX, FLT_MAX),
    FLOAT_LEAF("player_fatigue", player_fatigue, 0, 0, 0, 0, -FLT_MAX, FLT_MAX),
    FLOAT_LEAF("player_recover_mana", player_recover_mana, 0, 0, 0, 0, 0.0f, FLT_MAX),
    LEAF("player_xp", player_xp, I32, I32, 0, 0, 0, 0, INT_MIN, INT_MAX),
    LEAF("player_dexterity", player_dexterity, I32, I32, 0, 0, 0, 0, 1, MAX_ATTRIBUTE),
    LEAF("player_strength", player_strength, I32, I32, 0, 0, 0, 0, 1, MAX_ATTRIBUTE),
    LEAF("player_intelligence", player_intelligence, I32, I32, 0, 0, 0, 0, 1, MAX_ATTRIBUTE),
    INV(wood, 0, 99),
    INV(stone, 0, 99),
    INV(coal, 0, 99),
    INV(iron, 0, 99),
    INV(diamond, 0, 99),
    INV(sapling, 0, 99),
    INV(pickaxe, 0, 4),
    INV(sword, 0, 4),
    INV(bow, 0, 99),
    INV(arrows, 0, 99),
    LEAF("inventory.armour", inventory.armour, I32, I32, 1, 4, 0, 0, 0, 2),
    INV(torches, 0, 99),
    INV(ruby, 0, 99),
    INV(sapphire, 0, 99),
    LEAF("inventory.potions", inventory.potions, I32, I32, 1, 6, 0, 0, 0, 99),
    INV(books, 0, 99),
    MOBS("melee_mobs", melee_mobs, CRAFTAX_MAX_MELEE_MOBS, 0, M - 1),
    MOBS("passive_mobs", passive_mobs, CRAFTAX_MAX_PASSIVE_MOBS, 0, M - 1),
    MOBS("ranged_mobs", ranged_mobs, CRAFTAX_MAX_RANGED_MOBS, 0, M - 1),
    MOBS("mob_projectiles", mob_projectiles, CRAFTAX_MAX_MOB_PROJECTILES, INT_MIN, INT_MAX),
    LEVEL_LEAF("mob_projectile_directions", mob_projectile_directions, I32, I32, 3, CRAFTAX_MAX_MOB_PROJECTILES, 2, -1,
               1, 0.0f, 0.0f),
    MOBS("player_projectiles", player_projectiles, CRAFTAX_MAX_PLAYER_PROJECTILES, INT_MIN, INT_MAX),
    LEVEL_LEAF("player_projectile_directions", player_projectile_directions, I32, I32, 3,
               CRAFTAX_MAX_PLAYER_PROJECTILES, 2, -1, 1, 0.0f, 0.0f),
    LEAF("growing_plants_positions", growing_plants_positions, I32, I32, 2, CRAFTAX_MAX_GROWING_PLANTS, 2, 0, 0, M - 1),
    LEAF("growing_plants_age", growing_plants_age, I32, I32, 1, CRAFTAX_MAX_GROWING_PLANTS, 0, 0, INT_MIN, INT_MAX),
    LEAF("growing_plants_mask", growing_plants_mask, U8, BOOL, 1, CRAFTAX_MAX_GROWING_PLANTS, 0, 0, 0, 1),
    LEAF("potion_mapping", potion_mapping, I32, I32, 1, 6, 0, 0, 0, 5),
    LEAF("learned_spells", learned_spells, U8, BOOL, 1, 2, 0, 0, 0, 1),
    LEAF("sword_enchantment", sword_enchantment, I32, I32, 0, 0, 0, 0, 0, 2),
    LEAF("bow_enchantment", bow_enchantment, I32, I32, 0, 0, 0, 0, 0, 2),
    LEAF("armour_enchantments", armour_enchantments, I32, I32, 1, 4, 0, 0, 0, 2),
    LEAF("boss_progress", boss_progress, I32, I32, 0, 0, 0, 0, INT_MIN, INT_MAX),
    LEAF("boss_timesteps_to_spawn_this_round", boss_timesteps_to_spawn_this_round, I32, I32, 0, 0, 0, 0, INT_MIN, INT_MAX),
    FLOAT_LEAF("light_level", light_level, 0, 0, 0, 0, 0.0f, 1.0f),
    LEAF("achievements", achievements, U8, BOOL, 1, CRAFTAX_NUM_ACHIEVEMENTS, 0, 0, 0, 1),
    LEAF("state_rng", state_rng, U32, U32, 1, 2, 0, 0, 0, 0),
    LEAF("timestep", timestep, I32, I32, 0, 0, 0, 0, INT_MIN, INT_MAX),
};

int craftax_num_leaves(void) { return (int)(sizeof(LEAVES) / sizeof(LEAVES[0])); }

const CraftaxLeaf *craftax_leaf(int index) {
    if (index < 0 || index >= craftax_num_leaves()) return NULL;
    return &LEAVES[index];
}

static int leaf_index(const char *name) {
    for (int i = 0; i < craftax_num_leaves(); i++)
        if (strcmp(LEAVES[i].name, name) == 0) return i;
    return -1;
}

/* The step relies on every masked melee, passive and ranged mob having health > 0
 * (CONFORMANCE.md, quirk 7): so does every state reachable from reset. */
#define LIVING_CLASS(member, name)                                                                 \
    for (int l = 0; l < L; l++)                                                                    \
        for (int k = 0; k < (int)(sizeof(s->mobs[l].member.mask)); k++)                            \
            if (s->mobs[l].member.mask[k] && !(s->mobs[l].member.health[k] > 0.0f)) {              \
                error->leaf = leaf_index(name);                                                    \
                error->rule = CRAFTAX_STATE_RULE_LIVING_MOB;                                       \
                error->element = (int64_t)l * (int64_t)sizeof(s->mobs[l].member.mask) + k;          \
                error->value = s->mobs[l].member.health[k];                                        \
                return 1;                                                                          \
            }

static int state_error(const uint8_t *state, CraftaxStateError *error) {
    if (craftax_leaf_table_error(state, LEAVES, craftax_num_leaves(), error)) return 1;
    const CraftaxState *s = (const CraftaxState *)(const void *)state;
    LIVING_CLASS(melee_mobs, "melee_mobs.health")
    LIVING_CLASS(passive_mobs, "passive_mobs.health")
    LIVING_CLASS(ranged_mobs, "ranged_mobs.health")
    return 0;
}
#undef LIVING_CLASS

int craftax_check_states(const void *states, int64_t num_envs, CraftaxStateError *error) {
    if (!states || !error) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    return craftax_check_states_with(states, num_envs, sizeof(CraftaxState), state_error, error,
                                     craftax_get_num_threads());
}

static CRAFTAX_THREAD_LOCAL CraftaxStateError last_state_error;

void craftax_set_last_state_error(const CraftaxStateError *error) { last_state_error = *error; }

void craftax_last_state_error(CraftaxStateError *error) {
    if (error) *error = last_state_error;
}

/* The guard of the observe and step calls: player_level picks the per-level slices of the map
 * and mob arrays (20 KB and more apart) that the rules index without a clamp, so a wild value
 * would reach far outside the state. Checked for every env before any changes. */
static int level_error(const uint8_t *state, CraftaxStateError *error) {
    int32_t level;
    memcpy(&level, state + offsetof(CraftaxState, player_level), 4);
    if (level >= 0 && level < L) return 0;
    error->leaf = leaf_index("player_level");
    error->rule = CRAFTAX_STATE_RULE_RANGE;
    error->element = 0;
    error->value = level;
    return 1;
}

int craftax_guard_states(const void *states, int64_t num_envs) {
    CraftaxStateError error;
    const int code =
        craftax_check_states_with(states, num_envs, sizeof(CraftaxState), level_error, &error, craftax_get_num_threads());
    if (code) craftax_set_last_state_error(&error);
    return code;
}

void craftax_default_params(CraftaxParams *p) {
    memset(p, 0, sizeof(*p));
    p->max_timesteps = 100000;
    p->day_length = 300;
    p->always_diamond = 0;
    p->mob_despawn_distance = 14;
    p->max_attribute = 5;
    p->god_mode = 0;
}

static int requested_threads = 0;

void craftax_set_num_threads(int num_threads) { requested_threads = num_threads > 0 ? num_threads : 0; }

int craftax_get_num_threads(void) {
#ifdef _OPENMP
    return requested_threads > 0 ? requested_threads : omp_get_max_threads();
#else
    return 1;
#endif
}

int craftax_reset_with_keys(void *states, const uint32_t *keys, int64_t num_envs, const CraftaxParams *params,
                            float *obs) {
    if (!states || !keys || !params) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (params->day_length <= 0) return CRAFTAX_ERR_ARGUMENT;
    CraftaxState *all = (CraftaxState *)states;
    int failed = 0;
#pragma omp parallel num_threads(craftax_get_num_threads()) reduction(| : failed)
    {
        CraftaxWorldGenScratch *scratch = (CraftaxWorldGenScratch *)malloc(sizeof(CraftaxWorldGenScratch));
        if (!scratch) failed = 1;
#pragma omp for schedule(dynamic, 4)
        for (int64_t i = 0; i < num_envs; i++) {
            if (!scratch) continue;
            CraftaxKey key = {{keys[2 * i], keys[2 * i + 1]}};
            craftax_reset_env(key, params, &all[i], scratch);
            if (obs) craftax_render_symbolic(&all[i], obs + i * CRAFTAX_OBS_SIZE, 1);
        }
        free(scratch);
    }
    return failed ? CRAFTAX_ERR_NO_MEMORY : 0;
}

int craftax_observe(const void *states, int64_t num_envs, float *obs) {
    if (!states || !obs) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (craftax_guard_states(states, num_envs)) return CRAFTAX_ERR_STATE;
    const CraftaxState *all = (const CraftaxState *)states;
#pragma omp parallel for num_threads(craftax_get_num_threads()) schedule(static)
    for (int64_t i = 0; i < num_envs; i++) craftax_render_symbolic(&all[i], obs + i * CRAFTAX_OBS_SIZE, 0);
    return 0;
}

int craftax_observe_compact(const void *states, int64_t num_envs, uint8_t *records) {
    if (!states || !records) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (craftax_guard_states(states, num_envs)) return CRAFTAX_ERR_STATE;
    const CraftaxState *all = (const CraftaxState *)states;
#pragma omp parallel for num_threads(craftax_get_num_threads()) schedule(static)
    for (int64_t i = 0; i < num_envs; i++)
        craftax_render_compact_lanes(&all[i], records + i * CRAFTAX_OBS_COMPACT_SIZE, 0, 0, 1);
    return 0;
}

int craftax_obs_compact_size(void) { return CRAFTAX_OBS_COMPACT_SIZE; }

uint64_t craftax_fnv1a(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = (const unsigned char *)data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

static CraftaxKey key_of(const uint32_t *key) {
    CraftaxKey k = {{key[0], key[1]}};
    return k;
}

void craftax_key_split(const uint32_t *key, uint32_t num, uint32_t *out) {
    for (uint32_t i = 0; i < num; i++) {
        CraftaxKey k = craftax_split_at(key_of(key), i);
        out[2 * i] = k.k[0];
        out[2 * i + 1] = k.k[1];
    }
}
