/* gpt3d core: the test and debugger hooks (hook.h). */
#include "config.h"

#include <signal.h>
#include <stdio.h>

#include "core/hook.h"
#include "core/log.h"
#include "core/param.h"

void (*g3_hook_fault_fn)(const char *point) = NULL;

void g3_hook_fault(const char *point)
{
    if (g3_hook_fault_fn)
        g3_hook_fault_fn(point);
}

void g3_hook_stop_after(int64_t it)
{
    if (g3_param_debug_stop_after_iteration() != it)
        return;
    g3_info("iteration %lld: stopping this rank (SIGSTOP) as GPT3D_DEBUG_STOP_AFTER_ITERATION asks; SIGCONT continues it", (long long)it);
    fflush(stdout);
    fflush(stderr);
    raise(SIGSTOP);
}

int g3_hook_staged_host(void)
{
    return g3_param_staged_host();
}

int g3_hook_ckpt_timing(void)
{
    return g3_param_ckpt_timing();
}

int g3_hook_corpus_heartbeat_s(void)
{
    return (int)g3_param_debug_corpus_heartbeat_s();
}
