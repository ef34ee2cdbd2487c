/* player_hooks.c: test hooks of the player-side subsystems (craftax_test_player.h), built into
 * pycraftax._craftax_test only (PYCRAFTAX_TEST_HOOKS=1). */
#include "craftax_api.h"
#include "craftax_test_player.h"

#include <stdlib.h>

#include "craftax/step_player.h"

static void apply_one(int id, CraftaxState *s, int32_t action, CraftaxKey key, const CraftaxParams *params) {
    switch (id) {
    case CRAFTAX_SUB_CHANGE_FLOOR: craftax_change_floor(s, action, params); break;
    case CRAFTAX_SUB_DO_CRAFTING: craftax_do_crafting(s, action); break;
    case CRAFTAX_SUB_DO_ACTION: craftax_do_action(s, key, action, params); break;
    case CRAFTAX_SUB_PLACE_BLOCK: craftax_place_block(s, action, params); break;
    case CRAFTAX_SUB_SHOOT_PROJECTILE: craftax_shoot_projectile(s, action, params); break;
    case CRAFTAX_SUB_CAST_SPELL: craftax_cast_spell(s, action, params); break;
    case CRAFTAX_SUB_DRINK_POTION: craftax_drink_potion(s, action); break;
    case CRAFTAX_SUB_READ_BOOK: craftax_read_book(s, key, action); break;
    case CRAFTAX_SUB_ENCHANT: craftax_enchant(s, key, action); break;
    case CRAFTAX_SUB_BOSS_LOGIC: craftax_boss_logic(s, params); break;
    case CRAFTAX_SUB_LEVEL_UP_ATTRIBUTES: craftax_level_up_attributes(s, action, params); break;
    case CRAFTAX_SUB_MOVE_PLAYER: craftax_move_player(s, action, params); break;
    case CRAFTAX_SUB_CLIP_INVENTORY_AND_INTRINSICS: craftax_clip_inventory_and_intrinsics(s, params); break;
    default: break;
    }
}

int craftax_test_player_subsystem(int subsystem_id, void *states, const int32_t *actions, const uint32_t *keys,
                                  int64_t num_envs, const CraftaxParams *params) {
    if (subsystem_id < 0 || subsystem_id >= CRAFTAX_SUB_COUNT) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (num_envs > 0 && (!states || !actions || !params)) return CRAFTAX_ERR_NULL;
    CraftaxState *s = (CraftaxState *)states;
    for (int64_t i = 0; i < num_envs; i++) {
        CraftaxKey key = {{0u, 0u}};
        if (keys) {
            key.k[0] = keys[2 * i];
            key.k[1] = keys[2 * i + 1];
        }
        apply_one(subsystem_id, &s[i], actions[i], key, params);
    }
    return 0;
}

int craftax_test_player_damage_vector(const void *states, int64_t num_envs, float *out) {
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    const CraftaxState *s = (const CraftaxState *)states;
    for (int64_t i = 0; i < num_envs; i++) craftax_get_player_damage_vector(&s[i], out + 3 * i);
    return 0;
}

int craftax_test_damage_done_to_player(const void *states, const float *damage_vectors, int64_t num_envs, float *out) {
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    const CraftaxState *s = (const CraftaxState *)states;
    for (int64_t i = 0; i < num_envs; i++) out[i] = craftax_get_damage_done_to_player(&s[i], damage_vectors + 3 * i);
    return 0;
}

int craftax_test_attack_mob(void *states, const int32_t *positions, const float *damage_vectors, const int32_t *can_eat,
                            int64_t num_envs, int32_t *did_attack, int32_t *did_kill) {
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    CraftaxState *s = (CraftaxState *)states;
    for (int64_t i = 0; i < num_envs; i++) {
        int a, k;
        craftax_attack_mob(&s[i], positions + 2 * i, damage_vectors + 3 * i, can_eat[i], &a, &k);
        did_attack[i] = a;
        did_kill[i] = k;
    }
    return 0;
}

int craftax_test_player_damage_vector_fields(const int32_t *sword, const int32_t *sword_enchantment,
                                             const int32_t *strength, const int32_t *intelligence, int64_t num,
                                             float *out) {
    if (num < 0) return CRAFTAX_ERR_NUM_ENVS;
    CraftaxState *s = (CraftaxState *)calloc(1, sizeof(CraftaxState));
    if (!s) return CRAFTAX_ERR_NO_MEMORY;
    for (int64_t i = 0; i < num; i++) {
        s->inventory.sword = sword[i];
        s->sword_enchantment = sword_enchantment[i];
        s->player_strength = strength[i];
        s->player_intelligence = intelligence[i];
        craftax_get_player_damage_vector(s, out + 3 * i);
    }
    free(s);
    return 0;
}

int craftax_test_damage_done_to_player_fields(const int32_t *armour, const int32_t *armour_enchantments,
                                              const int32_t *level, const float *damage_vectors, int64_t num,
                                              float *out) {
    if (num < 0) return CRAFTAX_ERR_NUM_ENVS;
    CraftaxState *s = (CraftaxState *)calloc(1, sizeof(CraftaxState));
    if (!s) return CRAFTAX_ERR_NO_MEMORY;
    for (int64_t i = 0; i < num; i++) {
        for (int k = 0; k < 4; k++) {
            s->inventory.armour[k] = armour[4 * i + k];
            s->armour_enchantments[k] = armour_enchantments[4 * i + k];
        }
        s->player_level = level[i];
        out[i] = craftax_get_damage_done_to_player(s, damage_vectors + 3 * i);
    }
    free(s);
    return 0;
}

int craftax_test_position_predicates(const void *states, const int32_t *positions, const int32_t *collision,
                                     const int32_t *block, int64_t num_envs, int32_t *out) {
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    const CraftaxState *s = (const CraftaxState *)states;
    for (int64_t i = 0; i < num_envs; i++) {
        const int32_t *p = positions + 2 * i;
        out[5 * i + 0] = craftax_in_bounds(&s[i], p);
        out[5 * i + 1] = craftax_is_in_solid_block(&s[i], p);
        out[5 * i + 2] = craftax_is_in_mob(&s[i], p);
        out[5 * i + 3] = craftax_is_position_in_bounds_not_in_mob_not_colliding(&s[i], p, collision + 3 * i);
        out[5 * i + 4] = craftax_is_near_block(&s[i], block[i]);
    }
    return 0;
}
