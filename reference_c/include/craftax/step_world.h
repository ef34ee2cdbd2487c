/* craftax/step_world.h: the world half of one Craftax step.
 * Upstream: craftax 1.6.1, craftax/craftax/game_logic.py (update_mobs, spawn_mobs,
 * update_plants, update_player_intrinsics, calculate_inventory_achievements,
 * is_game_over) and util/maths_utils.py (get_distance_map).
 *
 * JAX semantics kept here (CONFORMANCE.md, mechanic M03): branch-free "compute everything, then
 * select"; gathers clamp indices >= size and wrap negative ones once; scatters wrap
 * negative indices once and drop the whole update when an index is still out of range.
 * Every mob slot of the current level is simulated in index order, dead ones included,
 * and every random draw happens whether or not its result is used.
 */
#ifndef CRAFTAX_STEP_WORLD_H
#define CRAFTAX_STEP_WORLD_H

#include <math.h>

#include "common.h"
#include "constants.h"
#include "game_constants.h"
#include "game_logic_utils.h"
#include "params.h"
#include "rng.h"
#include "cell_choice.h"
#include "state.h"

/* ---- JAX indexing ------------------------------------------------------------------ */

/* Index of a gather (read): negative wraps once, then clamp into [0, n). */
static inline CRAFTAX_HD int32_t craftax_sw_read_idx(int32_t i, int32_t n) {
    if (i < 0) i += n;
    if (i < 0) i = 0;
    if (i >= n) i = n - 1;
    return i;
}
/* Index of a scatter (write): negative wraps once; -1 when the write is dropped. */
static inline CRAFTAX_HD int32_t craftax_sw_write_idx(int32_t i, int32_t n) {
    if (i < 0) i += n;
    return (i < 0 || i >= n) ? -1 : i;
}
static inline CRAFTAX_HD uint8_t craftax_sw_map_read(const uint8_t m[CRAFTAX_MAP_SIZE][CRAFTAX_MAP_SIZE], int32_t x,
                                                     int32_t y) {
    return m[craftax_sw_read_idx(x, CRAFTAX_MAP_SIZE)][craftax_sw_read_idx(y, CRAFTAX_MAP_SIZE)];
}
static inline CRAFTAX_HD void craftax_sw_map_write(uint8_t m[CRAFTAX_MAP_SIZE][CRAFTAX_MAP_SIZE], int32_t x, int32_t y,
                                                   uint8_t v) {
    int32_t wx = craftax_sw_write_idx(x, CRAFTAX_MAP_SIZE), wy = craftax_sw_write_idx(y, CRAFTAX_MAP_SIZE);
    if (wx >= 0 && wy >= 0) craftax_store_u8(&m[wx][wy], v);
}

static inline CRAFTAX_HD int32_t craftax_sw_abs(int32_t x) { return x < 0 ? -x : x; }
static inline CRAFTAX_HD int32_t craftax_sw_sign(int32_t x) { return (x > 0) - (x < 0); }

/* ---- adapters over game_logic_utils.h ---------------------------------------------- */

/* attack_mob(state, position, damage_vector, can_eat) -> did_attack_mob. */
static inline CRAFTAX_HD int craftax_sw_attack_mob(CraftaxState *s, const int32_t pos[2], const float dmg[3],
                                                   int can_eat) {
    int did_attack, did_kill;
    craftax_attack_mob(s, pos, dmg, can_eat, &did_attack, &did_kill);
    return did_attack;
}

/* spawn_projectile into state.mob_projectiles. */
static inline CRAFTAX_HD void craftax_sw_spawn_mob_projectile(CraftaxState *s, const int32_t pos[2], int spawning,
                                                              const int32_t dir[2], int32_t type) {
    craftax_spawn_projectile(s, 0, pos, spawning, dir, type);
}

/* ---- update_mobs --------------------------------------------------------------------- */

/* The "move towards the player" axis draw shared by melee and ranged mobs:
 * p = (|d| == max|d|) / sum|d|; choice(key, arange(2), p=p). Returns the direction. */
static inline CRAFTAX_HD void craftax_sw_toward_player(const CraftaxState *s, const int32_t pos[2], CraftaxKey key,
                                                       int32_t dir[2]) {
    int32_t a0 = craftax_sw_abs(s->player_position[0] - pos[0]);
    int32_t a1 = craftax_sw_abs(s->player_position[1] - pos[1]);
    int32_t mx = a0 > a1 ? a0 : a1;
    float sum = (float)(a0 + a1);
    float p[2] = {(float)(a0 == mx) / sum, (float)(a1 == mx) / sum};
    float scratch[2];
    int32_t axis = craftax_choice_p(key, p, 2, scratch);
    dir[0] = 0;
    dir[1] = 0;
    dir[axis] = craftax_sw_sign(s->player_position[axis] - pos[axis]);
}

/* The mob_map bookkeeping at the end of every mob move: clear the old cell if alive, set
 * the new one if alive and not despawning. Upstream writes mob_map[old] & !old_mask, then
 * mob_map[new] | new_mask: where the mask is 0 each write stores the cell's own value (a
 * write that is not dropped reads the same cell), so only the live cases store, and no
 * cell is read (a dead slot's stale cells were two scattered reads a step each). */
static inline CRAFTAX_HD void craftax_sw_move_mob_map(CraftaxState *s, const int32_t old_pos[2], uint8_t old_mask,
                                                      const int32_t new_pos[2], uint8_t new_mask) {
    uint8_t(*mm)[CRAFTAX_MAP_SIZE] = s->mob_map[s->player_level];
    if (old_mask) craftax_sw_map_write(mm, old_pos[0], old_pos[1], 0);
    if (new_mask) craftax_sw_map_write(mm, new_pos[0], new_pos[1], 1);
}

