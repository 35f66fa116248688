/* gpt3d comm: groups, made from the table of transports (one row per backend: UCX, NCCL,
 * staged; comm_impl.h), and the world's end, the transports' worlds first.
 *
 * This file is the only one that knows the rows by name (the table below); it calls them
 * only through their fields.  The transports call comm.c and world.c, never this file, so
 * the files of src/comm call in no circle (docs/design.md, "Transports"). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_impl.h"
#include "core/log.h"
#include "core/param.h"

/* The transports of this build, by backend: a build without NCCL has no NCCL row. */
static const g3_comm_transport_t *const g3_comm_transports[] = {
    [G3_COMM_BACKEND_HOST] = &g3_comm_transport_ucx,
#ifdef HAVE_NCCL
    [G3_COMM_BACKEND_NCCL] = &g3_comm_transport_nccl,
#endif
    [G3_COMM_BACKEND_STAGED] = &g3_comm_transport_staged,
};
_Static_assert(sizeof(g3_comm_transports) / sizeof(g3_comm_transports[0]) ==
                   G3_COMM_BACKEND_COUNT,
               "one transport row (or none) per backend");

/* RET: backend's row, or NULL when this build has none (or backend is not one). */
static const g3_comm_transport_t *g3_comm_transport_of(g3_comm_backend_t backend)
{
    return (unsigned)backend < G3_COMM_BACKEND_COUNT ? g3_comm_transports[backend] : NULL;
}

int g3_comm_backend_available(g3_comm_backend_t backend)
{
    return g3_comm_transport_of(backend) != NULL;
}

/* What each rank publishes when a group layer is created: enough to check
 * that every member agrees on the group, plus the transport's id from its root. */
#define G3_GROUP_MAGIC 0x67336772u   /* "g3gr" */
typedef struct {
    uint32_t magic;
    uint32_t nmembers;
    uint64_t members_hash;   /* FNV-1a over the member list */
    uint32_t backend;
    uint32_t has_id;
    unsigned char id[G3_COMM_GROUP_ID_BYTES];   /* the row's group_id, on the group's rank 0 */
} g3_comm_group_blob_t;

static uint64_t g3_comm_members_hash(const int *members, int n)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) {
        uint32_t v = (uint32_t)members[i];
        for (int b = 0; b < 4; b++) {
            h ^= (v >> (8 * b)) & 0xffu;
            h *= 1099511628211ull;
        }
    }
    return h;
}

static g3_status_t g3_comm_group_check_members(const g3_comm_world_t *world, const char *name,
                                               const int *members, int n, int *self_p)
{
    int self = -1;

    if (n < 1 || members == NULL) {
        g3_error("group %s: no members given; pass this rank's group (at least itself)", name);
        return G3_ERR_INVALID_ARG;
    }
    for (int i = 0; i < n; i++) {
        if (members[i] < 0 || members[i] >= world->proc.size) {
            g3_error("group %s: member %d is world rank %d, outside the world of %d ranks",
                     name, i, members[i], world->proc.size);
            return G3_ERR_INVALID_ARG;
        }
        for (int j = 0; j < i; j++)
            if (members[j] == members[i]) {
                g3_error("group %s: world rank %d is listed twice (positions %d and %d)", name,
                         members[i], j, i);
                return G3_ERR_INVALID_ARG;
            }
        if (members[i] == world->proc.rank)
            self = i;
    }
    if (self < 0) {
        g3_error("group %s: this rank (world rank %d) is not in its own member list", name,
                 world->proc.rank);
        return G3_ERR_INVALID_ARG;
    }
    *self_p = self;
    return G3_OK;
}

/* Every member's description of the group (exchanged in x) against this rank's (mine).
 * OUT: *root_p, the description of the group's rank 0 (it lives as long as x).
 * RET: G3_ERR_COMM for a malformed one, G3_ERR_INVALID_ARG for one that disagrees (both
 * logged, naming the world rank); the exchange's errors. */
