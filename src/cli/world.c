/* gpt3d drivers that run as a job of ranks: the world, the checks with one voice, the
 * layout (see world.h).  Written for gpt3d train; gpt3d eval and generate use the same. */
#define _GNU_SOURCE   /* sched_getaffinity */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/world.h"
#include "core/log.h"

/* RET: this process's rank as the launcher tells it before the world exists (PMIX_RANK
 * from mpirun and srun --mpi=pmix, else SLURM_PROCID or OMPI_COMM_WORLD_RANK), 0 alone. */
static int g3_cli_env_rank(void)
{
    const char *names[] = { "PMIX_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK" };
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(names[i]);
        if (v && *v)
            return atoi(v);
    }
    return 0;
}

void g3_cli_quiet_begin(g3_cli_quiet_t *q, int quiet)
{
    q->saved_fd = -1;
    q->scratch = NULL;
    if (!quiet)
        return;
    fflush(stderr);
    q->scratch = tmpfile();
    if (!q->scratch)
        return;
    q->saved_fd = dup(STDERR_FILENO);
    if (q->saved_fd < 0 || dup2(fileno(q->scratch), STDERR_FILENO) < 0) {
        if (q->saved_fd >= 0)
            close(q->saved_fd);
        fclose(q->scratch);
        q->saved_fd = -1;
        q->scratch = NULL;
    }
}

void g3_cli_quiet_end(g3_cli_quiet_t *q, int replay)
{
    char buf[4096];
    size_t n;

    if (q->saved_fd < 0 || !q->scratch)
        return;
    fflush(stderr);
    dup2(q->saved_fd, STDERR_FILENO);
    close(q->saved_fd);
    q->saved_fd = -1;
    if (replay) {
        rewind(q->scratch);
        while ((n = fread(buf, 1, sizeof(buf), q->scratch)) > 0)
            fwrite(buf, 1, n, stderr);
        fflush(stderr);
    }
    fclose(q->scratch);
    q->scratch = NULL;
}

int g3_cli_need_file(const char *path, const char *flag, int builtin)
{
    struct stat sb;

    if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
        return 1;
    if (builtin)
        g3_error(
            "the built-in KJV corpus is missing (%s not found): run 'gpt3d corpus' to build it, or pass your own data with --data-path/--vocab-file/--merge-file",
            path);
    else
        g3_error("%s: %s does not exist or is not a file", flag, path);
    return 0;
}

int g3_cli_need_data(char *const *path, int npath, const char *flag, int builtin)
{
    /* a lone prefix, or the odd words of weight/prefix pairs */
    for (int i = npath == 1 ? 0 : 1; i < npath; i += npath == 1 ? 1 : 2) {
        const char *ext[2] = { ".bin", ".idx" };
        for (int e = 0; e < 2; e++) {
            char file[PATH_MAX + 8];
            snprintf(file, sizeof(file), "%s%s", path[i], ext[e]);
            if (!g3_cli_need_file(file, flag, builtin))
                return 0;
        }
    }
    return 1;
}

/* Threads of the CPU backend per rank when OMP_NUM_THREADS is not set: the CPUs this
 * process may run on, shared by the job's ranks on this node. */
static int g3_cli_threads_per_rank(int local_size)
{
    cpu_set_t set;
    int ncpu = 0;
    if (getenv("OMP_NUM_THREADS") || local_size <= 1)
        return 0;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        ncpu = CPU_COUNT(&set);
    if (ncpu <= 0)
        ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    return ncpu / local_size > 1 ? ncpu / local_size : 1;
}

g3_status_t g3_cli_world_parse(const g3_opt_cmd_t *cmd, int argc, char **argv,
                               g3_opts_t **o_p)
{
    g3_cli_quiet_t q;
    g3_status_t st;

    g3_cli_quiet_begin(&q, g3_cli_env_rank() != 0);
    st = g3_opts_parse(cmd, argc, argv, o_p);
    g3_cli_quiet_end(&q, 0);
    return st;
}

int g3_cli_world_init(double timeout_s, g3_cli_world_t *w)
{
    g3_status_t st;

    memset(w, 0, sizeof(*w));
    w->quiet.saved_fd = -1;
    st = g3_comm_world_init(timeout_s, &w->world);
    if (st != G3_OK)
        return g3_status_exit_code(st);
    w->me = g3_comm_world_proc(w->world);
    g3_cli_quiet_begin(&w->quiet, w->me->rank != 0);
    return G3_EXIT_OK;
}

int g3_cli_world_agree(g3_cli_world_t *w, int rc, const char *what)
{
    g3_comm_exchange_t *x = NULL;
    int32_t mine = rc, rc0 = rc, worst = rc;
    char name[96];
    g3_status_t st = G3_OK;

    snprintf(name, sizeof(name), "the checks before %s", what);
    if (w->me->size > 1) {
        st = g3_comm_world_exchange(w->world, name, &mine, sizeof(mine), &x);
        for (int r = 0; st == G3_OK && r < w->me->size; r++) {
            const void *blob;
            size_t len;
            int32_t v;
            if (g3_comm_exchange_get(x, r, &blob, &len) != G3_OK || len != sizeof(v))
                continue;
            memcpy(&v, blob, sizeof(v));
            if (r == 0)
                rc0 = v;
            if (v > worst)
                worst = v;
        }
        g3_comm_exchange_free(x);
    }
    /* an exchange that failed (logged while quiet): show this rank's messages, its code */
    g3_cli_quiet_end(&w->quiet, st != G3_OK || (rc != 0 && rc0 == 0));
    if (st != G3_OK)
        return rc != 0 ? rc : g3_status_exit_code(st);
    if (rc0 == 0 && worst != 0 && w->me->rank == 0)
        g3_error(
            "some ranks failed the checks before %s (exit %d); their messages say why (files missing on their nodes?)",
            what, worst);
    return rc0 != 0 ? rc0 : worst;
}

int g3_cli_world_layout(g3_cli_world_t *w, int tp, int pp, const char *topology_file)
{
    char why[1024];
    g3_status_t st;

    /* 3D parallelism: place the ranks (src/topo) and create the groups */
    st = g3_par_init(w->world, tp, pp, topology_file, &w->par, why, sizeof(why));
    if (st == G3_ERR_INVALID_ARG && why[0]) {
        if (w->me->rank == 0)
            g3_error("impossible layout: %s", why);
        return G3_EXIT_USAGE;
    }
    if (st != G3_OK)
        return g3_status_exit_code(st);
    w->threads = g3_cli_threads_per_rank(g3_par_layout(w->par)->local_size);
    if (w->me->rank != 0 && !freopen("/dev/null", "w", stdout))
        g3_warn("could not silence this rank's standard output: %s", strerror(errno));
    return G3_EXIT_OK;
}

void g3_cli_world_fail(g3_cli_world_t *w, int rc, g3_status_t st)
{
    if (!w->par || w->me->size == 1)
        return;   /* alone: nobody waits for this rank */
    fflush(stdout);
    g3_comm_world_abort(w->world, rc, g3_status_string(st));
}

void g3_cli_world_free(g3_cli_world_t *w)
{
    g3_cli_quiet_end(&w->quiet, 0);
    g3_par_free(w->par);
    g3_comm_world_free(w->world);
    memset(w, 0, sizeof(*w));
    w->quiet.saved_fd = -1;
}