static inline CRAFTAX_HD int32_t craftax_sw_manhattan_to_player(const CraftaxState *s, const int32_t pos[2]) {
    return craftax_sw_abs(pos[0] - s->player_position[0]) + craftax_sw_abs(pos[1] - s->player_position[1]);
}

/* One iteration of update_mobs._move_melee_mob. Returns the carry key. */
static inline CRAFTAX_HD CraftaxKey craftax_sw_move_melee_mob(CraftaxState *s, CraftaxKey rng, int i,
                                                              const CraftaxParams *params) {
    const int32_t L = s->player_level;
    int32_t pos[2] = {s->mobs[L].melee_mobs.position[i][0], s->mobs[L].melee_mobs.position[i][1]};
    const uint8_t mask = s->mobs[L].melee_mobs.mask[i];
    const int32_t cooldown = s->mobs[L].melee_mobs.attack_cooldown[i];
    const int32_t type = s->mobs[L].melee_mobs.type_id[i];

    /* Upstream draws the random move, the move toward the player and the chase test, then
     * selects: each draw is made only where the selection reads it. */
    const CraftaxKey random_parent = craftax_split_lazily(&rng);
    const CraftaxKey toward_parent = craftax_split_lazily(&rng);
    const CraftaxKey chase_parent = craftax_split_lazily(&rng);

    const int32_t dist = craftax_sw_manhattan_to_player(s, pos);
    int close = dist < 10 || craftax_is_fighting_boss(s);
    close = close && craftax_uniform(craftax_split_at(chase_parent, 1), 0) < 0.75f;
    const int attacking = dist == 1 && cooldown <= 0 && mask;
    int32_t prop[2] = {pos[0], pos[1]};
    if (!attacking && close) {
        int32_t toward[2];
        craftax_sw_toward_player(s, pos, craftax_split_at(toward_parent, 1), toward);
        prop[0] += toward[0];
        prop[1] += toward[1];
    } else if (!attacking) {
        const int32_t r = craftax_randint(craftax_split_at(random_parent, 1), 0, 0, 4);
        prop[0] += CRAFTAX_DIRECTIONS[1 + r][0];
        prop[1] += CRAFTAX_DIRECTIONS[1 + r][1];
    }
    const int32_t tr = craftax_sw_read_idx(type, CRAFTAX_NUM_MOB_TYPES);
    const float sleep_mult = 1.0f + 2.5f * (float)s->is_sleeping;
    float base[3];
    for (int c = 0; c < 3; c++) base[c] = CRAFTAX_MOB_TYPE_DAMAGE_MAPPING[tr][MOB_CLASS_MELEE][c] * sleep_mult;
    const float damage = craftax_get_damage_done_to_player(s, base);
    const int32_t new_cooldown = attacking ? 5 : cooldown - 1;
    const int waking = s->is_sleeping && attacking;
    s->player_health = s->player_health - damage * (float)attacking;
    s->is_sleeping = s->is_sleeping && !attacking;
    s->is_resting = s->is_resting && !attacking;
    s->achievements[ACH_WAKE_UP] = s->achievements[ACH_WAKE_UP] || waking;

    const int32_t *coll = CRAFTAX_MOB_TYPE_COLLISION_MAPPING[tr][MOB_CLASS_MELEE];
    const int valid = craftax_is_position_in_bounds_not_in_mob_not_colliding(s, prop, coll);
    int32_t new_pos[2] = {valid ? prop[0] : pos[0], valid ? prop[1] : pos[1]};
    const int keep = dist < params->mob_despawn_distance || craftax_is_fighting_boss(s);

    const CraftaxKey carry = craftax_split_at(rng, 1); /* the scan carries the second half */

    const uint8_t new_mask = mask && keep;
    craftax_sw_move_mob_map(s, pos, mask, new_pos, new_mask);
    s->mobs[L].melee_mobs.position[i][0] = new_pos[0];
    s->mobs[L].melee_mobs.position[i][1] = new_pos[1];
    s->mobs[L].melee_mobs.attack_cooldown[i] = new_cooldown;
    s->mobs[L].melee_mobs.mask[i] = new_mask;
    return carry;
}

/* One iteration of update_mobs._move_passive_mob. Returns the carry key. */
static inline CRAFTAX_HD CraftaxKey craftax_sw_move_passive_mob(CraftaxState *s, CraftaxKey rng, int i,
                                                                const CraftaxParams *params) {
    const int32_t L = s->player_level;
    CraftaxKey k;
    int32_t pos[2] = {s->mobs[L].passive_mobs.position[i][0], s->mobs[L].passive_mobs.position[i][1]};
    const uint8_t mask = s->mobs[L].passive_mobs.mask[i];
    const int32_t tr = craftax_sw_read_idx(s->mobs[L].passive_mobs.type_id[i], CRAFTAX_NUM_MOB_TYPES);

    craftax_split2(rng, &rng, &k);
    int32_t r = craftax_randint(k, 0, 0, 8);
    int32_t prop[2] = {pos[0] + CRAFTAX_DIRECTIONS[1 + r][0], pos[1] + CRAFTAX_DIRECTIONS[1 + r][1]};
    const int32_t *coll = CRAFTAX_MOB_TYPE_COLLISION_MAPPING[tr][MOB_CLASS_PASSIVE];
    const int valid = craftax_is_position_in_bounds_not_in_mob_not_colliding(s, prop, coll);
    int32_t new_pos[2] = {valid ? prop[0] : pos[0], valid ? prop[1] : pos[1]};
    const int keep = craftax_sw_manhattan_to_player(s, pos) < params->mob_despawn_distance;
    const uint8_t new_mask = mask && keep;
    craftax_sw_move_mob_map(s, pos, mask, new_pos, new_mask);
    s->mobs[L].passive_mobs.position[i][0] = new_pos[0];
    s->mobs[L].passive_mobs.position[i][1] = new_pos[1];
    s->mobs[L].passive_mobs.mask[i] = new_mask;
    return rng;
}

