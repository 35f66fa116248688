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
 * without a futex wake-up when regions follow each other closely.
 *
 * libgomp reads its environment once, when the program is loaded, before main() runs; there
 * is no call to change the spin count afterwards.  So g3_be_cpu_env re-executes the program
 * (/proc/self/exe, the same argv, pid and descriptors) with GOMP_SPINCOUNT set, and the
 * re-executed program removes it again from its environment (libgomp has read it), so that
 * the programs it starts see the environment the user gave.  A user's OMP_WAIT_POLICY or
 * GOMP_SPINCOUNT is left as it is.  Under valgrind nothing is re-executed: /proc/self/exe is
 * valgrind's own tool there, which refuses to run on its own. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "core/log.h"

/* The default spin count (libgomp's rounds of a pause instruction before a futex sleep). */
#define G3_CPU_SPINCOUNT "10000"
/* Set in the re-executed program's environment: "the spin count is ours". */
#define G3_CPU_ENV_MARK "GPT3D_CPU_ENV_SET"

static const char *g3_cpu_wait_how = "libgomp's defaults";

void g3_be_cpu_env(char **argv)
{
    const char *policy = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");

    if (getenv(G3_CPU_ENV_MARK)) {   /* re-executed: the runtime has read it */
        unsetenv(G3_CPU_ENV_MARK);
        unsetenv("GOMP_SPINCOUNT");
        g3_cpu_wait_how = "GOMP_SPINCOUNT=" G3_CPU_SPINCOUNT " (gpt3d's default)";
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
    if (setenv("GOMP_SPINCOUNT", G3_CPU_SPINCOUNT, 1) != 0 || setenv(G3_CPU_ENV_MARK, "1", 1) != 0)
        return;
    execv("/proc/self/exe", argv);
    /* no /proc: go on with libgomp's defaults */
    unsetenv("GOMP_SPINCOUNT");
    unsetenv(G3_CPU_ENV_MARK);
}

const char *g3_be_cpu_wait_how(void)
{
    return g3_cpu_wait_how;
}
