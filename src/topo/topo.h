/* gpt3d topo: the allocation, the switch tree above it, and the mapping of
 * world ranks to (tp, pp, dp) coordinates.
 *
 * Glossary: TP/PP/DP = tensor-, pipeline- and data-parallel sizes; rpn =
 * ranks per node; slot = TP consecutive local ranks of one node (one TP
 * group); replica = the PP slots of one pipeline; leaf = the switch a node
 * hangs from; level = a switch's height (leaf switches are level 1, the
 * switches above them 2, ...; level 0 means "inside one node").
 *
 * Layers: core <- topo.  Nothing here talks to other ranks; the driver
 * (gpt3d topo) and the trainer gather what they need over comm and hand it
 * in.  g3_topo_map() is a pure function of its arguments.
 *
 * Ownership: every *_p output is allocated here and freed by the matching
 * *_free(); strings passed in are copied. */
#ifndef G3_TOPO_TOPO_H
#define G3_TOPO_TOPO_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* ---- host lists ("n[0-3,7],gpu-[01-02]") ---------------------------------- */

/* Expand a Slurm host list (libslurm's hostlist API when built with it, the
 * built-in expander otherwise).  Order is kept, duplicates are kept.
 * OUT: *names_p (n strings, free with g3_topo_names_free), *n_p. */
g3_status_t g3_topo_hostlist_expand(const char *expr, char ***names_p, int *n_p);
/* The built-in expander alone (also used when libslurm refuses a list). */
g3_status_t g3_topo_hostlist_expand_builtin(const char *expr, char ***names_p, int *n_p);
void g3_topo_names_free(char **names, int n);
/* Compress names into ranges ("n[0-3,7],login1"); names sharing a prefix
 * and digit width are merged in the order given.  Truncated with "..." to
 * fit len. */
void g3_topo_hostlist_compress(const char *const *names, int n, char *buf, size_t len);

/* ---- the switch tree -------------------------------------------------------- */

typedef struct {
    int     nnodes;
    char  **node_names;    /* (nnodes)                                        */
    int    *node_switch;   /* (nnodes) switch the node hangs from             */
    int     nswitches;
    char  **switch_names;  /* (nswitches)                                     */
    int    *switch_parent; /* (nswitches) -1 for a top switch                 */
    int    *switch_level;  /* (nswitches) 1 for a switch with only nodes below */
    int     levels;        /* highest switch level                            */
    char    source[256];   /* where it came from, for messages                */
    void   *index;         /* name -> node lookup                              */
} g3_topo_t;

/* Read a Slurm topology.conf (topology/tree plugin):
 *   SwitchName=s0 Nodes=n[0-9] [LinkSpeed=...]
 *   SwitchName=top Switches=s[0-3]
 * Errors name the file and line: unknown child switches, a node or switch
 * under two parents, cycles, duplicate switches.  OUT: *topo_p. */
g3_status_t g3_topo_read_file(const char *path, g3_topo_t **topo_p);
/* Parse the same text from memory (tests); name is used in messages. */
g3_status_t g3_topo_parse(const char *text, const char *name, g3_topo_t **topo_p);

/* Build the tree from each node's SLURM_TOPOLOGY_ADDR ("s2.s0.n3") and
 * SLURM_TOPOLOGY_ADDR_PATTERN ("switch.switch.node"), one per node.  Nodes
 * with an empty address hang from a switch named "(unknown)".
 * OUT: *topo_p. */
g3_status_t g3_topo_from_addrs(int nnodes, const char *const *names, const char *const *addrs,
                               const char *const *patterns, g3_topo_t **topo_p);

/* All nodes under one switch "(flat)": what we assume without topology. */
g3_status_t g3_topo_flat(int nnodes, const char *const *names, g3_topo_t **topo_p);

void g3_topo_free(g3_topo_t *topo);

/* RET: node index of name, or -1. */
int g3_topo_node_find(const g3_topo_t *topo, const char *name);
/* The node indices of n names.  OUT: *nodes_p (n, malloc'd).  RET: G3_ERR_INVALID_ARG with
 * why (naming the node and the fix: --topology-file) when one is not in topo;
 * G3_ERR_NO_MEMORY (logged). */