/* One iteration of update_mobs._move_ranged_mob. Returns the carry key. */
static inline CRAFTAX_HD CraftaxKey craftax_sw_move_ranged_mob(CraftaxState *s, CraftaxKey rng, int i,
                                                               const CraftaxParams *params) {
    const int32_t L = s->player_level;
    int32_t pos[2] = {s->mobs[L].ranged_mobs.position[i][0], s->mobs[L].ranged_mobs.position[i][1]};
    const uint8_t mask = s->mobs[L].ranged_mobs.mask[i];
    const int32_t cooldown = s->mobs[L].ranged_mobs.attack_cooldown[i];
    const int32_t tr = craftax_sw_read_idx(s->mobs[L].ranged_mobs.type_id[i], CRAFTAX_NUM_MOB_TYPES);

    /* As the melee move: the move toward the player is drawn only where the selection or the
     * projectile reads it. */
    const CraftaxKey random_parent = craftax_split_lazily(&rng);
    const CraftaxKey toward_parent = craftax_split_lazily(&rng);
    const CraftaxKey pick_parent = craftax_split_lazily(&rng);

    const int32_t r = craftax_randint(craftax_split_at(random_parent, 1), 0, 0, 4);
    const int32_t random_prop[2] = {pos[0] + CRAFTAX_DIRECTIONS[1 + r][0], pos[1] + CRAFTAX_DIRECTIONS[1 + r][1]};
    const int32_t dist = craftax_sw_manhattan_to_player(s, pos);
    const int far = dist >= 6, too_close = dist <= 3;
    const int random_move = !(craftax_uniform(craftax_split_at(pick_parent, 1), 0) > 0.85f);
    int32_t toward[2] = {0, 0};
    int have_toward = 0;
    int32_t prop[2] = {random_prop[0], random_prop[1]};
    if (!random_move && (far || too_close)) {
        craftax_sw_toward_player(s, pos, craftax_split_at(toward_parent, 1), toward);
        have_toward = 1;
        for (int c = 0; c < 2; c++) prop[c] = far ? pos[c] + toward[c] : pos[c] - toward[c];
    }

    const int32_t *coll = CRAFTAX_MOB_TYPE_COLLISION_MAPPING[tr][MOB_CLASS_RANGED];
    int attacking = dist >= 4 && dist <= 5;
    attacking = attacking || (too_close && !craftax_is_position_in_bounds_not_in_mob_not_colliding(s, prop, coll));
    attacking = attacking && cooldown <= 0 && mask;

    int32_t live_projectiles = 0;
    for (int j = 0; j < CRAFTAX_MAX_MOB_PROJECTILES; j++) live_projectiles += s->mobs[L].mob_projectiles.mask[j] ? 1 : 0;
    const int spawning = attacking && live_projectiles < CRAFTAX_MAX_MOB_PROJECTILES;
    if (spawning && !have_toward) craftax_sw_toward_player(s, pos, craftax_split_at(toward_parent, 1), toward);
    craftax_sw_spawn_mob_projectile(s, pos, spawning, toward,
                                    CRAFTAX_RANGED_MOB_TYPE_TO_PROJECTILE_TYPE_MAPPING[tr]);

    if (attacking) {
        prop[0] = pos[0];
        prop[1] = pos[1];
    }
    const int32_t new_cooldown = attacking ? 4 : cooldown - 1;
    const int valid = craftax_is_position_in_bounds_not_in_mob_not_colliding(s, prop, coll);
    int32_t new_pos[2] = {valid ? prop[0] : pos[0], valid ? prop[1] : pos[1]};
    const int keep = dist < params->mob_despawn_distance || craftax_is_fighting_boss(s);
    const uint8_t new_mask = mask && keep;
    craftax_sw_move_mob_map(s, pos, mask, new_pos, new_mask);
    s->mobs[L].ranged_mobs.position[i][0] = new_pos[0];
    s->mobs[L].ranged_mobs.position[i][1] = new_pos[1];
    s->mobs[L].ranged_mobs.attack_cooldown[i] = new_cooldown;
    s->mobs[L].ranged_mobs.mask[i] = new_mask;
    return rng;
}

/* in_wall of the projectile moves: solid and not water ("arrows can go over water"). */
static inline CRAFTAX_HD int craftax_sw_projectile_in_wall(const CraftaxState *s, const int32_t p[2]) {
    uint8_t block = craftax_sw_map_read(s->map[s->player_level], p[0], p[1]);
    return craftax_is_in_solid_block(s, p) && block != BLOCK_WATER;
}

/* One iteration of update_mobs._move_mob_projectile (no draws). */
static inline CRAFTAX_HD void craftax_sw_move_mob_projectile(CraftaxState *s, int i) {
    const int32_t L = s->player_level;
    int32_t pos[2] = {s->mobs[L].mob_projectiles.position[i][0], s->mobs[L].mob_projectiles.position[i][1]};
    const uint8_t mask = s->mobs[L].mob_projectiles.mask[i];
    int32_t prop[2] = {pos[0] + s->mobs[L].mob_projectile_directions[i][0], pos[1] + s->mobs[L].mob_projectile_directions[i][1]};
    const int in_player = prop[0] == s->player_position[0] && prop[1] == s->player_position[1];
    const int inb = craftax_in_bounds(s, prop);
    const int in_wall = craftax_sw_projectile_in_wall(s, prop);
    const int in_mob = craftax_is_in_mob(s, prop);
    int cont = inb && !in_wall && !in_mob;
    const int hit0 = pos[0] == s->player_position[0] && pos[1] == s->player_position[1] && mask;
    const int hit1 = in_player && mask;
    const int hit = hit0 || hit1;
    cont = cont && !hit;
    const uint8_t new_mask = cont && mask;

    uint8_t block = craftax_sw_map_read(s->map[L], prop[0], prop[1]);
    const int removing = (block == BLOCK_FURNACE || block == BLOCK_CRAFTING_TABLE) && mask;
    const uint8_t new_block = removing ? (uint8_t)BLOCK_PATH : block;

    const int32_t ptype = craftax_sw_read_idx(s->mobs[L].mob_projectiles.type_id[i], CRAFTAX_NUM_MOB_TYPES);
    float base[3];
    for (int c = 0; c < 3; c++) base[c] = CRAFTAX_MOB_TYPE_DAMAGE_MAPPING[ptype][MOB_CLASS_PROJECTILE][c];
    const float damage = craftax_get_damage_done_to_player(s, base);

    s->mobs[L].mob_projectiles.position[i][0] = prop[0];
    s->mobs[L].mob_projectiles.position[i][1] = prop[1];
    s->mobs[L].mob_projectiles.mask[i] = new_mask;
    s->player_health = s->player_health - damage * (float)hit;
    s->is_sleeping = s->is_sleeping && !hit;
    s->is_resting = s->is_resting && !hit;
    craftax_sw_map_write(s->map[L], prop[0], prop[1], new_block);
}

