/* craftax/game_logic_utils.h: craftax 1.6.1 craftax/craftax/util/game_logic_utils.py,
 * one function per upstream function, same names with the craftax_ prefix.
 *
 * Conventions (shared with step_player.h):
 *  - state is modified in place: `craftax_f(state, ...)` equals upstream's
 *    `state = f(state, ...)` (or the replace() that follows it at every call site).
 *  - Upstream passes `mobs` (a Mobs pytree) beside the state; every call site passes a
 *    mob class of the same state (state.melee_mobs, ...), so the C functions take the class
 *    index instead: MOB_CLASS_PASSIVE / MELEE / RANGED (and for projectiles a flag).
 *  - JAX indexing (CONFORMANCE.md, mechanic M03): reads normalise a negative index once (+size) and
 *    clamp into range; scatter writes normalise negatives once and drop out-of-range
 *    updates. craftax_jread / craftax_jwrite implement that per axis.
 *  - is_boss_vulnerable lives in obs.h, calculate_light_level in mathf.h.
 */
#ifndef CRAFTAX_GAME_LOGIC_UTILS_H
#define CRAFTAX_GAME_LOGIC_UTILS_H

#include <math.h>

#include "game_constants.h"
#include "obs.h"
#include "state.h"

/* ---- JAX index semantics ------------------------------------------------------------ */

/* Index used by a gather x[i] on an axis of size n. */
static inline CRAFTAX_HD int32_t craftax_jread(int32_t i, int32_t n) {
    if (i < 0) i += n;
    if (i < 0) i = 0;
    if (i > n - 1) i = n - 1;
    return i;
}

/* Index used by a scatter x.at[i].set on an axis of size n, or -1 when dropped. */
static inline CRAFTAX_HD int32_t craftax_jwrite(int32_t i, int32_t n) {
    if (i < 0) i += n;
    return (i < 0 || i >= n) ? -1 : i;
}

/* level_map[p0][p1] as a read (level_map = &state->map[level][0][0], or item_map, mob_map). */
static inline CRAFTAX_HD uint8_t craftax_read_level_map(const uint8_t *level_map, const int32_t pos[2]) {
    return level_map[craftax_jread(pos[0], CRAFTAX_MAP_SIZE) * CRAFTAX_MAP_SIZE + craftax_jread(pos[1], CRAFTAX_MAP_SIZE)];
}

/* Pointers to one mob class on one level (CraftaxLevelMobs), [slot]. */
typedef struct {
    int32_t *position; /* [n][2] */
    float *health;     /* [n] */
    uint8_t *mask;     /* [n] */
    int32_t *attack_cooldown;
    int32_t *type_id;
    int n;
} CraftaxMobsRef;

/* mob_class_index: MOB_CLASS_PASSIVE, MELEE, RANGED; 3 = mob projectiles, 4 = player
 * projectiles (not upstream indices; only for this accessor). */
enum { CRAFTAX_MOBS_MOB_PROJECTILES = 3, CRAFTAX_MOBS_PLAYER_PROJECTILES = 4 };

static inline CRAFTAX_HD CraftaxMobsRef craftax_mobs_ref(CraftaxState *s, int which, int level) {
    CraftaxMobsRef r;
    CraftaxLevelMobs *lm = &s->mobs[level];
#define CRAFTAX_MOBS_REF_(M, N)                   \
    r.position = &lm->M.position[0][0];           \
    r.health = lm->M.health;                      \
    r.mask = lm->M.mask;                          \
    r.attack_cooldown = lm->M.attack_cooldown;    \
    r.type_id = lm->M.type_id;                    \
    r.n = N;
    switch (which) {
    case MOB_CLASS_PASSIVE: CRAFTAX_MOBS_REF_(passive_mobs, CRAFTAX_MAX_PASSIVE_MOBS) break;
    case MOB_CLASS_MELEE: CRAFTAX_MOBS_REF_(melee_mobs, CRAFTAX_MAX_MELEE_MOBS) break;
    case MOB_CLASS_RANGED: CRAFTAX_MOBS_REF_(ranged_mobs, CRAFTAX_MAX_RANGED_MOBS) break;
    case CRAFTAX_MOBS_MOB_PROJECTILES: CRAFTAX_MOBS_REF_(mob_projectiles, CRAFTAX_MAX_MOB_PROJECTILES) break;
    default: CRAFTAX_MOBS_REF_(player_projectiles, CRAFTAX_MAX_PLAYER_PROJECTILES) break;
    }
#undef CRAFTAX_MOBS_REF_
    return r;
}