g3_status_t g3_topo_nodes_find(const g3_topo_t *topo, char *const *names, int n, int **nodes_p,
                               char *why, size_t why_len);

/* ---- Slurm, for one process in an allocation (slurm.c) --------------------------
 * A batch script or salloc without srun: no task has SLURM_TOPOLOGY_ADDR. */

/* The allocation: SLURM_JOB_NODELIST (else SLURM_NODELIST) expanded, and the ranks per node:
 * SLURM_NTASKS_PER_NODE, else a uniform SLURM_TASKS_PER_NODE ("8(x4)"), else 1.
 * OUT: *names_p (free with g3_topo_names_free), *n_p, *rpn_p.  RET: G3_ERR_NOT_FOUND (nothing
 * logged) outside an allocation; the host list's errors (logged). */
g3_status_t g3_topo_slurm_alloc(char ***names_p, int *n_p, int *rpn_p);
/* The switch tree Slurm itself reports ("scontrol show topology").  OUT: *topo_p.
 * RET: G3_ERR_NOT_FOUND with why when scontrol cannot be run or reports no switch;
 * g3_topo_parse's errors; G3_ERR_NO_MEMORY (logged). */
g3_status_t g3_topo_from_scontrol(g3_topo_t **topo_p, char *why, size_t why_len);
/* RET: buf holding the topology.conf beside slurm.conf ($SLURM_CONF's directory, else
 * /etc/slurm), or NULL when that file cannot be read (buf still names it). */
const char *g3_topo_slurm_conf_path(char *buf, size_t len);
/* RET: the level of the lowest switch two nodes share: 0 for the same node,
 * 1 under the same leaf, ...; topo->levels + 1 when they share none. */
int g3_topo_node_distance(const g3_topo_t *topo, int a, int b);

/* ---- the mapping -------------------------------------------------------------- */

typedef enum { G3_TOPO_TP = 0, G3_TOPO_PP, G3_TOPO_DP, G3_TOPO_AXES } g3_topo_axis_t;

/* The allocation a plan is made for. */
typedef struct {
    int        nnodes;
    const int *nodes;          /* (nnodes) topo node index of each allocated node */
    int        ranks_per_node;
    /* Where the launcher put each world rank (world = nnodes * rpn).  NULL:
     * block order, rank w on nodes[w / rpn] with local rank w % rpn. */
    const int *rank_node;      /* (world) index into nodes[] or NULL             */
    const int *rank_local;     /* (world) local rank or NULL                     */
} g3_topo_alloc_t;

typedef struct {
    int   world, tp, pp, dp, rpn, nnodes;
    int  *rank_node;     /* (world) index into the allocation's nodes[]        */
    int  *rank_topo;     /* (world) topo node index                            */
    int  *rank_local;    /* (world)                                            */
    int  *coord[G3_TOPO_AXES]; /* (world) tp, pp and dp coordinate of a rank   */
    int  *rank_at;       /* (DP, PP, TP) world rank at [(dp * PP + pp) * TP + tp] */
    char  how[64];       /* which candidate layout won, for messages          */
    int   candidates;    /* candidate layouts built and scored                */
    long  steps;         /* slots visited building, scoring and placing them:
                          * the work done, which grows with the slots times
                          * the tree's depth (tests check it, not the clock) */
} g3_topo_plan_t;

/* Map ranks to coordinates.  dp <= 0 derives DP = world / (TP * PP).
 *   - every TP group is TP consecutive local ranks of one node;
 *   - the PP stages of a replica lie on nodes under as few leaf switches as
 *     possible, stage p+1 on the node of stage p or the next one in switch
 *     order (a depth-first walk of the tree);
 *   - DP is outermost: replicas follow each other in switch order.
 * Two candidate layouts are scored (see docs/topology.md) and the better
 * one kept.  Impossible layouts return G3_ERR_INVALID_ARG with one sentence
 * in why[] saying what would fit; nothing is logged.  Pure.
 * OUT: *plan_p, only on G3_OK. */