/* One iteration of update_mobs._move_player_projectile (no draws). */
static inline CRAFTAX_HD void craftax_sw_move_player_projectile(CraftaxState *s, int i) {
    const int32_t L = s->player_level;
    int32_t pos[2] = {s->mobs[L].player_projectiles.position[i][0], s->mobs[L].player_projectiles.position[i][1]};
    const uint8_t mask = s->mobs[L].player_projectiles.mask[i];
    const int32_t ptype = s->mobs[L].player_projectiles.type_id[i];
    const int32_t tr = craftax_sw_read_idx(ptype, CRAFTAX_NUM_MOB_TYPES);
    float dmg[3];
    for (int c = 0; c < 3; c++) dmg[c] = CRAFTAX_MOB_TYPE_DAMAGE_MAPPING[tr][MOB_CLASS_PROJECTILE][c] * (float)mask;
    const int is_arrow = ptype == PROJECTILE_ARROW || ptype == PROJECTILE_ARROW2;
    float add[3] = {0.0f, 0.0f, 0.0f};
    {
        int32_t w = craftax_sw_write_idx(s->bow_enchantment, 3);
        if (w >= 0) add[w] = dmg[0] / 2.0f;
        add[0] = 0.0f;
    }
    if (is_arrow)
        for (int c = 0; c < 3; c++) dmg[c] = dmg[c] + add[c];
    else
        for (int c = 0; c < 3; c++) dmg[c] = dmg[c] + 0.0f;
    const float arrow_coeff = 1.0f + 0.2f * (float)(s->player_dexterity - 1);
    const float magic_coeff = 1.0f + 0.5f * (float)(s->player_intelligence - 1);
    const float c1 = is_arrow ? arrow_coeff : 1.0f;
    const int is_magic = ptype == PROJECTILE_FIREBALL || ptype == PROJECTILE_ICEBALL;
    const float c2 = is_magic ? magic_coeff : 1.0f;
    for (int c = 0; c < 3; c++) dmg[c] = (dmg[c] * c1) * c2;

    int32_t prop[2] = {pos[0] + s->mobs[L].player_projectile_directions[i][0],
                       pos[1] + s->mobs[L].player_projectile_directions[i][1]};
    const int inb = craftax_in_bounds(s, prop);
    const int in_wall = craftax_sw_projectile_in_wall(s, prop);

    /* An inactive projectile (mask 0) attacks with zero damage: health + -0 keeps every finite
     * health's bits (set_state admits only finite ones), so no kill, achievement or count
     * changes, and its own mask stays 0 whatever `did` says; the mask update its calls would
     * redo changes nothing (craftax_attack_mob_class). So they are left out. */
    int did0 = mask ? craftax_sw_attack_mob(s, pos, dmg, 0) : 0;
    for (int c = 0; c < 3; c++) dmg[c] = dmg[c] * (float)(1 - did0);
    int did1 = mask ? craftax_sw_attack_mob(s, prop, dmg, 0) : 0;
    const int did = did0 || did1;
    const int cont = inb && !in_wall && !did;
    s->mobs[L].player_projectiles.position[i][0] = prop[0];
    s->mobs[L].player_projectiles.position[i][1] = prop[1];
    s->mobs[L].player_projectiles.mask[i] = cont && mask;
}

/* game_logic.py:update_mobs. Key use: every scan starts from the
 * first half of a split of the previous carry; the melee scan carries the second half of
 * each iteration's last split. */
static inline CRAFTAX_HD void craftax_update_mobs(CraftaxState *state, CraftaxKey rng, const CraftaxParams *params) {
    /* each `rng, _rng = split(rng)` here leaves _rng unused: only the first halves are made */
    rng = craftax_split_at(rng, 0);
    for (int i = 0; i < CRAFTAX_MAX_MELEE_MOBS; i++) rng = craftax_sw_move_melee_mob(state, rng, i, params);
    rng = craftax_split_at(rng, 0);
    for (int i = 0; i < CRAFTAX_MAX_PASSIVE_MOBS; i++) rng = craftax_sw_move_passive_mob(state, rng, i, params);
    rng = craftax_split_at(rng, 0);
    for (int i = 0; i < CRAFTAX_MAX_RANGED_MOBS; i++) rng = craftax_sw_move_ranged_mob(state, rng, i, params);
    /* the projectile scans draw nothing: their splits are left out */
    for (int i = 0; i < CRAFTAX_MAX_MOB_PROJECTILES; i++) craftax_sw_move_mob_projectile(state, i);
    for (int i = 0; i < CRAFTAX_MAX_PLAYER_PROJECTILES; i++) craftax_sw_move_player_projectile(state, i);
}

