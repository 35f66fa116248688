/* gpt3d core: the hooks production code offers tests and debuggers, all in this one module so
 * that what a test can make the program do is listed here and nowhere else.  The environment
 * variables among them are rows of G3_PARAM_HOOKS in core/param.h (`gpt3d help env` lists
 * them apart from the knobs) and are read only through the accessors below:
 *   - g3_hook_fault(point): a fault point (the checkpoint commit protocol calls it at each
 *     step: "shard-written", "index-written", "renamed", "latest-written", "latest-renamed",
 *     "pruning"); a fault-injection test sets g3_hook_fault_fn to kill the process there
 *     (tests/ckpt/test_ckpt_crash).  NULL, the default, does nothing.
 *   - g3_hook_stop_after(it): GPT3D_DEBUG_STOP_AFTER_ITERATION=N stops the process with
 *     SIGSTOP after iteration N, until SIGCONT: for a debugger to attach at a known step, and
 *     for tests that must act during training however fast the machine trains (tests/slurm: a
 *     warning signal or a node failure while every rank is held).
 *   - g3_hook_staged_host(): GPT3D_STAGED_HOST=1 gives the CPU backend the staged (device
 *     through host) groups of --distributed-backend ucx, so that CPU tests run that path.
 *   - g3_hook_ckpt_timing(): GPT3D_CKPT_TIMING set makes tests/ckpt/bench_ckpt print the
 *     phases of every save and load.
 *   - g3_hook_corpus_heartbeat_s(): GPT3D_DEBUG_CORPUS_HEARTBEAT_S, the seconds between the
 *     lines gpt3d corpus prints while a quiet tool runs (15; tests shorten it). */
#ifndef G3_CORE_HOOK_H
#define G3_CORE_HOOK_H

#include <stdint.h>

/* The fault hook: NULL in normal use. */
extern void (*g3_hook_fault_fn)(const char *point);

/* Call the fault hook, if any, with the point's name. */
void g3_hook_fault(const char *point);

/* After iteration `it` (its progress line, metrics and any save written): stop this process
 * with SIGSTOP when GPT3D_DEBUG_STOP_AFTER_ITERATION is it, saying so first. */
void g3_hook_stop_after(int64_t it);

/* RET: 1 when GPT3D_STAGED_HOST asks for the staged groups on a host-memory backend. */
int g3_hook_staged_host(void);

/* RET: 1 when GPT3D_CKPT_TIMING is set. */
int g3_hook_ckpt_timing(void);

/* RET: the seconds between gpt3d corpus's still-running lines (>= 1). */
int g3_hook_corpus_heartbeat_s(void);

#endif
