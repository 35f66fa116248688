/* gpt3d drivers that run as a job of ranks (gpt3d train, eval, generate): alone, under
 * mpirun or under srun --mpi=pmix.  The world (which rank this is), the checks every rank
 * runs before any work with one voice (rank 0 shows what fails; the others keep their
 * messages in a scratch file and show them only if rank 0 passed where they failed, e.g. a
 * file missing on their node), the agreement on one exit code, and the TP x PP x DP layout
 * with the trainer's "impossible layout" message.
 *
 * A driver: g3_cli_world_parse, g3_cli_world_init, its checks, g3_cli_world_agree,
 * g3_cli_world_layout, its work, g3_cli_world_fail on an error the other ranks may be
 * waiting on, g3_cli_world_free. */
#ifndef G3_CLI_WORLD_H
#define G3_CLI_WORLD_H

#include <stdio.h>

#include "comm/comm.h"
#include "core/opt.h"
#include "core/status.h"
#include "parallel/par.h"

/* A file the command needs: RET 1 when path is a regular file, else 0 after logging "FLAG:
 * PATH does not exist or is not a file" (builtin: the built-in corpus's file, with how to
 * build it). */
int g3_cli_need_file(const char *path, const char *flag, int builtin);

/* The PREFIX.bin and PREFIX.idx files of a --data-path list (one PREFIX, or weight and
 * prefix pairs: the odd words), as g3_cli_need_file.  RET 1, or 0 (logged once). */
int g3_cli_need_data(char *const *path, int npath, const char *flag, int builtin);

/* While quiet, this rank's messages (stderr) go to a scratch file. */
typedef struct {
    int   saved_fd;   /* the real stderr, -1 when not quiet */
    FILE *scratch;
} g3_cli_quiet_t;

/* quiet: this rank's messages (stderr) go to a scratch file until g3_cli_quiet_end (nothing
 * changes when quiet is 0, or when no scratch file can be made).  OUT: q. */
void g3_cli_quiet_begin(g3_cli_quiet_t *q, int quiet);

/* Back to the real stderr; replay: show what was said meanwhile (else it is dropped). */
void g3_cli_quiet_end(g3_cli_quiet_t *q, int replay);

typedef struct {
    g3_comm_world_t      *world;
    const g3_comm_proc_t *me;       /* rank, size                                        */
    g3_par_t             *par;      /* the layout (alone: 1 x 1 x 1) after the layout call */
    int                   threads;  /* CPU backend threads per rank (0: its default)     */
    g3_cli_quiet_t        quiet;
} g3_cli_world_t;

/* Parse the options; ranks other than 0 (as the launcher tells it, before the world
 * exists) keep their parse errors to themselves, every rank gets the same ones.
 * OUT: *o_p.  RET: g3_opts_parse's status. */
g3_status_t g3_cli_world_parse(const g3_opt_cmd_t *cmd, int argc, char **argv,
                               g3_opts_t **o_p);

/* The world (alone: a singleton), with collectives and pipeline transfers given up after
 * timeout_s; ranks other than 0 go quiet for the checks.  OUT: w.  RET: the exit code. */
int g3_cli_world_init(double timeout_s, g3_cli_world_t *w);

/* Every rank passes its exit code so far (collective).  A rank that failed where rank 0
 * did not shows its own messages; what names the work that waits on the checks ("training",
 * "evaluation").  Ends the quiet.  RET: the job's code (rank 0's if it failed, else the
 * highest). */
int g3_cli_world_agree(g3_cli_world_t *w, int rc, const char *what);

/* Place the ranks on the TP x PP x DP grid (g3_par_init; one rank alone is the 1 x 1 x 1
 * layout), and set the CPU threads per rank; ranks other than 0 then print nothing
 * to standard output (one voice).  Collective.  RET: the exit code (2 with "impossible
 * layout: ..." from rank 0 when the layout cannot be made). */
int g3_cli_world_layout(g3_cli_world_t *w, int tp, int pp, const char *topology_file);

/* After an error on this rank during the work: the other ranks may be waiting for it, so end
 * the job now with rc (with more than one rank; alone it just returns). */
void g3_cli_world_fail(g3_cli_world_t *w, int rc, g3_status_t st);

void g3_cli_world_free(g3_cli_world_t *w);

#endif
