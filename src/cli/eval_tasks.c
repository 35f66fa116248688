/* gpt3d eval --task: the downstream tasks of src/infer/tasks.h on a checkpoint's model (see
 * eval_tasks.h).  Glossary: B micro-batch, T sequence length, DP data-parallel size. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/eval_tasks.h"
#include "core/log.h"

void g3_eval_tasks_specs(g3_opt_spec_t *specs)
{
    static char task[512], convert[512];   /* as long as the table: the process */
    char kinds[256];

    snprintf(task, sizeof(task), "Downstream tasks instead of the splits' loss: %s (docs/evaluation.md).",
             g3_task_kinds_list(G3_TASK_KINDS_ALL, ", ", kinds, sizeof(kinds)));
    snprintf(convert, sizeof(convert), "Write the one multiple-choice --task's items (%s; the published formats converted) as gpt3d's multiple-choice JSONL to FILE and stop: no checkpoint needed.",
             g3_task_kinds_list(G3_TASK_KINDS_CHOICES, " or ", kinds, sizeof(kinds)));
    for (; specs->name; specs++) {
        if (strcmp(specs->name, "task") == 0)
            specs->help = task;
        if (strcmp(specs->name, "convert-to") == 0)
            specs->help = convert;
    }
}

int g3_eval_tasks_wanted(const g3_opts_t *o)
{
    return g3_opts_is_set(o, "task");
}

int g3_eval_tasks_convert(const g3_opts_t *o)
{
    char *const *names, *const *files;
    int n, nf = 0;

    if (!g3_opts_is_set(o, "convert-to"))
        return -1;
    n = g3_opts_is_set(o, "task") ? g3_opts_list(o, "task", &names) : 0;
    if (g3_opts_is_set(o, "task-data"))
        nf = g3_opts_list(o, "task-data", &files);
    if (n != 1 || nf != 1 || g3_task_kind(names[0]) < 0) {
        char kinds[256];
        g3_error("--convert-to FILE converts one file: pass --task %s and its --task-data FILE",
                 g3_task_kinds_list(G3_TASK_KINDS_CHOICES, " or ", kinds, sizeof(kinds)));
        return G3_EXIT_USAGE;
    }
    return g3_status_exit_code(g3_task_convert((g3_task_kind_t)g3_task_kind(names[0]), files[0],
                                               g3_opts_str(o, "convert-to")));
}

