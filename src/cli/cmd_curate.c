/* gpt3d curate STAGE: training-data curation stages for Slurm job arrays (docs/curation.md).
 *
 *   gpt3d curate minhash --shard-list shards.txt --output-dir mh [--task-id N --num-tasks T]
 *   gpt3d curate lsh --shard-list shards.txt --minhash-dir mh --output-dir lsh   (srun: R ranks)
 *   gpt3d curate dedup --shard-list shards.txt --lsh-dir lsh --output-dir dedup
 *   gpt3d curate contam-count / decontaminate --task-files ... / filter
 *
 * The stages live in src/curate (curate.h; flags in curate/flags.h); this driver parses, starts
 * the world for lsh (alone, or the ranks of srun/mpirun sharing the buckets), runs the stage and
 * reports. */
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "comm/comm.h"
#include "core/log.h"
#include "curate/flags.h"

int g3_cmd_curate(int argc, char **argv)
{
    g3_opts_t *opts = NULL;
    g3_curate_flags_t f;
    g3_curate_counts_t c;
    g3_comm_world_t *world = NULL;
    g3_comm_t *comm = NULL;
    g3_status_t st = G3_OK;
    int go = g3_cli_args_parse(&g3_curate_cmd, argc, argv, &opts);
    int rank = 0;

    if (go != G3_CLI_ARGS_GO_ON)
        return go;
    if ((st = g3_curate_flags_read(opts, &f)) != G3_OK)
        goto done;
    if (f.stage_id == G3_CURATE_STAGE_LSH) {
        if ((st = g3_comm_world_init(0, &world)) != G3_OK)
            goto done;
        const g3_comm_proc_t *me = g3_comm_world_proc(world);
        rank = me->rank;
        g3_log_set_rank(me->rank, me->size);
        if (me->size > 1 && (st = g3_comm_world_group(world, G3_COMM_BACKEND_HOST, &comm)) != G3_OK)
            goto done;
    }
    st = g3_curate_flags_run(&f, comm, &c);
    if (rank == 0 && (c.shards_done || c.shards_skipped))
        g3_info("curate %s: task %d/%d: %llu shards done, %llu skipped (done before); %llu documents in, %llu out; %.1f MB in %.2f s",
                f.stage, f.io.task_id, f.io.num_tasks, (unsigned long long)c.shards_done,
                (unsigned long long)c.shards_skipped, (unsigned long long)c.docs_in,
                (unsigned long long)c.docs_out, (double)c.bytes_in / 1e6, c.seconds);
done:
    if (st != G3_OK && comm)
        g3_comm_world_abort(world, g3_status_exit_code(st), "gpt3d curate lsh failed");
    g3_comm_free(comm);
    if (world)
        g3_comm_world_free(world);
    g3_opts_free(opts);
    if (st == G3_ERR_FORMAT || st == G3_ERR_NOT_FOUND || st == G3_ERR_IO)
        return G3_EXIT_FAILURE;
    return st == G3_OK ? G3_EXIT_OK : g3_status_exit_code(st);
}
