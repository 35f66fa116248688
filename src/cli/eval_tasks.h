/* gpt3d eval --task: zero- and few-shot tasks on a checkpoint's model (src/infer/tasks.h,
 * docs/evaluation.md).  cmd_eval.c parses the flags; these read the task files before the
 * model is loaded (every rank, quiet but rank 0, so a bad file stops the job before any
 * work), then score each task on the loaded model and report it. */
#ifndef G3_CLI_EVAL_TASKS_H
#define G3_CLI_EVAL_TASKS_H

#include <stdint.h>
#include <stdio.h>

#include "cli/cmd_infer.h"
#include "infer/tasks.h"

/* The task flags of gpt3d eval's table (the help of --task and --convert-to, which list the
 * task kinds: g3_eval_tasks_specs). */
#define G3_EVAL_TASK_SPECS \
    { "task", G3_OPT_LIST, NULL, NULL, NULL, 1, 0, "NAME..." }, \
    { "task-data", G3_OPT_LIST, NULL, "The file of each --task, in the same order (the user's files: nothing is downloaded).", NULL, 1, 0, "FILE..." }, \
    { "num-fewshot", G3_OPT_INT, "0", "Solved examples before each item, joined by a blank line.", NULL, 0, 0, "K" }, \
    { "fewshot-data", G3_OPT_LIST, NULL, "Where each task's examples are drawn from (default: the task file, never the item itself).", NULL, 1, 0, "FILE..." }, \
    { "show-prompt", G3_OPT_BOOL, NULL, "Print the prompt of each task's first item, the scored continuation in brackets.", NULL, 0, 0, NULL }, \
    { "overlapping-eval", G3_OPT_INT, NULL, "wikitext103: windows of --seq-length tokens every STRIDE tokens, each token scored once (default: --seq-length, no overlap).", NULL, 0, 0, "STRIDE" }, \
    { "convert-to", G3_OPT_STRING, NULL, NULL, NULL, 0, 0, "FILE" }, \
    { "debug-task-rows", G3_OPT_STRING, NULL, "Tests: write each task's rows (token ids, scored span, log-probability) to PREFIX.I.jsonl.", NULL, 0, 0, "PREFIX" }

typedef struct {
    g3_task_set_t set;       /* the tasks and their tokenizer (no spec_copy) */
    int64_t       B;         /* rows per micro-batch                         */
    FILE         *metrics;   /* rank 0's --metrics-file, or NULL             */
} g3_eval_tasks_t;

/* Write the help of --task and --convert-to into the table specs (ends with a NULL name): the
 * kinds of src/infer/tasks.h's table, listed. */
void g3_eval_tasks_specs(g3_opt_spec_t *specs);

/* RET: 1 when --task is given. */
int g3_eval_tasks_wanted(const g3_opts_t *o);

/* --convert-to FILE: the one --task's --task-data converted (g3_task_convert), before and
 * instead of anything else (no checkpoint, one process).  RET: the exit code, or -1 when
 * --convert-to is not given. */
int g3_eval_tasks_convert(const g3_opts_t *o);

/* The task flags checked, the tokenizer loaded, every task file read into rows of s->T
 * tokens, rank 0's metrics file opened.  RET: the exit code (logged). */
int g3_eval_tasks_prepare(const g3_opts_t *o, const g3_cli_infer_t *s, int64_t B,
                          g3_eval_tasks_t *et);

/* Score every task on s's model (collective), rank 0 reporting.  RET: the exit code. */
int g3_eval_tasks_run(const g3_opts_t *o, g3_cli_infer_t *s, g3_eval_tasks_t *et);

void g3_eval_tasks_free(g3_eval_tasks_t *et);

#endif