/* ---- spawn_mobs ---------------------------------------------------------------------- */

/* First free slot (argmax of not-mask; 0 when all are taken). */
static inline CRAFTAX_HD int craftax_sw_first_free(const uint8_t *mask, int n) {
    for (int j = 0; j < n; j++)
        if (!mask[j]) return j;
    return 0;
}

#define CRAFTAX_SW_SPAWN_INTO(MOBS, N, CAN, CELL, TYPE, HEALTH)                                                  \
    do {                                                                                                         \
        const int32_t L_ = s->player_level;                                                                      \
        const int idx_ = craftax_sw_first_free(s->mobs[L_].MOBS.mask, (N));                                          \
        int32_t np_[2] = {(CAN) ? (CELL)[0] : s->mobs[L_].MOBS.position[idx_][0],                                    \
                          (CAN) ? (CELL)[1] : s->mobs[L_].MOBS.position[idx_][1]};                                   \
        const float nh_ = (CAN) ? (HEALTH) : s->mobs[L_].MOBS.health[idx_];                                          \
        const uint8_t nm_ = (CAN) ? 1 : s->mobs[L_].MOBS.mask[idx_];                                                 \
        s->mobs[L_].MOBS.position[idx_][0] = np_[0];                                                                 \
        s->mobs[L_].MOBS.position[idx_][1] = np_[1];                                                                 \
        s->mobs[L_].MOBS.health[idx_] = nh_;                                                                         \
        s->mobs[L_].MOBS.mask[idx_] = nm_;                                                                           \
        s->mobs[L_].MOBS.type_id[idx_] = (TYPE);                                                                     \
        uint8_t v_ = craftax_sw_map_read(s->mob_map[L_], np_[0], np_[1]) || nm_;                               \
        craftax_sw_map_write(s->mob_map[L_], np_[0], np_[1], v_);                                               \
    } while (0)

/* melee_mob_spawn_chance = chance[l,1] + chance[l,3] * (1 - light)^2, written as XLA's
 * usual fused multiply-add. Not discriminated by the tests: the fused and unfused values
 * differ by at most 1 ulp, and only a uniform draw falling between them (~1e-8 per step
 * on level 0) could tell. The attribute coefficients elsewhere (1 + 0.2 (dex-1), ...)
 * round identically fused or not for every attribute value 1..5. */
static inline CRAFTAX_HD float craftax_sw_melee_spawn_chance(int32_t level, float light_level) {
    float d = 1.0f - light_level;
    return fmaf(CRAFTAX_FLOOR_MOB_SPAWN_CHANCE[level][3], d * d, CRAFTAX_FLOOR_MOB_SPAWN_CHANCE[level][1]);
}

/* Upstream's candidate mask of one cell for mob class cls (0 passive, 1 melee, 2 ranged):
 * block b, mob_map cell mob, distance d to the player. */
static inline CRAFTAX_HD int craftax_sw_is_candidate(uint8_t b, uint8_t mob, float d, float despawn, int boss, int cls,
                                                     int32_t ranged_type) {
    const int within = d < despawn && !mob;
    const int grave = b == BLOCK_GRAVE || b == BLOCK_GRAVE2 || b == BLOCK_GRAVE3;
    const int valid = b == BLOCK_GRASS || b == BLOCK_PATH || b == BLOCK_FIRE_GRASS || b == BLOCK_ICE_GRASS;
    const int monster_range = boss ? (d <= 6.0f) : (d > 9.0f);
    if (cls == 0) return valid && d > 3.0f && within;
    if (cls == 1) return (boss ? grave : valid) && monster_range && within;
    int base = ranged_type == 5 ? b == BLOCK_WATER : valid;
    base = boss ? grave : base;
    return base && monster_range && within;
}

/* The candidate cells of one mob class (see craftax_sw_is_candidate) into c->rows, from the
 * current map and mob_map: in range (d = sqrt(dx^2 + dy^2) to the player < mob_despawn_distance)
 * and free of mobs; passive: grass-like block and d > 3; melee and ranged: d > 9 (d <= 6 in
 * a boss fight) on a grass-like block (ranged type 5: water; boss fight: a grave). Only the
 * box |dx|, |dy| < mob_despawn_distance is scanned: d >= |dx|, |dy| (sqrtf is monotone and
 * exact at squares), so no cell outside it is in range. Lanes (common.h) take consecutive
 * cells of a box row (one transaction per map for the warp), rows go four at a time with
 * their loads first (a row at a time waits a memory latency per row, a large share of the
 * step kernel's stalls), and a row's candidates come together by ballot.
 * Returns the number of candidates (every lane); ends synced. */
