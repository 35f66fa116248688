/* The knob registry (core/param.h): defaults when unset or empty, each type's parse, a bad
 * value reported once and the default applied, the value following the environment when a
 * test sets it again, and `gpt3d help env`'s listing (every knob, its default, its value when
 * set, the test hooks apart after the knobs; tests/cli/test_cli.sh runs the command itself),
 * and the hook accessors of core/hook.h reading the G3_PARAM_HOOKS rows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/hook.h"
#include "core/log.h"
#include "core/param.h"
#include "tap.h"

int main(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f;
    int all = 1;

    g3_log_set_level(G3_LOG_ERROR);   /* the bad values below warn */
    for (int i = 0; i < G3_PARAM_COUNT; i++)
        unsetenv(g3_param_info((g3_param_id_t)i)->var);

    tap_ok(g3_param_log_level() == NULL && g3_param_comm_small_bytes() == 65536 &&
               g3_param_comm_segment_bytes() == 262144 && g3_param_comm_yield() == 1 &&
               g3_param_comm_spin() == -1 && g3_param_fused_ops() == -1 &&
               g3_param_staged_host() == 0 && g3_param_ckpt_timing() == 0 &&
               g3_param_cpu_peak_gflops() == 0.0 && g3_param_debug_stop_after_iteration() == -1,
           "unset: every knob has its default");
    setenv("GPT3D_LOG_LEVEL", "", 1);
    setenv("GPT3D_CKPT_TIMING", "", 1);
    tap_ok(g3_param_log_level() == NULL && g3_param_ckpt_timing() == 1,
           "empty: the default for a value, but set for a SET knob (GPT3D_CKPT_TIMING)");

    setenv("GPT3D_LOG_LEVEL", "debug", 1);
    setenv("GPT3D_COMM_SMALL_BYTES", "4096", 1);
    setenv("GPT3D_FUSED_OPS", "1", 1);
    setenv("GPT3D_CPU_PEAK_GFLOPS", "250.5", 1);
    tap_ok(g3_param_log_level() && !strcmp(g3_param_log_level(), "debug") &&
               g3_param_comm_small_bytes() == 4096 && g3_param_fused_ops() == 1 &&
               g3_param_cpu_peak_gflops() == 250.5,
           "set: a string, a whole number, a 0/1 switch, a positive number");
    setenv("GPT3D_FUSED_OPS", "0", 1);
    setenv("GPT3D_COMM_SMALL_BYTES", "8192", 1);
    tap_ok(g3_param_fused_ops() == 0 && g3_param_comm_small_bytes() == 8192,
           "set again: the new value (the cache follows the text)");

    /* the warning, once: stderr into a file for three reads */
    {
        FILE *err = tmpfile();
        int saved = dup(2), n = 0;
        char line[512];

        g3_log_set_level(G3_LOG_WARN);
        setenv("GPT3D_FUSED_OPS", "2", 1);
        fflush(stderr);
        dup2(fileno(err), 2);
        for (int i = 0; i < 3; i++)
            all &= g3_param_fused_ops() == -1;
        fflush(stderr);
        dup2(saved, 2);
        close(saved);
        rewind(err);
        while (fgets(line, sizeof(line), err))
            n += strstr(line, "warn: GPT3D_FUSED_OPS='2' is neither 0 nor 1; ignoring it (the default: the backend's (cuda 1, cpu 0))") != NULL;
        fclose(err);
        g3_log_set_level(G3_LOG_ERROR);
        tap_ok(all && n == 1, "a bad value gives the default and one warning naming it (%d)", n);
    }
    setenv("GPT3D_FUSED_OPS", "yes", 1);
    setenv("GPT3D_COMM_SEGMENT_BYTES", "0", 1);
    setenv("GPT3D_COMM_SPIN", "12abc", 1);
    setenv("GPT3D_GPU_PEAK_TFLOPS", "-3", 1);
    setenv("GPT3D_DEBUG_STOP_AFTER_ITERATION", "3", 1);
    tap_ok(g3_param_fused_ops() == -1 && g3_param_comm_segment_bytes() == 262144 &&
               g3_param_comm_spin() == -1 && g3_param_gpu_peak_tflops() == 0.0 &&
               g3_param_debug_stop_after_iteration() == 3,
           "a bad value (not 0/1, below the minimum, trailing text, not positive) gives the default");

    f = open_memstream(&text, &len);
    g3_param_print(f);
    fclose(f);
    for (int i = 0; i < G3_PARAM_COUNT; i++) {
        const g3_param_info_t *r = g3_param_info((g3_param_id_t)i);
        all &= strstr(text, r->var) && strstr(text, r->meaning) && strstr(text, r->words);
    }
    tap_ok(all && g3_param_info(G3_PARAM_COUNT) == NULL,
           "help env lists all %d knobs with their meanings and defaults", G3_PARAM_COUNT);
    tap_ok(strstr(text, "default: the backend's (cuda 1, cpu 0); set here: 'yes'") != NULL,
           "... and the value a variable is set to");
    {
        const char *hooks = strstr(text, "Test and debugger hooks");
        int apart = hooks != NULL, nhooks = 0;

        for (int i = 0; i < G3_PARAM_COUNT && hooks; i++) {
            const g3_param_info_t *r = g3_param_info((g3_param_id_t)i);
            const char *at = strstr(text, r->var);

            nhooks += r->hook;
            apart &= r->hook ? at > hooks : at < hooks;
        }
        tap_ok(apart && nhooks == 4,
               "... the %d test hooks (G3_PARAM_HOOKS) under their own heading, after the knobs",
               nhooks);
    }
    unsetenv("GPT3D_DEBUG_CORPUS_HEARTBEAT_S");
    unsetenv("GPT3D_STAGED_HOST");
    unsetenv("GPT3D_CKPT_TIMING");
    tap_ok(g3_hook_corpus_heartbeat_s() == 15 && g3_hook_staged_host() == 0 &&
               g3_hook_ckpt_timing() == 0,
           "hooks unset: heartbeat 15 s, no staged groups, no checkpoint timing lines");
    setenv("GPT3D_DEBUG_CORPUS_HEARTBEAT_S", "1", 1);
    setenv("GPT3D_STAGED_HOST", "1", 1);
    setenv("GPT3D_CKPT_TIMING", "", 1);
    tap_ok(g3_hook_corpus_heartbeat_s() == 1 && g3_hook_staged_host() == 1 &&
               g3_hook_ckpt_timing() == 1,
           "hooks set: the accessors of core/hook.h follow the environment");
    free(text);
    return tap_exit();
}
