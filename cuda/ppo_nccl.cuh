/* ppo_nccl.cuh: data-parallel training across GPUs: NCCL, loaded at run time, the gradient
 * all-reduce of every minibatch, and the wait for an iteration that notices a dead peer.
 *
 * Every process (rank) holds a replica of the weights and Adam moments and runs its own envs. After
 * each minibatch's backward the gradients are averaged over the ranks (ncclAllReduce, ncclAvg, in
 * place on the trainer's stream), before the global-norm clip and Adam: NCCL hands every rank the
 * same reduced bits, so every replica computes the same norm, clip factor and Adam step, and the
 * weights stay bitwise equal across ranks. The all-reduce is enqueued like any kernel, so it is
 * captured in the iteration's CUDA graph (NCCL supports stream capture since 2.9; ncclAvg needs
 * 2.10, checked at load).
 *
 * With one process (no craftax_ppo_set_distributed, or world size 1) t->dist stays NULL: nothing
 * here is loaded or enqueued, and the trainer runs exactly its single-GPU code.
 *
 * NCCL is dlopen'ed (libnccl.so.2, or the path of craftax_ppo_set_nccl_path, e.g. the one of the
 * nvidia-nccl-cu13 wheel: nvidia/nccl/lib/libnccl.so.2) so the library keeps loading where NCCL
 * is absent; the few entry points and types used are declared here, so no NCCL header is needed
 * to build.
 */
#ifndef CRAFTAX_PPO_NCCL_CUH
#define CRAFTAX_PPO_NCCL_CUH

#include <time.h>

#include "ppo_common.cuh"

/* ---- NCCL types and constants (nccl.h's values; the header is not needed to build) ------- */
typedef int ncclResult;
typedef struct ncclComm *ncclCommHandle;
typedef struct {
    char internal[CRAFTAX_PPO_NCCL_ID_BYTES];
} ncclUniqueId;
enum { NCCL_SUCCESS = 0, NCCL_IN_PROGRESS = 7, NCCL_FLOAT32 = 7, NCCL_AVG = 4 };
/* ncclAvg is 2.10's; NCCL_VERSION(2, 10, 0) is 21000 */
#define NCCL_MIN_VERSION 21000

static struct {
    void *lib;
    int version;
    ncclResult (*get_version)(int *);
    ncclResult (*get_unique_id)(ncclUniqueId *);
    ncclResult (*comm_init_rank)(ncclCommHandle *, int, ncclUniqueId, int);
    ncclResult (*comm_destroy)(ncclCommHandle);
    ncclResult (*comm_abort)(ncclCommHandle);
    ncclResult (*comm_get_async_error)(ncclCommHandle, ncclResult *);
    ncclResult (*all_reduce)(const void *, void *, size_t, int, int, ncclCommHandle, cudaStream_t);
    const char *(*get_error_string)(ncclResult);
} g_nccl;
static char g_nccl_path[4096] = "";

static int load_nccl(void) {
    if (g_nccl.lib) return 0;
    const char *names[] = {g_nccl_path[0] ? g_nccl_path : NULL, "libnccl.so.2", "libnccl.so"};
    char tried[2048] = "";
    for (int i = 0; i < 3 && !g_nccl.lib; i++) {
        if (!names[i]) continue;
        g_nccl.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!g_nccl.lib) {
            const char *e = dlerror();
            size_t n = strlen(tried);
            snprintf(tried + n, sizeof(tried) - n, "%s%s", n ? "; " : "", e ? e : names[i]);
        }
    }
    if (!g_nccl.lib)
        return fail(CRAFTAX_PPO_ERR_NCCL, "cannot load NCCL (%s): pip install nvidia-nccl-cu13, or give its "
                    "libnccl.so.2 with craftax_ppo_set_nccl_path", tried);
#define SYM(field, name)                                                                      \
    *(void **)&g_nccl.field = dlsym(g_nccl.lib, name);                                        \
    if (!g_nccl.field) {                                                                      \
        dlclose(g_nccl.lib);                                                                  \
        g_nccl.lib = NULL;                                                                    \
        return fail(CRAFTAX_PPO_ERR_NCCL, "NCCL lacks %s", name);                             \
    }
    SYM(get_version, "ncclGetVersion")
    SYM(get_unique_id, "ncclGetUniqueId")
    SYM(comm_init_rank, "ncclCommInitRank")
    SYM(comm_destroy, "ncclCommDestroy")
    SYM(comm_abort, "ncclCommAbort")
    SYM(comm_get_async_error, "ncclCommGetAsyncError")
    SYM(all_reduce, "ncclAllReduce")
    SYM(get_error_string, "ncclGetErrorString")
#undef SYM
    int version = 0;
    if (g_nccl.get_version(&version) != NCCL_SUCCESS || version < NCCL_MIN_VERSION) {
        dlclose(g_nccl.lib);
        g_nccl.lib = NULL;
        return fail(CRAFTAX_PPO_ERR_NCCL, "NCCL version code %d: the trainer needs NCCL >= 2.10 (ncclAvg)", version);
    }
    g_nccl.version = version;
    return 0;
}

static int nccl_fail(ncclResult r, const char *what) {
    return fail(CRAFTAX_PPO_ERR_NCCL, "%s: NCCL error %d (%s)", what, r,
                g_nccl.get_error_string ? g_nccl.get_error_string(r) : "?");
}

