/* gpt3d CPU backend: how OpenMP's threads wait, set before the OpenMP runtime starts
 * (issue 32.9; docs/benchmarks.md, "CPU training on a busy machine").
 *
 * A thread of libgomp that has nothing to do (a worker between two parallel regions, the
 * master or a worker at a region's closing barrier) first spins, then sleeps on a futex.
 * With OMP_WAIT_POLICY and GOMP_SPINCOUNT unset it spins 300 000 rounds of a pause
 * instruction: 7.5 ms of CPU time on the 2-core AMD EPYC build VM, and the CPU backend opens
 * a parallel region for every op.  On CPUs that other jobs share, that spinning takes the
 * time slices the thread it waits for needs: measured, a training step then costs 50% more
 * CPU time and runs 2x slower than with short spins (docs/benchmarks.md).  Spinning
 * G3_CPU_SPINCOUNT rounds (0.25 ms here) keeps what spinning is for, the next region starting
 * without a futex wake-up when regions follow each other closely.  When the job's own threads
 * outnumber the CPUs (the launcher's count of ranks on this node times OMP_NUM_THREADS), a
 * spinning thread can only take a CPU from a thread of the job: then they do not spin at all
 * (GOMP_SPINCOUNT=0, what OMP_WAIT_POLICY=passive means).
 *
 * libgomp reads its environment once, when the program is loaded, before main() runs; there
 * is no call to change the spin count afterwards.  So g3_be_cpu_env re-executes the program
 * (the file /proc/self/exe links to, so that its name stays; the same argv, pid and
 * descriptors) with GOMP_SPINCOUNT set, and the
 * re-executed program removes it again from its environment (libgomp has read it), so that
 * the programs it starts see the environment the user gave.  A user's OMP_WAIT_POLICY or
 * GOMP_SPINCOUNT is left as it is.  Under valgrind nothing is re-executed: /proc/self/exe is
 * valgrind's own tool there, which refuses to run on its own. */
#define _GNU_SOURCE   /* sched_getaffinity */
#include "config.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "core/log.h"
#include "core/param.h"

/* The default spin count (libgomp's rounds of a pause instruction before a futex sleep). */
#define G3_CPU_SPINCOUNT "10000"
/* Set in the re-executed program's environment: "the spin count is ours" (GPT3D_CPU_ENV_SET,
 * a row of core/param.h read through g3_param_cpu_env_set). */
#define G3_CPU_ENV_MARK (g3_param_info(G3_PARAM_ID_cpu_env_set)->var)

static const char *g3_cpu_wait_how = "libgomp's defaults";
static char g3_cpu_wait_buf[160];

/* RET: the ranks of this job on this node as the launcher tells them before the job starts
 * (Open MPI's mpirun, MPICH's hydra, srun: the first node's count), else 1. */
static int g3_cpu_env_local_ranks(void)
{
    const char *names[] = { "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                            "SLURM_STEP_TASKS_PER_NODE" };
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(names[i]);
        if (v && atoi(v) > 0)
            return atoi(v);
    }
    return 1;
}

/* RET: whether the job's threads on this node would outnumber the CPUs this process may run
 * on: the local ranks times OMP_NUM_THREADS (unset: the CPUs shared by the ranks, as
 * gpt3d's default, which cannot outnumber them). */
static int g3_cpu_env_oversubscribed(void)
{
    cpu_set_t set;
    const char *t = getenv("OMP_NUM_THREADS");
    int cpus = 0, threads = t ? atoi(t) : 0;

    if (threads <= 1)
        return 0;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        cpus = CPU_COUNT(&set);
    if (cpus <= 0)
        cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    return cpus > 0 && (long)g3_cpu_env_local_ranks() * threads > cpus;
}

void g3_be_cpu_env(char **argv)
{
    const char *policy = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
    const char *mark = g3_param_cpu_env_set();
    int over;

    if (mark) {   /* re-executed: the runtime has read it */
        snprintf(g3_cpu_wait_buf, sizeof(g3_cpu_wait_buf), "GOMP_SPINCOUNT=%s (gpt3d's default%s)",
                 spin ? spin : "?", !strcmp(mark, "0") ? ": the job's threads outnumber the CPUs" : "");
        g3_cpu_wait_how = g3_cpu_wait_buf;
        unsetenv(G3_CPU_ENV_MARK);
        unsetenv("GOMP_SPINCOUNT");
        return;
    }
    if (policy || spin) {
        g3_cpu_wait_how = "as OMP_WAIT_POLICY / GOMP_SPINCOUNT ask";
        return;
    }
    const char *preload = getenv("LD_PRELOAD");
    if (preload && strstr(preload, "vgpreload")) {
        g3_cpu_wait_how = "libgomp's defaults (under valgrind, gpt3d does not re-execute itself)";
        return;
    }
    over = g3_cpu_env_oversubscribed();
    if (setenv("GOMP_SPINCOUNT", over ? "0" : G3_CPU_SPINCOUNT, 1) != 0
        || setenv(G3_CPU_ENV_MARK, over ? "0" : "1", 1) != 0)
        return;
    {
        /* the file itself, not /proc/self/exe, so that the process keeps its name (comm:
         * "gpt3d", what ps, pgrep and the tests' process lookups see, not "exe") */
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n > 0) {
            self[n] = '\0';
            execv(self, argv);   /* returns when the file was replaced or removed */
        }
    }
    execv("/proc/self/exe", argv);
    /* no /proc: go on with libgomp's defaults */
    unsetenv("GOMP_SPINCOUNT");
    unsetenv(G3_CPU_ENV_MARK);
}

const char *g3_be_cpu_wait_how(void)
{
    return g3_cpu_wait_how;
}