/* ---- boss ------------------------------------------------------------------------- */

static inline CRAFTAX_HD int craftax_is_fighting_boss(const CraftaxState *state) {
    return state->player_level == CRAFTAX_BOSS_LEVEL;
}

static inline CRAFTAX_HD int craftax_is_boss_spawn_wave(const CraftaxState *state) {
    return craftax_is_fighting_boss(state) && state->boss_timesteps_to_spawn_this_round >= 1;
}

static inline CRAFTAX_HD int craftax_has_beaten_boss(const CraftaxState *state) {
    return state->boss_progress >= CRAFTAX_BOSS_LEVEL;
}

/* ---- intrinsic maxima ------------------------------------------------------------- */

static inline CRAFTAX_HD int32_t craftax_get_max_health(const CraftaxState *state) { return 8 + state->player_strength; }
static inline CRAFTAX_HD int32_t craftax_get_max_food(const CraftaxState *state) { return 7 + 2 * state->player_dexterity; }
static inline CRAFTAX_HD int32_t craftax_get_max_drink(const CraftaxState *state) { return 7 + 2 * state->player_dexterity; }
static inline CRAFTAX_HD int32_t craftax_get_max_energy(const CraftaxState *state) { return 7 + 2 * state->player_dexterity; }
static inline CRAFTAX_HD int32_t craftax_get_max_mana(const CraftaxState *state) { return 6 + 3 * state->player_intelligence; }

/* ---- damage ----------------------------------------------------------------------- */

/* get_damage: sum_k (1 - def_k) * dmg_k. XLA:CPU reduces the 3-vector left to right and
 * fuses each later product into the running sum. Measured (conformance/test_step_player.py):
 * get_damage_done_to_player over armour 3^4 x enchantments 3^4 x level {0,8} x 24 damage
 * rows: 0 of 314,928 differ with this form, 5,409 (level 0) / 8,733 (level 8) with a plain
 * left-to-right sum; the same form holds inside the whole jitted craftax_step (melee hits,
 * awake and asleep). For damage done to mobs the form is immaterial: the fire and ice
 * defenses of MOB_TYPE_DEFENSE_MAPPING are 0 or 1, so fmaf(1 - d, x, acc) is exact. */
static inline CRAFTAX_HD float craftax_get_damage(const float damage_vector[3], const float defense_vector[3]) {
    float acc = (1.0f - defense_vector[0]) * damage_vector[0];
    acc = fmaf(1.0f - defense_vector[1], damage_vector[1], acc);
    return fmaf(1.0f - defense_vector[2], damage_vector[2], acc);
}

/* get_player_damage_vector: [physical, fire, ice] of the player's melee attack. Checked
 * exhaustively (sword 0..4 x enchantment 0..2 x strength 0..9 x intelligence 0..9); the
 * coefficients 1 + 0.25k and 1 + 0.05k round the same fused or not for these k. */
static inline CRAFTAX_HD void craftax_get_player_damage_vector(const CraftaxState *state, float out[3]) {
    int32_t phys_i = CRAFTAX_SWORD_PHYSICAL_DAMAGE[craftax_jread(state->inventory.sword, 5)];
    float fire = (float)(phys_i * (state->sword_enchantment == 1)) * 0.5f;
    float ice = (float)(phys_i * (state->sword_enchantment == 2)) * 0.5f;
    float str_coef = 1.0f + 0.25f * (float)(state->player_strength - 1);
    float int_coef = 1.0f + 0.05f * (float)(state->player_intelligence - 1);
    out[0] = (float)phys_i * str_coef;
    out[1] = fire * int_coef;
    out[2] = ice * int_coef;
}