/* The data-parallel state of one trainer (t->dist; NULL with one process). */
struct CraftaxDist {
    int rank, world;
    ncclCommHandle comm;
    double timeout_s; /* longest wait of one iteration before the peers count as gone */
    int failed;       /* an iteration timed out or NCCL reported an error: the communicator is aborted */
};

/* Writes a new communicator id (rank 0 makes it, the others receive it out of band). */
static int nccl_unique_id(uint8_t *out) {
    TRY(load_nccl());
    ncclUniqueId id;
    const ncclResult r = g_nccl.get_unique_id(&id);
    if (r != NCCL_SUCCESS) return nccl_fail(r, "ncclGetUniqueId");
    memcpy(out, id.internal, sizeof(id.internal));
    return 0;
}

/* Joins the communicator of `world` ranks (blocks until all have joined). Called before the
 * first iteration; world 1 leaves the trainer as it is. */
static int dist_init(CraftaxPPO *t, int rank, int world, const uint8_t *id, double timeout_s) {
    if (t->dist) return fail(CRAFTAX_PPO_ERR_ARGUMENT, "set_distributed: already set for this trainer");
    if (t->iterations_run > 0 || t->graph_exec)
        return fail(CRAFTAX_PPO_ERR_ARGUMENT, "set_distributed: must come before the first iterate");
    if (world < 1) return fail(CRAFTAX_PPO_ERR_ARGUMENT, "set_distributed: world size %d < 1", world);
    if (rank < 0 || rank >= world)
        return fail(CRAFTAX_PPO_ERR_ARGUMENT, "set_distributed: rank %d not in [0, %d)", rank, world);
    if (!(timeout_s > 0)) return fail(CRAFTAX_PPO_ERR_ARGUMENT, "set_distributed: timeout %g s not > 0", timeout_s);
    if (world == 1) return 0;
    if (!id) return fail(CRAFTAX_PPO_ERR_NULL, "set_distributed: NULL unique id with world size %d", world);
    TRY(load_nccl());
    struct CraftaxDist *d = (struct CraftaxDist *)calloc(1, sizeof(struct CraftaxDist));
    if (!d) return fail(CRAFTAX_PPO_ERR_NO_MEMORY, "set_distributed: host out of memory");
    ncclUniqueId uid;
    memcpy(uid.internal, id, sizeof(uid.internal));
    CUDA_TRY(cudaStreamSynchronize(t->stream), "set_distributed: synchronize");
    const ncclResult r = g_nccl.comm_init_rank(&d->comm, world, uid, rank);
    if (r != NCCL_SUCCESS) {
        free(d);
        return nccl_fail(r, "ncclCommInitRank");
    }
    d->rank = rank;
    d->world = world;
    d->timeout_s = timeout_s;
    t->dist = d;
    return 0;
}

/* The gradients averaged over the ranks, in place; nothing with one process. */
static int allreduce_grads(CraftaxPPO *t) {
    if (!t->dist) return 0;
    const ncclResult r =
        g_nccl.all_reduce(t->grads, t->grads, (size_t)t->P, NCCL_FLOAT32, NCCL_AVG, t->dist->comm, t->stream);
    if (r != NCCL_SUCCESS) return nccl_fail(r, "ncclAllReduce (gradients)");
    return 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Refuses work once the communicator is aborted: a replayed graph would run NCCL kernels on it. */
static int dist_ready(CraftaxPPO *t, const char *what) {
    if (t->dist && t->dist->failed)
        return fail(CRAFTAX_PPO_ERR_NCCL, "%s: an earlier NCCL failure ended this run (a rank died or timed out)",
                    what);
    return 0;
}

/* Waits for the trainer's stream like sync(); across ranks it also polls NCCL, so that a peer
 * that died (NCCL's asynchronous error) or never arrives (the timeout) ends the wait with an
 * error, the communicator aborted (which frees the kernels waiting on the peer), instead of a
 * hang. */
static int dist_sync(CraftaxPPO *t, const char *what) {
    struct CraftaxDist *d = t->dist;
    if (!d) return sync(t, what);
    TRY(dist_ready(t, what));
    const double start = now_s();
    for (;;) {
        const cudaError_t err = cudaStreamQuery(t->stream);
        if (err == cudaSuccess) return 0;
        if (err != cudaErrorNotReady) return cuda_fail(err, what);
        ncclResult async = NCCL_SUCCESS;
        const ncclResult r = g_nccl.comm_get_async_error(d->comm, &async);
        const double waited = now_s() - start;
        if (r != NCCL_SUCCESS || (async != NCCL_SUCCESS && async != NCCL_IN_PROGRESS) || waited > d->timeout_s) {
            d->failed = 1;
            g_nccl.comm_abort(d->comm);
            d->comm = NULL;
            if (waited > d->timeout_s)
                return fail(CRAFTAX_PPO_ERR_NCCL,
                            "%s: rank %d of %d waited %.0f s (the timeout) for its peers: a rank died or hangs", what,
                            d->rank, d->world, waited);
            return nccl_fail(r != NCCL_SUCCESS ? r : async, "NCCL (a peer rank failed or died)");
        }
        const struct timespec pause = {0, 200000}; /* 0.2 ms: far below an iteration */
        nanosleep(&pause, NULL);
    }
}

/* Leaves the communicator (release(): before the stream goes). */
static void dist_release(CraftaxPPO *t) {
    struct CraftaxDist *d = t->dist;
    if (!d) return;
    if (d->comm) g_nccl.comm_destroy(d->comm);
    free(d);
    t->dist = NULL;
}

#endif