static inline CRAFTAX_HD int32_t craftax_sw_spawn_candidates(const CraftaxState *s, const CraftaxParams *params,
                                                             int boss, int cls, int32_t ranged_type,
                                                             CraftaxCellChoice *c, int lane, int lanes) {
    const int32_t L = s->player_level;
    const float despawn = (float)params->mob_despawn_distance;
    const int32_t px = s->player_position[0], py = s->player_position[1];
    const int32_t r = craftax_min_i32(craftax_max_i32(params->mob_despawn_distance, 0), CRAFTAX_MAP_SIZE);
    craftax_cell_rows_clear(c->rows, lane, lanes);
    craftax_lanes_sync(lanes);
    int32_t total = 0;
    const int32_t x_lo = craftax_max_i32(px - r + 1, 0), x_hi = craftax_min_i32(px + r - 1, CRAFTAX_MAP_SIZE - 1);
    const int32_t y_lo = craftax_max_i32(py - r + 1, 0), y_hi = craftax_min_i32(py + r - 1, CRAFTAX_MAP_SIZE - 1);
    enum { ROWS = 4 };
    for (int32_t y0 = y_lo; y0 <= y_hi; y0 += CRAFTAX_LANE_STRIDE(lanes)) {
        const int32_t y = y0 + CRAFTAX_LANE_FIRST(lane);
        const int32_t dy = craftax_sw_abs(y - py);
        for (int32_t x0 = x_lo; x0 <= x_hi; x0 += ROWS) {
            uint8_t b[ROWS], mob[ROWS];
            for (int k = 0; k < ROWS; k++) {
                const int in_box = x0 + k <= x_hi && y <= y_hi;
                b[k] = in_box ? s->map[L][x0 + k][y] : (uint8_t)0;
                mob[k] = in_box ? s->mob_map[L][x0 + k][y] : (uint8_t)1;
            }
            for (int k = 0; k < ROWS && x0 + k <= x_hi; k++) {
                const int32_t dx = craftax_sw_abs(x0 + k - px);
                const float d = sqrtf((float)(dx * dx + dy * dy));
                const int cand = y <= y_hi && craftax_sw_is_candidate(b[k], mob[k], d, despawn, boss, cls, ranged_type);
                const uint32_t row = craftax_lanes_ballot(cand, lanes); /* bit l: cell y0 + l */
                if (row && lane == 0) c->rows[x0 + k] |= (uint64_t)row << y0;
                total += craftax_popc32(row);
            }
        }
    }
    craftax_lanes_sync(lanes);
    return total;
}

#ifdef __CUDA_ARCH__
/* A warp's CraftaxCellChoice in shared memory, for the lanes that scan and choose together
 * (a per-lane copy in local memory, 1.1 KB, would be written by every lane of the warp). The
 * step kernels run blocks of at most CRAFTAX_SW_BLOCK_WARPS warps. */
#define CRAFTAX_SW_BLOCK_WARPS 4
static __device__ __forceinline__ CraftaxCellChoice *craftax_sw_warp_choice(void) {
    __shared__ CraftaxCellChoice space[CRAFTAX_SW_BLOCK_WARPS];
    if (threadIdx.x >= 32 * CRAFTAX_SW_BLOCK_WARPS) __trap();
    return &space[threadIdx.x / 32];
}
#endif

/* One class of spawn_mobs: the candidate count (0 where !can) and, where can and the count
 * is > 0, the chosen cell (key: the choice's key). lanes = 32: the warp's lanes share one
 * env. share_scans (GPU only): each lane steps its own env (a thread per env) and all 32
 * lanes of the warp call this together; the lanes that need a spawn are then served one
 * after another by the whole warp, which reads a box row of the owner's env per transaction
 * instead of each lane reading its own box cell by cell. Every lane gets its own result. */
static inline CRAFTAX_HD int32_t craftax_sw_class_spawn_cell(const CraftaxState *s, const CraftaxParams *params,
                                                             int can, int boss, int cls, int32_t ranged_type,
                                                             CraftaxKey key, int32_t cell[2], int lane, int lanes,
                                                             int share_scans) {
#ifdef __CUDA_ARCH__
    if (share_scans || lanes == CRAFTAX_WARP_LANES) {
        CraftaxCellChoice *c = craftax_sw_warp_choice();
        if (!share_scans) {
            const int32_t total = can ? craftax_sw_spawn_candidates(s, params, boss, cls, ranged_type, c, lane, lanes) : 0;
            if (can && total > 0) craftax_cell_choice_normalised(key, c, total, lane, lanes, cell);
            return total;
        }
        const int me = (int)(threadIdx.x & 31u);
        __syncwarp(); /* the lanes' own spawns so far are visible to the whole warp */
        uint32_t need = __ballot_sync(0xffffffffu, can);
        int32_t total = 0;
        while (need) {
            const int owner = __ffs(need) - 1;
            need &= need - 1;
            const CraftaxState *so = (const CraftaxState *)(uintptr_t)__shfl_sync(
                0xffffffffu, (unsigned long long)(uintptr_t)s, owner);
            const int boss_o = __shfl_sync(0xffffffffu, boss, owner);
            const int32_t type_o = __shfl_sync(0xffffffffu, ranged_type, owner);
            const CraftaxKey key_o = {{__shfl_sync(0xffffffffu, key.k[0], owner), __shfl_sync(0xffffffffu, key.k[1], owner)}};
            const int32_t t = craftax_sw_spawn_candidates(so, params, boss_o, cls, type_o, c, me, CRAFTAX_WARP_LANES);
            int32_t chosen[2] = {0, 0};
            if (t > 0) craftax_cell_choice_normalised(key_o, c, t, me, CRAFTAX_WARP_LANES, chosen);
            if (me == owner) {
                total = t;
                cell[0] = chosen[0];
                cell[1] = chosen[1];
            }
        }
        return total;
    }
#endif
    (void)share_scans;
    if (!can) return 0;
    CraftaxCellChoice c;
    const int32_t total = craftax_sw_spawn_candidates(s, params, boss, cls, ranged_type, &c, lane, lanes);
    if (total > 0) craftax_cell_choice_normalised(key, &c, total, lane, lanes, cell);
    return total;
}

/* game_logic.py:spawn_mobs. Every lane runs it (lanes: common.h) and reaches the same
 * decisions from the same state; lane 0 alone writes the spawned mob, and the lanes sync
 * before the next class reads mob_map. Callers sync the lanes before it too. share_scans:
 * see craftax_sw_class_spawn_cell (one lane per env; 0 on a CPU). */