/* get_damage_done_to_player(state, static_params, damage_vector). Defenses are summed over
 * the 4 slots left to right without fusing armour * 0.1 (measured, see get_damage). The
 * caller scales melee damage by (1 + 2.5 * is_sleeping) first, as upstream does. */
static inline CRAFTAX_HD float craftax_get_damage_done_to_player(const CraftaxState *state, const float damage_vector[3]) {
    float defense[3] = {0.0f, 0.0f, 0.0f};
    for (int k = 0; k < 4; k++) {
        defense[0] = defense[0] + (float)state->inventory.armour[k] * 0.1f;
        defense[1] = defense[1] + (state->armour_enchantments[k] == 1 ? 0.2f : 0.0f);
        defense[2] = defense[2] + (state->armour_enchantments[k] == 2 ? 0.2f : 0.0f);
    }
    const float coef = 1.0f + (craftax_is_fighting_boss(state) ? CRAFTAX_BOSS_FIGHT_EXTRA_DAMAGE : 0.0f);
    float dmg[3] = {damage_vector[0] * coef, damage_vector[1] * coef, damage_vector[2] * coef};
#ifdef PYCRAFTAX_TEST_PERTURB
    /* The deliberately wrong rule of the perturbed test build (conformance/test_porting.py; never
     * defined by setup.py or cuda/Makefile): every hit on the player does 1 more damage. */
    return craftax_get_damage(dmg, defense) + 1.0f;
#else
    return craftax_get_damage(dmg, defense);
#endif
}

/* ---- positions -------------------------------------------------------------------- */

static inline CRAFTAX_HD int craftax_in_bounds(const CraftaxState *state, const int32_t pos[2]) {
    (void)state;
    return 0 <= pos[0] && pos[0] < CRAFTAX_MAP_SIZE && 0 <= pos[1] && pos[1] < CRAFTAX_MAP_SIZE;
}

static inline CRAFTAX_HD int craftax_is_in_solid_block(const CraftaxState *state, const int32_t pos[2]) {
    uint8_t b = craftax_read_level_map(&state->map[state->player_level][0][0], pos);
    return CRAFTAX_SOLID_BLOCK_MAPPING[b < CRAFTAX_NUM_BLOCK_TYPES ? b : CRAFTAX_NUM_BLOCK_TYPES - 1];
}

static inline CRAFTAX_HD int craftax_is_in_mob(const CraftaxState *state, const int32_t pos[2]) {
    return craftax_read_level_map(&state->mob_map[state->player_level][0][0], pos) != 0 ||
           (state->player_position[0] == pos[0] && state->player_position[1] == pos[1]);
}

/* collision_map: [ground, water, lava] flags (a row of MOB_TYPE_COLLISION_MAPPING). */
static inline CRAFTAX_HD int craftax_is_position_in_bounds_not_in_mob_not_colliding(const CraftaxState *state,
                                                                                     const int32_t pos[2],
                                                                                     const int32_t collision_map[3]) {
    const int in_b = craftax_in_bounds(state, pos);
    const int solid = craftax_is_in_solid_block(state, pos);
    const int in_mob = craftax_is_in_mob(state, pos);
    const uint8_t b = craftax_read_level_map(&state->map[state->player_level][0][0], pos);
    const int lava = b == BLOCK_LAVA, water = b == BLOCK_WATER;
    const int ground = !solid && !water && !lava;
    int valid = in_b && !in_mob && !solid;
    valid = valid && (!collision_map[0] || !ground);
    valid = valid && (!collision_map[1] || !water);
    valid = valid && (!collision_map[2] || !lava);
    return valid;
}

static inline CRAFTAX_HD int craftax_is_near_block(const CraftaxState *state, int32_t block_type) {
    for (int k = 0; k < 8; k++) {
        const int32_t pos[2] = {state->player_position[0] + CRAFTAX_CLOSE_BLOCKS[k][0],
                                state->player_position[1] + CRAFTAX_CLOSE_BLOCKS[k][1]};
        if (craftax_in_bounds(state, pos) && craftax_read_level_map(&state->map[state->player_level][0][0], pos) == block_type)
            return 1;
    }
    return 0;
}