g3_status_t g3_topo_map(const g3_topo_t *topo, const g3_topo_alloc_t *alloc, int tp, int pp,
                        int dp, g3_topo_plan_t **plan_p, char *why, size_t why_len);

/* The reference layouts `gpt3d topo` compares with, ignoring the switches:
 *   G3_TOPO_ORDER_NAIVE     rank w: tp = w % TP, pp = w / TP % PP, dp outermost;
 *   G3_TOPO_ORDER_MEGATRON  rank w: tp = w % TP, dp = w / TP % DP, pp outermost
 *                           (Megatron-LM's default tp-dp-pp order). */
typedef enum { G3_TOPO_ORDER_NAIVE = 0, G3_TOPO_ORDER_MEGATRON } g3_topo_order_t;
g3_status_t g3_topo_map_order(const g3_topo_t *topo, const g3_topo_alloc_t *alloc, int tp,
                              int pp, int dp, g3_topo_order_t order, g3_topo_plan_t **plan_p,
                              char *why, size_t why_len);

void g3_topo_plan_free(g3_topo_plan_t *plan);

/* ---- what the trainer uses --------------------------------------------------- */

/* OUT: a rank's coordinates. */
void g3_topo_plan_coords(const g3_topo_plan_t *plan, int world_rank, int *tp, int *pp, int *dp);
/* RET: the world rank at (tp, pp, dp). */
int g3_topo_plan_rank(const g3_topo_plan_t *plan, int tp, int pp, int dp);
/* The members of world_rank's group along axis, as world ranks in
 * coordinate order (members[i] has coordinate i on that axis): exactly what
 * g3_comm_group_create() takes.  members: (size of the axis).
 * RET: the group size. */
int g3_topo_plan_group(const g3_topo_plan_t *plan, int world_rank, g3_topo_axis_t axis,
                       int *members);
int g3_topo_plan_axis_size(const g3_topo_plan_t *plan, g3_topo_axis_t axis);
const char *g3_topo_axis_name(g3_topo_axis_t axis);

/* ---- traffic model ------------------------------------------------------------ */

/* The bytes one link of a ring all-reduce of `bytes` over n ranks carries: 2 (n - 1) / n of
 * them (NCCL's bus-bandwidth convention; a reduce-scatter and an all-gather carry the same);
 * 0 for n < 2.  The one traffic model of a collective: gpt3d topo's bytes per link
 * (g3_topo_plan_traffic) and gpt3d plan's seconds per all-reduce (plan/time.c) count with it. */
double g3_topo_ring_allreduce_bytes(double bytes, int n);

typedef struct {
    double hidden, layers, seq, micro_batch, global_batch, vocab;
    double act_bytes;    /* bytes per activation element (2: bf16)            */
    double grad_bytes;   /* bytes per gradient element in the DP all-reduce (4) */
} g3_topo_model_t;

/* MT-NLG 530B: h 20480, 105 layers, seq 2048, micro batch 1, global 1920,
 * vocab 51200, bf16 activations, fp32 gradient all-reduce. */
void g3_topo_model_default(g3_topo_model_t *model);

typedef struct {
    double bytes[G3_TOPO_AXES];     /* per iteration, crossing a leaf switch    */
    double total[G3_TOPO_AXES];     /* per iteration, between different nodes  */
    int    max_level[G3_TOPO_AXES]; /* highest switch level any group crosses  */
    int    replica_leaves_max;      /* most leaf switches one replica spans    */
    double replica_leaves_mean;
} g3_topo_traffic_t;

/* Estimate traffic of a plan under the model in docs/topology.md.  OUT: *t */
void g3_topo_plan_traffic(const g3_topo_t *topo, const g3_topo_plan_t *plan,
                          const g3_topo_model_t *model, g3_topo_traffic_t *t);

/* RET: the highest switch level the ring of world_rank's group along axis
 * crosses (0: stays in one node). */
int g3_topo_plan_group_level(const g3_topo_t *topo, const g3_topo_plan_t *plan, int world_rank,
                             g3_topo_axis_t axis);

#endif
