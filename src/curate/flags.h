/* gpt3d curate: the command line of 'gpt3d curate STAGE' (the option table) and its reading
 * into the stages' parameters; the driver (cli/cmd_curate.c) parses with g3_curate_cmd, reads
 * with g3_curate_flags_read and runs g3_curate_flags_run.  Strings in the flags are borrowed
 * from the g3_opts_t they were read from. */
#ifndef G3_CURATE_FLAGS_H
#define G3_CURATE_FLAGS_H

#include "core/opt.h"
#include "curate/curate.h"

enum {
    G3_CURATE_STAGE_MINHASH = 0, G3_CURATE_STAGE_LSH, G3_CURATE_STAGE_DEDUP,
    G3_CURATE_STAGE_COUNT, G3_CURATE_STAGE_DECON, G3_CURATE_STAGE_FILTER
};

typedef struct {
    const char                *stage;
    int                        stage_id;   /* G3_CURATE_STAGE_*                     */
    g3_curate_io_t             io;
    g3_curate_mh_params_t      mh;
    g3_curate_lsh_params_t     lsh;
    g3_curate_decon_params_t   decon;
    g3_curate_filter_params_t  filter;
    const char                *minhash_dir, *lsh_dir;
} g3_curate_flags_t;

extern const g3_opt_cmd_t g3_curate_cmd;

/* RET: G3_OK, or G3_ERR_USAGE after logging what is wrong. */
g3_status_t g3_curate_flags_read(const g3_opts_t *o, g3_curate_flags_t *f);

/* Run the stage (comm: the lsh ranks' group, or NULL).  RET: the stage's status. */
g3_status_t g3_curate_flags_run(g3_curate_flags_t *f, g3_comm_t *comm, g3_curate_counts_t *c);

#endif