/* ---- combat ----------------------------------------------------------------------- */

/* attack_mob_class(state, mobs=<class of state>, position, damage_vector,
 * can_get_achievement, mob_class_index): updates that class's mobs and the achievements
 * of `state` in place (upstream's callers store both back).
 *
 * Upstream then sets mask = health > 0 & mask for every mob of the class on all nine levels.
 * Only the attacked entry can change: every state reachable from reset has health > 0 at
 * every masked mob (world generation and spawns give masked mobs positive health, and this
 * function is the only place health falls, where it clears the mask at once), and
 * set_state admits no other (pycraftax/_state.py). Updating all nine levels here would make
 * the projectile scan's 18 calls a step the largest stall source of the step kernel. */
static inline CRAFTAX_HD void craftax_attack_mob_class(CraftaxState *state, const int32_t position[2],
                                                       const float damage_vector[3], int can_get_achievement,
                                                       int mob_class_index, int *did_kill_mob, int *is_attacking_mob) {
    const int l = state->player_level;
    CraftaxMobsRef m = craftax_mobs_ref(state, mob_class_index, l);
    int target = -1;
    for (int i = 0; i < m.n; i++) {
        const int32_t *p = &m.position[i * 2];
        if (p[0] == position[0] && p[1] == position[1] && m.mask[i]) {
            target = i;
            break;
        }
    }
    const int attacking = target >= 0;
    if (target < 0) target = 0; /* argmax of all-false */
    const int t = target;
    const int32_t type = craftax_jread(m.type_id[t], 9);
    const float damage = craftax_get_damage(damage_vector, CRAFTAX_MOB_TYPE_DEFENSE_MAPPING[type][mob_class_index]);
    m.health[t] = m.health[t] + (-damage * (attacking ? 1.0f : 0.0f));
    const int old_mask = m.mask[t];
    if (old_mask) craftax_store_u8(&m.mask[t], (uint8_t)(m.health[t] > 0.0f)); /* 0/1 as upstream's bool */
    const int killed = old_mask && !m.mask[t];
    const int32_t ach = CRAFTAX_MOB_ACHIEVEMENT_MAP[mob_class_index][craftax_jread(m.type_id[t], 8)];
    craftax_store_u8(&state->achievements[ach], (uint8_t)(state->achievements[ach] || (killed && can_get_achievement)));
    *did_kill_mob = killed;
    *is_attacking_mob = attacking;
}

/* attack_mob(state, position, damage_vector, can_eat) -> (state, did_attack_mob, did_kill_mob). */
static inline CRAFTAX_HD void craftax_attack_mob(CraftaxState *state, const int32_t position[2],
                                                 const float damage_vector[3], int can_eat,
                                                 int *did_attack_mob, int *did_kill_mob) {
    int kill_melee, att_melee, kill_passive, att_passive, kill_ranged, att_ranged;
    craftax_attack_mob_class(state, position, damage_vector, 1, MOB_CLASS_MELEE, &kill_melee, &att_melee);
    craftax_attack_mob_class(state, position, damage_vector, can_eat, MOB_CLASS_PASSIVE, &kill_passive,
                             &att_passive);
    if (kill_passive && can_eat) {
        state->player_food = craftax_min_i32(craftax_get_max_food(state), state->player_food + 6);
        state->player_hunger = 0.0f;
    }
    craftax_attack_mob_class(state, position, damage_vector, 1, MOB_CLASS_RANGED, &kill_ranged,
                             &att_ranged);
    const int attacked = att_melee || att_passive || att_ranged;
    const int killed_monster = kill_melee || kill_ranged;
    const int killed = killed_monster || kill_passive;
    const int l = state->player_level;
    /* upstream: mob_map[position] = mob_map[position] & !killed; only a kill changes it */
    const int32_t w0 = craftax_jwrite(position[0], CRAFTAX_MAP_SIZE), w1 = craftax_jwrite(position[1], CRAFTAX_MAP_SIZE);
    if (killed && w0 >= 0 && w1 >= 0) craftax_store_u8(&state->mob_map[l][w0][w1], 0);
    state->monsters_killed[l] += killed_monster;
    *did_attack_mob = attacked;
    *did_kill_mob = killed;
}

