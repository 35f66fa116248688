/* gpt3d core: the hooks production code offers tests and debuggers, all in this one module so
 * that what a test can make the program do is listed here and nowhere else:
 *   - g3_hook_fault(point): a fault point (the checkpoint commit protocol calls it at each
 *     step: "shard-written", "index-written", "renamed", "latest-written", "latest-renamed",
 *     "pruning"); a fault-injection test sets g3_hook_fault_fn to kill the process there
 *     (tests/ckpt/test_ckpt_crash).  NULL, the default, does nothing.
 *   - g3_hook_stop_after(it): GPT3D_DEBUG_STOP_AFTER_ITERATION=N (core/param.h) stops the
 *     process with SIGSTOP after iteration N, until SIGCONT: for a debugger to attach at a
 *     known step, and for tests that must act during training however fast the machine trains
 *     (tests/slurm: a warning signal or a node failure while every rank is held). */
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

#endif