int g3_eval_tasks_prepare(const g3_opts_t *o, const g3_cli_infer_t *s, int64_t B,
                          g3_eval_tasks_t *et)
{
    char *const *names, *const *files, *const *shots = NULL;
    int n = g3_opts_list(o, "task", &names), nf = 0, ns = 0;
    int64_t K = g3_opts_int(o, "num-fewshot"), stride = 0, seed = 0;
    char buf[64];
    g3_status_t st;

    memset(et, 0, sizeof(*et));
    if (g3_opts_is_set(o, "task-data"))
        nf = g3_opts_list(o, "task-data", &files);
    if (g3_opts_is_set(o, "fewshot-data"))
        ns = g3_opts_list(o, "fewshot-data", &shots);
    if (nf != n) {
        g3_error("--task names %d task%s but --task-data gives %d file%s: give one file per task, in the same order (nothing is downloaded; docs/evaluation.md says where each comes from)",
                 n, n == 1 ? "" : "s", nf, nf == 1 ? "" : "s");
        return G3_EXIT_USAGE;
    }
    if (ns != 0 && ns != n) {
        g3_error("--fewshot-data gives %d file%s for %d tasks: give one per task, in --task's order",
                 ns, ns == 1 ? "" : "s", n);
        return G3_EXIT_USAGE;
    }
    if (K < 0 || K > 64) {
        g3_error("--num-fewshot %lld is out of range: 0 .. 64 solved examples", (long long)K);
        return G3_EXIT_USAGE;
    }
    if (g3_opts_is_set(o, "overlapping-eval")) {
        stride = g3_opts_int(o, "overlapping-eval");
        if (stride < 1 || stride > s->T) {
            g3_error("--overlapping-eval %lld is out of range: 1 .. %d (--seq-length)",
                     (long long)stride, s->T);
            return G3_EXIT_USAGE;
        }
    }
    /* the few-shot draws: --seed, else the checkpoint's run's seed */
    if (g3_opts_is_set(o, "seed"))
        seed = g3_opts_int(o, "seed");
    else if (g3_cli_infer_ckpt_value(s, "seed", buf, sizeof(buf)))
        seed = strtoll(buf, NULL, 10);
    for (int i = 0; i < n; i++)
        if (g3_task_kind(names[i]) < 0) {
            char kinds[256];
            g3_error("--task '%s' is not a task: use %s (gpt3d's multiple-choice JSONL)",
                     names[i], g3_task_kinds_list(G3_TASK_KINDS_ALL, " or ", kinds,
                                                  sizeof(kinds)));
            return G3_EXIT_USAGE;
        }
    et->B = B;
    et->set.tasks = calloc((size_t)n, sizeof(g3_task_t *));
    if (!et->set.tasks) {
        g3_error("out of memory for %d tasks", n);
        return G3_EXIT_FAILURE;
    }
    st = g3_bpe_load(s->vocab_file, s->merge_file, &et->set.bpe);
    if (st != G3_OK)
        return g3_status_exit_code(st);
    for (int i = 0; i < n; i++) {
        g3_task_spec_t spec;
        memset(&spec, 0, sizeof(spec));
        spec.kind = (g3_task_kind_t)g3_task_kind(names[i]);
        spec.data = files[i];
        spec.fewshot_data = ns ? shots[i] : NULL;
        spec.num_fewshot = (int)K;
        spec.seed = (uint64_t)seed;
        spec.stride = (int)stride;
        st = g3_task_load(&spec, et->set.bpe, s->T, &et->set.tasks[i]);
        if (st != G3_OK)
            return g3_status_exit_code(st);
        et->set.n++;
    }
    if (g3_opts_str(o, "metrics-file") && s->rank == 0) {
        et->metrics = fopen(g3_opts_str(o, "metrics-file"), "a");
        if (!et->metrics) {
            g3_error("cannot open the metrics file %s: %s; pass a writable --metrics-file",
                     g3_opts_str(o, "metrics-file"), strerror(errno));
            return G3_EXIT_FAILURE;
        }
    }
    return G3_EXIT_OK;
}

int g3_eval_tasks_run(const g3_opts_t *o, g3_cli_infer_t *s, g3_eval_tasks_t *et)
{
    g3_infer_lm_t lm = g3_cli_infer_lm(s);
    int dp_rank = g3_par_layout(s->w.par)->dp_rank;
    const char *rows = g3_opts_str(o, "debug-task-rows");

    for (int i = 0; i < et->set.n; i++) {
        g3_task_t *task = et->set.tasks[i];
        g3_task_result_t res;
        g3_status_t st;
        if (s->rank == 0) {
            printf(" task %s: %lld items, %lld rows, %lld tokens, micro-batches of %lld x %d tokens (more rows when shorter)%s\n",
                   g3_task_name(task), (long long)g3_task_items(task),
                   (long long)g3_task_rows(task), (long long)g3_task_tokens(task),
                   (long long)et->B, s->T, s->dp > 1 ? " per replica" : "");
            if (g3_opts_bool(o, "show-prompt"))
                g3_task_show_prompt(task, et->set.bpe, stdout);
            fflush(stdout);
        }
        st = g3_task_run(task, &lm, (int)et->B, s->dp, dp_rank,
                         s->rank == 0 ? stdout : NULL, &res);
        if (st != G3_OK)
            return g3_cli_infer_fail(s, st);
        if (s->rank != 0)
            continue;
        g3_task_report(task, &res, s->info->iteration, s->info->path, et->metrics);
        if (rows) {
            char path[4096];
            snprintf(path, sizeof(path), "%s.%d.jsonl", rows, i);
            st = g3_task_dump_rows(task, path);
            if (st != G3_OK)
                return g3_status_exit_code(st);
        }
    }
    if (et->metrics) {
        int bad = fclose(et->metrics) != 0;
        et->metrics = NULL;
        if (bad) {
            g3_error("could not finish writing the metrics file %s: %s",
                     g3_opts_str(o, "metrics-file"), strerror(errno));
            return G3_EXIT_FAILURE;
        }
    }
    return G3_EXIT_OK;
}

void g3_eval_tasks_free(g3_eval_tasks_t *et)
{
    g3_task_set_free(&et->set);
    if (et->metrics)
        fclose(et->metrics);
    memset(et, 0, sizeof(*et));
}