/* spawn_projectile(state, static_params, projectiles, projectile_directions,
 * new_projectile_position, is_spawning_projectile, direction, projectile_type):
 * `is_player_projectile` picks state.player_projectiles (1) or state.mob_projectiles (0);
 * the result is stored back into that class. */
static inline CRAFTAX_HD void craftax_spawn_projectile(CraftaxState *state, int is_player_projectile,
                                                       const int32_t new_projectile_position[2],
                                                       int is_spawning_projectile, const int32_t direction[2],
                                                       int32_t projectile_type) {
    const int l = state->player_level;
    CraftaxMobsRef m = craftax_mobs_ref(
        state, is_player_projectile ? CRAFTAX_MOBS_PLAYER_PROJECTILES : CRAFTAX_MOBS_MOB_PROJECTILES, l);
    int32_t *dirs = is_player_projectile ? &state->mobs[l].player_projectile_directions[0][0]
                                         : &state->mobs[l].mob_projectile_directions[0][0];
    int idx = 0;
    for (int i = 0; i < m.n; i++) {
        if (!m.mask[i]) {
            idx = i;
            break;
        }
    }
    if (!is_spawning_projectile) return; /* the slot is rewritten with its own values */
    const int t = idx;
    m.position[t * 2 + 0] = new_projectile_position[0];
    m.position[t * 2 + 1] = new_projectile_position[1];
    m.mask[t] = 1;
    m.type_id[t] = projectile_type;
    dirs[t * 2 + 0] = direction[0];
    dirs[t * 2 + 1] = direction[1];
}

/* ---- caps ------------------------------------------------------------------------- */

/* jnp.minimum / jnp.maximum of float32 (NaN propagates). */
static inline CRAFTAX_HD float craftax_jmin_f32(float a, float b) { return (a != a || a < b) ? a : b; }
static inline CRAFTAX_HD float craftax_jmax_f32(float a, float b) { return (a != a || a > b) ? a : b; }

static inline CRAFTAX_HD void craftax_clip_inventory_and_intrinsics(CraftaxState *state, const CraftaxParams *params) {
    CraftaxInventory *inv = &state->inventory;
    int32_t *fields[] = {&inv->wood, &inv->stone, &inv->coal, &inv->iron, &inv->diamond, &inv->sapling,
                         &inv->pickaxe, &inv->sword, &inv->bow, &inv->arrows, &inv->torches, &inv->ruby,
                         &inv->sapphire, &inv->books};
    for (unsigned k = 0; k < sizeof(fields) / sizeof(fields[0]); k++) *fields[k] = craftax_min_i32(*fields[k], 99);
    for (int k = 0; k < 4; k++) inv->armour[k] = craftax_min_i32(inv->armour[k], 99);
    for (int k = 0; k < 6; k++) inv->potions[k] = craftax_min_i32(inv->potions[k], 99);
    const float min_health = params->god_mode ? 9.0f : 0.0f;
    state->player_health =
        craftax_jmin_f32(craftax_jmax_f32(state->player_health, min_health), (float)craftax_get_max_health(state));
    state->player_food = craftax_min_i32(craftax_max_i32(state->player_food, 0), craftax_get_max_food(state));
    state->player_drink = craftax_min_i32(craftax_max_i32(state->player_drink, 0), craftax_get_max_drink(state));
    state->player_energy = craftax_min_i32(craftax_max_i32(state->player_energy, 0), craftax_get_max_energy(state));
    state->player_mana = craftax_min_i32(craftax_max_i32(state->player_mana, 0), craftax_get_max_mana(state));
}

#endif