static inline CRAFTAX_HD void craftax_spawn_mobs_lanes(CraftaxState *s, CraftaxKey rng, const CraftaxParams *params,
                                                       int lane, int lanes, int share_scans) {
    const int32_t L = s->player_level;
    const int boss = craftax_is_fighting_boss(s);
    int32_t coeff = 1 + (s->monsters_killed[L] < CRAFTAX_MONSTERS_KILLED_TO_CLEAR_LEVEL) * 2;
    coeff *= boss ? craftax_is_boss_spawn_wave(s) * 1000 : 1;
    CraftaxKey k;
    int32_t cell[2] = {0, 0};
    int32_t count, total;

    /* Passive */
    count = 0;
    for (int j = 0; j < CRAFTAX_MAX_PASSIVE_MOBS; j++) count += s->mobs[L].passive_mobs.mask[j];
    int can = count < CRAFTAX_MAX_PASSIVE_MOBS;
    /* each class's chance draw is made only where its count allows a spawn, and its cell
     * choice's key only where the chance passes (craftax_split_lazily) */
    k = craftax_split_lazily(&rng);
    can = can && craftax_uniform(craftax_split_at(k, 1), 0) < CRAFTAX_FLOOR_MOB_SPAWN_CHANCE[L][0];
    can = can && !boss;
    k = craftax_split_lazily(&rng);
    if (can) k = craftax_split_at(k, 1);
    total = craftax_sw_class_spawn_cell(s, params, can, boss, 0, 0, k, cell, lane, lanes, share_scans);
    can = can && total > 0;
    if (lane == 0) {
        const int32_t type = CRAFTAX_FLOOR_MOB_MAPPING[L][MOB_CLASS_PASSIVE];
        CRAFTAX_SW_SPAWN_INTO(passive_mobs, CRAFTAX_MAX_PASSIVE_MOBS, can, cell, type,
                              CRAFTAX_MOB_TYPE_HEALTH_MAPPING[type][MOB_CLASS_PASSIVE]);
    }
    craftax_lanes_sync(lanes);

    /* Melee */
    count = 0;
    for (int j = 0; j < CRAFTAX_MAX_MELEE_MOBS; j++) count += s->mobs[L].melee_mobs.mask[j];
    can = count < CRAFTAX_MAX_MELEE_MOBS;
    const int32_t melee_type = boss ? CRAFTAX_FLOOR_MOB_MAPPING[craftax_sw_read_idx(s->boss_progress, CRAFTAX_NUM_LEVELS)]
                                                               [MOB_CLASS_MELEE]
                                    : CRAFTAX_FLOOR_MOB_MAPPING[L][MOB_CLASS_MELEE];
    k = craftax_split_lazily(&rng);
    can = can && craftax_uniform(craftax_split_at(k, 1), 0) < craftax_sw_melee_spawn_chance(L, s->light_level) * (float)coeff;
    k = craftax_split_lazily(&rng);
    if (can) k = craftax_split_at(k, 1);
    total = craftax_sw_class_spawn_cell(s, params, can, boss, 1, 0, k, cell, lane, lanes, share_scans); /* after the passive spawn */
    can = can && total > 0;
    if (lane == 0)
        CRAFTAX_SW_SPAWN_INTO(melee_mobs, CRAFTAX_MAX_MELEE_MOBS, can, cell, melee_type,
                              CRAFTAX_MOB_TYPE_HEALTH_MAPPING[melee_type][MOB_CLASS_MELEE]);
    craftax_lanes_sync(lanes);

    /* Ranged */
    count = 0;
    for (int j = 0; j < CRAFTAX_MAX_RANGED_MOBS; j++) count += s->mobs[L].ranged_mobs.mask[j];
    can = count < CRAFTAX_MAX_RANGED_MOBS;
    const int32_t ranged_type = boss ? CRAFTAX_FLOOR_MOB_MAPPING[craftax_sw_read_idx(s->boss_progress, CRAFTAX_NUM_LEVELS)]
                                                                [MOB_CLASS_RANGED]
                                     : CRAFTAX_FLOOR_MOB_MAPPING[L][MOB_CLASS_RANGED];
    k = craftax_split_lazily(&rng);
    can = can && craftax_uniform(craftax_split_at(k, 1), 0) < CRAFTAX_FLOOR_MOB_SPAWN_CHANCE[L][2] * (float)coeff;
    k = rng; /* the last split: its first half is never read */
    if (can) k = craftax_split_at(k, 1);
    total = craftax_sw_class_spawn_cell(s, params, can, boss, 2, ranged_type, k, cell, lane, lanes, share_scans);
    can = can && total > 0;
    if (lane == 0)
        CRAFTAX_SW_SPAWN_INTO(ranged_mobs, CRAFTAX_MAX_RANGED_MOBS, can, cell, ranged_type,
                              CRAFTAX_MOB_TYPE_HEALTH_MAPPING[ranged_type][MOB_CLASS_RANGED]);
    craftax_lanes_sync(lanes);
}
#undef CRAFTAX_SW_SPAWN_INTO

/* game_logic.py:spawn_mobs on one lane. */
static inline CRAFTAX_HD void craftax_spawn_mobs(CraftaxState *s, CraftaxKey rng, const CraftaxParams *params) {
    craftax_spawn_mobs_lanes(s, rng, params, 0, 1, 0);
}

/* ---- update_plants ------------------------------------------------------------------- */

static inline CRAFTAX_HD void craftax_update_plants(CraftaxState *s) {
    uint8_t finished[CRAFTAX_MAX_GROWING_PLANTS];
    for (int i = 0; i < CRAFTAX_MAX_GROWING_PLANTS; i++) {
        int32_t age = (int32_t)((uint32_t)s->growing_plants_age[i] + 1u) * (int32_t)s->growing_plants_mask[i];
        s->growing_plants_age[i] = age;
        finished[i] = age >= 600;
    }
    /* upstream writes map[0][plant] = finished ? RIPE_PLANT : map[0][plant]; the unfinished
     * plants' writes store the cell's own value (see craftax_sw_move_mob_map) */
    for (int i = 0; i < CRAFTAX_MAX_GROWING_PLANTS; i++)
        if (finished[i])
            craftax_sw_map_write(s->map[0], s->growing_plants_positions[i][0], s->growing_plants_positions[i][1],
                                 (uint8_t)BLOCK_RIPE_PLANT);
}

