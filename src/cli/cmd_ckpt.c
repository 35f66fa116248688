/* gpt3d ckpt: inspect, verify, convert and export checkpoints
 * (format: docs/checkpoint-format.md; guide: docs/checkpoints.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/ckpt.h"
#include "cli/commands.h"
#include "core/log.h"
#include "core/opt.h"
#include "core/status.h"

static const g3_opt_spec_t inspect_specs[] = {
    { "no-tensors", G3_OPT_BOOL, NULL, "Do not list the tensors.", NULL, 0, 0, NULL },
    { "no-config",  G3_OPT_BOOL, NULL, "Do not print the stored configuration.", NULL, 0, 0, NULL },
    { NULL, 0, NULL, NULL, NULL, 0, 0, NULL }
};
static const g3_opt_spec_t verify_specs[] = {
    { "all", G3_OPT_BOOL, NULL, "Verify every committed checkpoint in DIR, not only the latest.", NULL, 0, 0, NULL },
    { NULL, 0, NULL, NULL, NULL, 0, 0, NULL }
};
static const g3_opt_spec_t convert_specs[] = {
    { "tensor-model-parallel-size",   G3_OPT_INT, NULL, "Tensor-parallel size of the output (default: the input's).", NULL, 0, 0, NULL },
    { "pipeline-model-parallel-size", G3_OPT_INT, NULL, "Pipeline-parallel size of the output (default: the input's).", NULL, 0, 0, NULL },
    { "data-parallel-size",           G3_OPT_INT, NULL, "Data-parallel size of the output, for the ZeRO-1 optimizer shards (default: the input's).", NULL, 0, 0, NULL },
    { "no-save-optim",                G3_OPT_BOOL, NULL, "Leave the optimizer state out of the output.", NULL, 0, 0, NULL },
    { NULL, 0, NULL, NULL, NULL, 0, 0, NULL }
};
static const g3_opt_spec_t export_specs[] = {
    { "format", G3_OPT_CHOICE, "hf-gpt2", "Output format: Hugging Face GPT-2 (model.safetensors and config.json).", "hf-gpt2", 0, 0, NULL },
    { "dtype",  G3_OPT_CHOICE, "float32", "Element type of the exported weights.", "float32|bfloat16", 0, 0, NULL },
    { NULL, 0, NULL, NULL, NULL, 0, 0, NULL }
};

static const g3_opt_cmd_t ckpt_cmds[] = {
    { "inspect", "Print a checkpoint's iteration, layout, tensors, sizes and configuration.", "DIR", 1, 1, inspect_specs },
    { "verify",  "Check a checkpoint's files, checksums and completeness (exit 1 on any fault).", "DIR", 1, 1, verify_specs },
    { "convert", "Re-shard a checkpoint for another TP x PP x DP layout.", "IN OUT", 2, 2, convert_specs },
    { "export",  "Export the model for Hugging Face transformers (GPT2LMHeadModel).", "IN OUT", 2, 2, export_specs },
};
#define CKPT_NCMDS ((int)(sizeof(ckpt_cmds) / sizeof(ckpt_cmds[0])))

static void g3_cmd_ckpt_usage(FILE *out)
{
    fprintf(out, "Usage: gpt3d ckpt SUBCOMMAND [options]\n\n"
                 "DIR is a --save directory (its 'latest' checkpoint is used) or one iter_NNNNNNN directory.\n\n"
                 "Subcommands:\n");
    for (int i = 0; i < CKPT_NCMDS; i++)
        fprintf(out, "  %-8s %-7s %s\n", ckpt_cmds[i].name, ckpt_cmds[i].usage, ckpt_cmds[i].summary);
    fprintf(out, "\n'gpt3d ckpt SUBCOMMAND --help' lists a subcommand's flags.  Format: docs/checkpoint-format.md.\n");
}

static void g3_cmd_print_shape(const g3_ckpt_tensor_t *t, char *buf, size_t size)
{
    size_t len = (size_t)snprintf(buf, size, "(");
    for (int k = 0; k < t->ndim && len < size; k++)
        len += (size_t)snprintf(buf + len, size - len, "%s%lld", k ? ", " : "", (long long)t->shape[k]);
    if (len < size)
        snprintf(buf + len, size - len, ")");
}

static int g3_cmd_ckpt_inspect(const g3_opts_t *o)
{
    const char *dir = g3_opts_pos(o, 0);
    g3_ckpt_reader_t *r = NULL;
    g3_ckpt_layout_t l;
    g3_status_t st = g3_ckpt_reader_open(dir, &r);
    double bytes[2] = { 0, 0 };
    int count[2] = { 0, 0 };
    int64_t *iters = NULL;
    int n = 0;

    if (st != G3_OK)
        return g3_status_exit_code(st);
    g3_ckpt_reader_layout(r, &l);
    printf("checkpoint  %s\n", g3_ckpt_reader_path(r));
    printf("format      %s version %d\n", G3_CKPT_FORMAT, G3_CKPT_FORMAT_VERSION);
    printf("iteration   %lld\n", (long long)g3_ckpt_reader_iteration(r));
    printf("consumed    %lld samples, %lld tokens\n", (long long)g3_ckpt_reader_consumed_samples(r),
           (long long)g3_ckpt_reader_consumed_tokens(r));
    printf("layout      TP %d x PP %d x DP %d (%d ranks), %d layers; stages start at layers",
           l.tp_size, l.pp_size, l.dp_size, l.tp_size * l.pp_size * l.dp_size, l.num_layers);
    for (int s = 0; s < l.pp_size; s++)
        printf(" %d", l.stage_first_layer[s]);
    printf("\n");
    for (int i = 0; i < g3_ckpt_reader_tensor_count(r); i++) {
        g3_ckpt_tensor_t t;
        int64_t v = 1;
        g3_ckpt_reader_tensor(r, i, &t);
        for (int k = 0; k < t.ndim; k++)
            v *= t.shape[k];
        bytes[t.kind] += (double)v * (double)g3_ckpt_dtype_size(t.dtype);
        count[t.kind]++;
    }
    printf("tensors     %d model (%.2f MB), %d optimizer (%.2f MB)\n", count[0], bytes[0] / 1e6, count[1],
           bytes[1] / 1e6);
    if (g3_ckpt_list(dir, &iters, &n) == G3_OK && n > 0) {
        printf("committed  ");
        for (int i = 0; i < n; i++)
            printf(" iter_%07lld", (long long)iters[i]);
        printf("\n");
    }
    free(iters);
    for (int i = 0; i < g3_ckpt_reader_state_count(r); i++) {
        char buf[160];
        printf("%-11s %s\n", i == 0 ? "state" : "", g3_ckpt_reader_state_text(r, i, buf, sizeof(buf)));
    }
    if (!g3_opts_bool(o, "no-tensors")) {
        printf("\n%-64s %-5s %-18s %10s  %-15s %s\n", "tensor", "dtype", "shape", "MB", "TP split", "stage");
        for (int i = 0; i < g3_ckpt_reader_tensor_count(r); i++) {
            g3_ckpt_tensor_t t;
            char shape[64], split[48], stage[48];
            int64_t v = 1;
            g3_ckpt_reader_tensor(r, i, &t);
            for (int k = 0; k < t.ndim; k++)
                v *= t.shape[k];
            g3_cmd_print_shape(&t, shape, sizeof(shape));
            if (t.rule.tp_dim < 0)
                snprintf(split, sizeof(split), "replicated");
            else if (t.rule.tp_parts > 1)
                snprintf(split, sizeof(split), "dim %d, %d parts", t.rule.tp_dim, t.rule.tp_parts);
            else
                snprintf(split, sizeof(split), "dim %d", t.rule.tp_dim);
            if (t.rule.pp_layer == G3_CKPT_PP_FIRST)
                snprintf(stage, sizeof(stage), "first");
            else if (t.rule.pp_layer == G3_CKPT_PP_LAST)
                snprintf(stage, sizeof(stage), "last");
            else
                snprintf(stage, sizeof(stage), "layer %d", t.rule.pp_layer);
            printf("%-64s %-5s %-18s %10.3f  %-15s %s\n", t.name, g3_ckpt_dtype_name(t.dtype), shape,
                   (double)v * (double)g3_ckpt_dtype_size(t.dtype) / 1e6, split, stage);
        }
    }
    if (!g3_opts_bool(o, "no-config")) {
        const char *cfg = g3_ckpt_reader_config(r);
        printf("\nconfiguration:\n");
        while (*cfg) {
            const char *eol = strchr(cfg, '\n');
            int len = eol ? (int)(eol - cfg) : (int)strlen(cfg);
            printf("  %.*s\n", len, cfg);
            cfg += len + (eol != NULL);
        }
    }
    g3_ckpt_reader_close(r);
    return G3_EXIT_OK;
}

static int g3_cmd_ckpt_verify(const g3_opts_t *o)
{
    const char *dir = g3_opts_pos(o, 0);
    int faults = 0, total = 0;

    if (g3_opts_bool(o, "all")) {
        int64_t *iters = NULL;
        int n = 0;
        if (g3_ckpt_list(dir, &iters, &n) != G3_OK)
            return G3_EXIT_FAILURE;
        if (n == 0) {
            g3_error("verify --all: %s holds no committed checkpoint", dir);
            return G3_EXIT_FAILURE;
        }
        for (int i = 0; i < n; i++) {
            char p[4096];
            g3_ckpt_iter_path(dir, iters[i], p, sizeof(p));
            g3_ckpt_verify(p, &faults);
            printf("%s: %s\n", p, faults ? "FAULTY" : "ok");
            total += faults;
        }
        free(iters);
    } else {
        g3_ckpt_verify(dir, &total);
        printf("%s: %s\n", dir, total ? "FAULTY" : "ok");
    }
    if (total)
        printf("%d fault%s found; see the messages above\n", total, total > 1 ? "s" : "");
    return total ? G3_EXIT_FAILURE : G3_EXIT_OK;
}

static int g3_cmd_ckpt_convert(const g3_opts_t *o)
{
    g3_ckpt_convert_opts_t c = { 0, 0, 0, g3_opts_bool(o, "no-save-optim") };
    const char *in = g3_opts_pos(o, 0);
    g3_ckpt_reader_t *r = NULL;
    g3_ckpt_layout_t l;
    g3_status_t st;
    static const char *const flags[3] = { "tensor-model-parallel-size", "pipeline-model-parallel-size",
                                          "data-parallel-size" };
    int *vals[3] = { &c.tp_size, &c.pp_size, &c.dp_size };

    st = g3_ckpt_reader_open(in, &r);
    if (st != G3_OK)
        return g3_status_exit_code(st);
    g3_ckpt_reader_layout(r, &l);
    g3_ckpt_reader_close(r);
    c.tp_size = l.tp_size;
    c.pp_size = l.pp_size;
    c.dp_size = l.dp_size;
    for (int i = 0; i < 3; i++)
        if (g3_opts_is_set(o, flags[i])) {
            int64_t v = g3_opts_int(o, flags[i]);
            if (v < 1 || v > 1 << 20) {
                g3_error("--%s %lld: must be a positive size", flags[i], (long long)v);
                return G3_EXIT_USAGE;
            }
            *vals[i] = (int)v;
        }
    st = g3_ckpt_convert(in, g3_opts_pos(o, 1), &c);
    return g3_status_exit_code(st);
}

static int g3_cmd_ckpt_export(const g3_opts_t *o)
{
    g3_ckpt_export_opts_t e;
    g3_status_t st;

    e.dtype = strcmp(g3_opts_str(o, "dtype"), "bfloat16") == 0 ? G3_CKPT_BF16 : G3_CKPT_F32;
    st = g3_ckpt_export_hf_gpt2(g3_opts_pos(o, 0), g3_opts_pos(o, 1), &e);
    return g3_status_exit_code(st);
}

int g3_cmd_ckpt(int argc, char **argv)
{
    const char *names[CKPT_NCMDS];
    const g3_opt_cmd_t *cmd = NULL;
    g3_opts_t *o = NULL;
    int rc;

    if (argc < 1 || strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0 ||
        strcmp(argv[0], "help") == 0) {
        g3_cmd_ckpt_usage(argc < 1 ? stderr : stdout);
        return argc < 1 ? G3_EXIT_USAGE : G3_EXIT_OK;
    }
    for (int i = 0; i < CKPT_NCMDS; i++) {
        names[i] = ckpt_cmds[i].name;
        if (strcmp(argv[0], ckpt_cmds[i].name) == 0)
            cmd = &ckpt_cmds[i];
    }
    if (cmd == NULL) {
        const char *hint = g3_opts_suggest(argv[0], names, CKPT_NCMDS);
        if (hint)
            g3_error("gpt3d ckpt: unknown subcommand '%s'; did you mean '%s'?", argv[0], hint);
        else
            g3_error("gpt3d ckpt: unknown subcommand '%s' (inspect, verify, convert or export)", argv[0]);
        return G3_EXIT_USAGE;
    }
    if (g3_opts_parse(cmd, argc - 1, argv + 1, &o) != G3_OK)
        return G3_EXIT_USAGE;
    if (g3_opts_help_shown(o)) {
        g3_opts_free(o);
        return G3_EXIT_OK;
    }
    if (strcmp(cmd->name, "inspect") == 0)
        rc = g3_cmd_ckpt_inspect(o);
    else if (strcmp(cmd->name, "verify") == 0)
        rc = g3_cmd_ckpt_verify(o);
    else if (strcmp(cmd->name, "convert") == 0)
        rc = g3_cmd_ckpt_convert(o);
    else
        rc = g3_cmd_ckpt_export(o);
    g3_opts_free(o);
    return rc;
}