static g3_status_t g3_comm_group_blobs_check(const char *name, g3_comm_exchange_t *x,
                                             const int *members, int nmembers,
                                             const g3_comm_group_blob_t *mine,
                                             const g3_comm_group_blob_t **root_p)
{
    for (int i = 0; i < nmembers; i++) {
        const void *blob;
        size_t len;
        const g3_comm_group_blob_t *b;
        g3_status_t st = g3_comm_exchange_get(x, members[i], &blob, &len);

        if (st != G3_OK)
            return st;
        b = blob;
        if (len != sizeof(*b) || b->magic != G3_GROUP_MAGIC) {
            g3_error(
                "group %s: world rank %d sent a malformed group description (%zu bytes); is it running the same gpt3d build?",
                name, members[i], len);
            return G3_ERR_COMM;
        }
        if (b->nmembers != (uint32_t)nmembers || b->members_hash != mine->members_hash ||
            b->backend != mine->backend) {
            g3_error(
                "group %s: world rank %d disagrees on the group (it has %u members on backend %s, this rank %d members on %s, member lists %s); every member must pass the same list in the same order",
                name, members[i], b->nmembers, g3_comm_backend_name((g3_comm_backend_t)b->backend),
                nmembers, g3_comm_backend_name((g3_comm_backend_t)mine->backend),
                b->members_hash == mine->members_hash ? "equal" : "differ");
            return G3_ERR_INVALID_ARG;
        }
        if (i == 0)
            *root_p = b;
    }
    return G3_OK;
}

/* The checks before a group of backend is made: its row (none: the backend is not built),
 * made by g3_comm_group_create (not a devmem row), the members and the count of group
 * layers.  OUT: *tp_p, the row; *self_p, this rank's place in members.  RET: errors logged. */
static g3_status_t g3_comm_group_check(const g3_comm_world_t *world, const char *name,
                                       g3_comm_backend_t backend, const int *members,
                                       int nmembers, const g3_comm_transport_t **tp_p,
                                       int *self_p)
{
    const g3_comm_transport_t *tp = g3_comm_transport_of(backend);
    g3_status_t st;

    if (tp == NULL) {
        g3_error(
            "group %s: the %s backend is not built into this gpt3d (configure found no NCCL); use the host backend or rebuild with NCCL",
            name, g3_comm_backend_name(backend));
        return G3_ERR_UNSUPPORTED;
    }
    if (tp->devmem) {
        g3_error("group %s: a staged group needs the compute backend's copy functions; create it with g3_comm_group_create_staged", name);
        return G3_ERR_INVALID_ARG;
    }
    st = g3_comm_group_check_members(world, name, members, nmembers, self_p);
    if (st != G3_OK)
        return st;
    if (world->group_seq >= 0xffffu) {
        g3_error(
            "group %s: too many group layers created (%u); groups are meant to be made once at start-up",
            name, world->group_seq);
        return G3_ERR_INVALID_ARG;
    }
    *tp_p = tp;
    return G3_OK;
}

/* A new group's generic fields, with no transport state yet.  OUT: *comm_p. */
static g3_status_t g3_comm_group_alloc(g3_comm_world_t *world, const g3_comm_transport_t *tp,
                                       g3_comm_backend_t backend, const char *name,
                                       const int *members, int nmembers, int self,
                                       g3_comm_t **comm_p)
{
    g3_comm_t *comm = calloc(1, sizeof(*comm));

    if (comm == NULL)
        return G3_ERR_NO_MEMORY;
    comm->members = malloc((size_t)nmembers * sizeof(int));
    if (comm->members == NULL) {
        free(comm);
        return G3_ERR_NO_MEMORY;
    }
    memcpy(comm->members, members, (size_t)nmembers * sizeof(int));
    comm->tp = tp;
    comm->world = world;
    comm->backend = backend;
    snprintf(comm->name, sizeof(comm->name), "%s", name);
    comm->rank = self;
    comm->size = nmembers;
    comm->timeout_s = world->timeout_s;
    *comm_p = comm;
    return G3_OK;
}

static void g3_comm_group_dealloc(g3_comm_t *comm)
{
    free(comm->members);
    free(comm);
}

/* The group-creation exchange: every member publishes its description of comm's group (its
 * rank 0 with the row's group_id) and checks everyone's.  OUT: *x_p (free it after use),
 * *root_id_p (rank 0's id, in *x_p; NULL: none). */
static g3_status_t g3_comm_group_agree(g3_comm_t *comm, g3_comm_exchange_t **x_p,
                                       const void **root_id_p)
{
    const g3_comm_group_blob_t *root_blob = NULL;
    g3_comm_group_blob_t mine;
    g3_comm_exchange_t *x = NULL;
    g3_status_t st;

    memset(&mine, 0, sizeof(mine));
    mine.magic = G3_GROUP_MAGIC;
    mine.nmembers = (uint32_t)comm->size;
    mine.members_hash = g3_comm_members_hash(comm->members, comm->size);
    mine.backend = (uint32_t)comm->backend;
    if (comm->tp->group_id && comm->rank == 0) {
        st = comm->tp->group_id(mine.id);
        if (st != G3_OK)
            return st;
        mine.has_id = 1;
    }
    st = g3_comm_world_exchange(comm->world, "group creation", &mine, sizeof(mine), &x);
    if (st != G3_OK)
        return st;
    st = g3_comm_group_blobs_check(comm->name, x, comm->members, comm->size, &mine,
                                   &root_blob);
    if (st != G3_OK) {
        g3_comm_exchange_free(x);
        return st;
    }
    *root_id_p = root_blob->has_id ? root_blob->id : NULL;
    *x_p = x;
    return G3_OK;
}