/* ---- update_player_intrinsics -------------------------------------------------------- */

static inline CRAFTAX_HD void craftax_update_player_intrinsics(CraftaxState *s, int32_t action) {
    const int32_t max_energy = 7 + 2 * s->player_dexterity;
    const int32_t max_health = 8 + s->player_strength;
    /* sleep */
    s->is_sleeping = s->is_sleeping || (action == ACTION_SLEEP && s->player_energy < max_energy);
    const int waking = s->player_energy >= max_energy && s->is_sleeping;
    s->is_sleeping = s->is_sleeping && !waking;
    s->achievements[ACH_WAKE_UP] = s->achievements[ACH_WAKE_UP] || waking;
    /* rest */
    s->is_resting = s->is_resting || (action == ACTION_REST && s->player_health < (float)max_health);
    const int stop_rest = s->is_resting && (s->player_health >= (float)max_health || s->player_food <= 0 ||
                                            s->player_drink <= 0);
    s->is_resting = s->is_resting && !stop_rest;

    const int32_t not_boss = !craftax_is_fighting_boss(s);
    const float decay = 1.0f - 0.125f * (float)(s->player_dexterity - 1);
    const int sleeping = s->is_sleeping;

    /* hunger */
    float hunger = s->player_hunger + (sleeping ? 0.5f : 1.0f) * decay;
    if (hunger > 25.0f) {
        s->player_food = craftax_max_i32(s->player_food - 1 * not_boss, 0);
        hunger = 0.0f;
    }
    s->player_hunger = hunger;
    /* thirst */
    float thirst = s->player_thirst + (sleeping ? 0.5f : 1.0f) * decay;
    if (thirst > 20.0f) {
        s->player_drink = craftax_max_i32(s->player_drink - 1 * not_boss, 0);
        thirst = 0.0f;
    }
    s->player_thirst = thirst;
    /* fatigue */
    float fatigue = sleeping ? fminf(s->player_fatigue - 1.0f, 0.0f) : s->player_fatigue + decay;
    int32_t energy = s->player_energy;
    if (fatigue > 30.0f) {
        energy = craftax_max_i32(s->player_energy - 1 * not_boss, 0);
        fatigue = 0.0f;
    }
    if (fatigue < -10.0f) {
        energy = craftax_min_i32(s->player_energy + 1, max_energy);
        fatigue = 0.0f;
    }
    s->player_fatigue = fatigue;
    s->player_energy = energy;
    /* health */
    const int all = s->player_food > 0 && s->player_drink > 0 && (s->player_energy > 0 || sleeping);
    const float recover_all = sleeping ? 2.0f : 1.0f;
    const float recover_not_all = (sleeping ? -0.5f : -1.0f) * (float)not_boss;
    float recover = s->player_recover + (all ? recover_all : recover_not_all);
    float health = s->player_health;
    if (recover > 25.0f) {
        health = fminf(s->player_health + 1.0f, (float)max_health);
        recover = 0.0f;
    }
    if (recover < -15.0f) {
        health = s->player_health - 1.0f;
        recover = 0.0f;
    }
    s->player_recover = recover;
    s->player_health = health;
    /* mana */
    const float mana_coeff = 1.0f + 0.25f * (float)(s->player_intelligence - 1);
    float recover_mana = (sleeping ? s->player_recover_mana + 2.0f : s->player_recover_mana + 1.0f) * mana_coeff;
    if (recover_mana > 30.0f) {
        s->player_mana = s->player_mana + 1;
        recover_mana = 0.0f;
    }
    s->player_recover_mana = recover_mana;
}

/* ---- calculate_inventory_achievements ------------------------------------------------ */

static inline CRAFTAX_HD void craftax_calculate_inventory_achievements(CraftaxState *s) {
    uint8_t *a = s->achievements;
    const CraftaxInventory *inv = &s->inventory;
    a[ACH_COLLECT_WOOD] |= inv->wood > 0;
    a[ACH_COLLECT_STONE] |= inv->stone > 0;
    a[ACH_COLLECT_COAL] |= inv->coal > 0;
    a[ACH_COLLECT_IRON] |= inv->iron > 0;
    a[ACH_COLLECT_DIAMOND] |= inv->diamond > 0;
    a[ACH_COLLECT_RUBY] |= inv->ruby > 0;
    a[ACH_COLLECT_SAPPHIRE] |= inv->sapphire > 0;
    a[ACH_COLLECT_SAPLING] |= inv->sapling > 0;
    a[ACH_FIND_BOW] |= inv->bow > 0;
    a[ACH_MAKE_ARROW] |= inv->arrows > 0;
    a[ACH_MAKE_TORCH] |= inv->torches > 0;
    a[ACH_MAKE_WOOD_PICKAXE] |= inv->pickaxe >= 1;
    a[ACH_MAKE_STONE_PICKAXE] |= inv->pickaxe >= 2;
    a[ACH_MAKE_IRON_PICKAXE] |= inv->pickaxe >= 3;
    a[ACH_MAKE_DIAMOND_PICKAXE] |= inv->pickaxe >= 4;
    a[ACH_MAKE_WOOD_SWORD] |= inv->sword >= 1;
    a[ACH_MAKE_STONE_SWORD] |= inv->sword >= 2;
    a[ACH_MAKE_IRON_SWORD] |= inv->sword >= 3;
    a[ACH_MAKE_DIAMOND_SWORD] |= inv->sword >= 4;
}

/* ---- is_game_over -------------------------------------------------------------------- */

static inline CRAFTAX_HD int craftax_is_game_over(const CraftaxState *s, const CraftaxParams *params) {
    return s->timestep >= params->max_timesteps || s->player_health <= 0.0f ||
           s->boss_progress >= CRAFTAX_NUM_LEVELS - 1;
}

#endif