g3_status_t g3_comm_group_create(g3_comm_world_t *world, const char *name,
                                 g3_comm_backend_t backend, const int *members, int nmembers,
                                 g3_comm_t **comm_p)
{
    g3_comm_group_init_t init = { NULL, NULL, NULL };
    const g3_comm_transport_t *tp;
    g3_comm_exchange_t *x = NULL;
    g3_comm_t *comm;
    char list[160];
    int self;
    g3_status_t st;

    st = g3_comm_group_check(world, name, backend, members, nmembers, &tp, &self);
    if (st != G3_OK)
        return st;
    st = g3_comm_group_alloc(world, tp, backend, name, members, nmembers, self, &comm);
    if (st != G3_OK)
        return st;
    comm->context_id = (uint16_t)(++world->group_seq);
    comm->small_bytes = (size_t)g3_param_comm_small_bytes();
    st = g3_comm_group_agree(comm, &x, &init.root_id);
    if (st != G3_OK)
        goto err_dealloc;
    st = tp->world_init ? tp->world_init(world) : G3_OK;
    if (st == G3_OK)
        st = tp->group_init(comm, &init);
    g3_comm_exchange_free(x);
    if (st != G3_OK)
        goto err_dealloc;
    g3_comm_format_members(members, nmembers, list, sizeof(list));
    g3_debug("group %s (%s, context %u): rank %d of %d, world ranks %s", name,
             g3_comm_backend_name(backend), comm->context_id, self, nmembers, list);
    *comm_p = comm;
    return G3_OK;

err_dealloc:
    g3_comm_group_dealloc(comm);
    return st;
}

g3_status_t g3_comm_group_create_staged(g3_comm_world_t *world, const char *name,
                                        const g3_comm_devmem_t *mem, const int *members,
                                        int nmembers, g3_comm_t **comm_p)
{
    const g3_comm_transport_t *tp = g3_comm_transport_of(G3_COMM_BACKEND_STAGED);
    g3_comm_group_init_t init = { NULL, mem, NULL };
    g3_comm_t *over, *comm;
    g3_status_t st;

    if (!mem || !mem->to_host || !mem->to_device || !mem->host_alloc != !mem->host_free) {
        g3_error("group %s: the staged backend needs to_host and to_device copies (and host_alloc with host_free, or neither) from the compute backend", name);
        return G3_ERR_INVALID_ARG;
    }
    st = g3_comm_group_create(world, name, tp->over, members, nmembers, &over);
    if (st != G3_OK)
        return st;
    st = g3_comm_group_alloc(world, tp, G3_COMM_BACKEND_STAGED, over->name, over->members,
                             over->size, over->rank, &comm);
    if (st != G3_OK) {
        g3_error("group %s: out of memory", name);
        goto err_free_over;
    }
    comm->context_id = over->context_id;
    comm->timeout_s = over->timeout_s;
    comm->small_bytes = over->small_bytes;
    init.over = over;
    st = tp->group_init(comm, &init);
    if (st != G3_OK)
        goto err_dealloc;
    *comm_p = comm;
    return G3_OK;

err_dealloc:
    g3_comm_group_dealloc(comm);
err_free_over:
    g3_comm_free(over);
    return st;
}

g3_status_t g3_comm_world_group(g3_comm_world_t *world, g3_comm_backend_t backend,
                                g3_comm_t **comm_p)
{
    int n = world->proc.size;
    int *members = malloc((size_t)n * sizeof(int));
    g3_status_t st;

    if (members == NULL)
        return G3_ERR_NO_MEMORY;
    for (int i = 0; i < n; i++)
        members[i] = i;
    st = g3_comm_group_create(world, "world", backend, members, n, comm_p);
    free(members);
    return st;
}

/* The groups make the transports' worlds (UCX's, on the first host group), so the world's
 * end is here: the transports' first, in the table's reverse order, then the bootstrap
 * (world.c), which knows none of them. */
void g3_comm_world_free(g3_comm_world_t *world)
{
    if (world == NULL)
        return;
    for (int b = G3_COMM_BACKEND_COUNT - 1; b >= 0; b--) {
        const g3_comm_transport_t *tp = g3_comm_transport_of((g3_comm_backend_t)b);
        if (tp && tp->world_free)
            tp->world_free(world);
    }
    g3_comm_world_pmix_free(world);
}
