/* gpt3d generate: text from a checkpoint's model.
 *
 * The prompt (--prompt, --prompt-file or standard input) is BPE-encoded, the model extends it
 * token by token (greedy, or sampled with temperature, top-k and top-p from the counter-based
 * RNG keyed by --seed, so a seed always gives the same text) until --max-new-tokens or the
 * end-of-document token, and the text (prompt and continuation) streams to standard output
 * as UTF-8, a character never cut between tokens.  The sampler is the trainer's (src/infer):
 * greedy output equals `gpt3d train --sample-tokens N` for the same model and prompt.
 * The --device backend (cpu by default; chosen, checked and opened as gpt3d train does);
 * alone or under mpirun / srun with the trainer's tensor x pipeline layout (one replica):
 * rank 0 reads the prompt and passes its ids to every rank, each step's logits go through the
 * pipeline, are gathered over TP and sent to every rank (g3_par_logits_last), so every rank
 * picks the same token with the same draw; rank 0 prints (docs/inference.md). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cmd_infer.h"
#include "cli/commands.h"
#include "core/clock.h"
#include "core/fileio.h"
#include "core/log.h"
#include "core/opt.h"
#include "core/status.h"
#include "data/bpe.h"
#include "data/json.h"
#include "infer/infer.h"

static const g3_opt_spec_t g3_generate_specs[] = {
    G3_CLI_INFER_SPECS,
    { "prompt", G3_OPT_STRING, NULL, "Text to continue (UTF-8).  Without --prompt or --prompt-file the prompt is read from standard input.", NULL, 0, 0, "TEXT" },
    { "prompt-file", G3_OPT_STRING, NULL, "Read the prompt from FILE ('-': standard input); one trailing newline is dropped.", NULL, 0, 0, "FILE" },
    { "max-new-tokens", G3_OPT_INT, "64", "Generate at most this many tokens.", NULL, 0, 0, NULL },
    { "greedy", G3_OPT_BOOL, NULL, "Always take the likeliest token (deterministic; no --temperature, --top-k, --top-p).", NULL, 0, 0, NULL },
    { "temperature", G3_OPT_FLOAT, "1.0", "Divide the logits by this before sampling (> 0; lower is more conservative).", NULL, 0, 0, NULL },
    { "top-k", G3_OPT_INT, "0", "Sample among the k likeliest tokens (0: all; 1: greedy).", NULL, 0, 0, NULL },
    { "top-p", G3_OPT_FLOAT, "0", "Then among the fewest likeliest tokens whose probability reaches p (nucleus; 0 or 1: off).", NULL, 0, 0, NULL },
    { "seed", G3_OPT_INT, NULL, "Seed of the sampling draws: the same seed gives the same text (default: the checkpoint's run's --seed, as its training sample used).", NULL, 0, 0, NULL },
    { "ignore-eod", G3_OPT_BOOL, NULL, "Do not stop at the end-of-document token (<|endoftext|>); it is then printed as text.", NULL, 0, 0, NULL },
    { "output-file", G3_OPT_STRING, NULL, "Also write a JSON object to FILE: checkpoint, iteration, seed, prompt and generated token ids, text, why it stopped.", NULL, 0, 0, "FILE" },
    { NULL, 0, NULL, NULL, NULL, 0, 0, NULL }
};

static const g3_opt_cmd_t g3_generate_cmd = {
    "generate", "Generate text from a checkpoint: greedy or sampled (temperature, top-k, top-p, seed).",
    NULL, 0, 0, g3_generate_specs
};

/* The prompt text: --prompt, else --prompt-file, else standard input (not a terminal).
 * OUT: *text_p (malloc'd), *len_p, what (names it in messages; size bytes).  RET: exit code. */
static int g3_cmd_generate_prompt(const g3_opts_t *o, char **text_p, size_t *len_p, char *what,
                              size_t size)
{
    const char *prompt = g3_opts_str(o, "prompt"), *file = g3_opts_str(o, "prompt-file");
    FILE *f;
    int ok;

    if (prompt && file) {
        g3_error("--prompt and --prompt-file both give the prompt: pass only one");
        return G3_EXIT_USAGE;
    }
    if (prompt) {
        *text_p = strdup(prompt);
        *len_p = strlen(prompt);
        snprintf(what, size, "--prompt");
        if (!*text_p) {
            g3_error("out of memory for the prompt");
            return G3_EXIT_FAILURE;
        }
        return G3_EXIT_OK;
    }
    if (!file || strcmp(file, "-") == 0) {
        if (!file && isatty(STDIN_FILENO)) {
            g3_error(
                "no prompt: pass --prompt TEXT or --prompt-file FILE, or pipe the prompt into standard input");
            return G3_EXIT_USAGE;
        }
        snprintf(what, size, "the prompt on standard input");
        ok = g3_read_stream(stdin, text_p, len_p) == G3_OK;
        if (!ok) {
            g3_error("cannot read the prompt from standard input: %s", strerror(errno));
            return G3_EXIT_FAILURE;
        }
    } else {
        snprintf(what, size, "--prompt-file %s", file);
        f = fopen(file, "rb");
        if (!f) {
            g3_error("--prompt-file %s: %s; pass a readable file", file, strerror(errno));
            return G3_EXIT_FAILURE;
        }
        ok = g3_read_stream(f, text_p, len_p) == G3_OK;
        if (!ok)
            g3_error("--prompt-file %s: cannot read it: %s", file, strerror(errno));
        fclose(f);
        if (!ok)
            return G3_EXIT_FAILURE;
    }
    /* one trailing newline, as the shell's echo and editors add */
    if (*len_p > 0 && (*text_p)[*len_p - 1] == '\n')
        (*text_p)[--*len_p] = '\0';
    if (*len_p > 0 && (*text_p)[*len_p - 1] == '\r')
        (*text_p)[--*len_p] = '\0';
    return G3_EXIT_OK;
}

/* The sampling flags.  RET: the exit code. */
static int g3_cmd_generate_sampling(const g3_opts_t *o, const g3_cli_infer_t *s,
                                g3_infer_sampling_t *sp)
{
    int64_t top_k = g3_opts_int(o, "top-k");

    memset(sp, 0, sizeof(*sp));
    sp->greedy = g3_opts_bool(o, "greedy");
    sp->temperature = g3_opts_float(o, "temperature");
    sp->top_p = g3_opts_float(o, "top-p");
    if (g3_opts_is_set(o, "seed") && g3_opts_int(o, "seed") < 0) {
        g3_error("--seed %lld is negative: give a seed of 0 or more", (long long)g3_opts_int(o, "seed"));
        return G3_EXIT_USAGE;
    }
    sp->seed = g3_opts_is_set(o, "seed") ? (uint64_t)g3_opts_int(o, "seed") : s->info->model.seed;
    if (sp->greedy && (g3_opts_is_set(o, "temperature") || g3_opts_is_set(o, "top-k") ||
                       g3_opts_is_set(o, "top-p"))) {
        g3_error(
            "--greedy always takes the likeliest token, so --temperature, --top-k and --top-p mean nothing with it: drop them, or drop --greedy to sample");
        return G3_EXIT_USAGE;
    }
    if (!(sp->temperature > 0.0)) {
        g3_error(
            "--temperature must be greater than 0 (got %g); for deterministic output use --greedy",
            sp->temperature);
        return G3_EXIT_USAGE;
    }
    if (top_k < 0 || top_k > INT32_MAX) {
        g3_error("--top-k must be 0 (all tokens) or a positive count (got %lld)",
                 (long long)top_k);
        return G3_EXIT_USAGE;
    }
    if (top_k > s->info->model.vocab_size) {
        g3_warn("--top-k %lld is more than the vocabulary's %d tokens: sampling among all",
                (long long)top_k, s->info->model.vocab_size);
        top_k = 0;
    }
    sp->top_k = (int)top_k;
    if (!(sp->top_p >= 0.0 && sp->top_p <= 1.0)) {
        g3_error("--top-p must be in [0, 1] (got %g; 0 or 1: off)", sp->top_p);
        return G3_EXIT_USAGE;
    }
    return G3_EXIT_OK;
}

/* --output-file: the whole result as one JSON object.  RET: the exit code. */
static int g3_cmd_generate_write_json(const char *path, const g3_cli_infer_t *s,
                                  const g3_infer_sampling_t *sp, const g3_bpe_ids_t *ids,
                                  size_t prompt_len, const char *text, const char *stop)
{
    FILE *f = fopen(path, "w");
    int err;

    if (!f) {
        g3_error("cannot create --output-file %s: %s; pass a writable path", path,
                 strerror(errno));
        return G3_EXIT_FAILURE;
    }
    fprintf(f, "{\"checkpoint\":");
    g3_json_write_string(f, s->info->path);
    fprintf(f,
            ",\"iteration\":%" PRId64
            ",\"greedy\":%s,\"temperature\":%.9g,\"top_k\":%d,\"top_p\":%.9g,\"seed\":%" PRIu64
            ",\"prompt_ids\":[",
            s->info->iteration, sp->greedy || sp->top_k == 1 ? "true" : "false", sp->temperature,
            sp->top_k, sp->top_p, sp->seed);
    for (size_t i = 0; i < prompt_len; i++)
        fprintf(f, "%s%d", i ? "," : "", ids->ids[i]);
    fprintf(f, "],\"ids\":[");
    for (size_t i = prompt_len; i < ids->len; i++)
        fprintf(f, "%s%d", i > prompt_len ? "," : "", ids->ids[i]);
    fprintf(f, "],\"text\":");
    g3_json_write_string(f, text);
    fprintf(f, ",\"stop\":\"%s\"}\n", stop);
    err = ferror(f);
    if (fclose(f) != 0 || err) {
        g3_error("could not write --output-file %s: %s", path, strerror(errno));
        return G3_EXIT_FAILURE;
    }
    return G3_EXIT_OK;
}

/* Rank 0's prompt ids to every rank (collective over the world: every rank calls it, before
 * the checks are agreed, so that a rank failing here fails them instead of leaving the others
 * waiting in the layout).  ids: rank 0's, the others' filled; rc: this rank's exit code so
 * far (rank 0 sends nothing when it failed).  RET: the exit code. */
static int g3_cmd_generate_share_prompt(g3_cli_infer_t *s, g3_bpe_ids_t *ids, int rc)
{
    g3_comm_exchange_t *x = NULL;
    const void *blob = NULL;
    size_t len = 0;
    int send = s->rank == 0 && rc == G3_EXIT_OK;
    g3_status_t st;

    if (!s->w.world || s->w.me->size == 1)
        return rc;
    st = g3_comm_world_exchange(s->w.world, "the prompt", send ? ids->ids : NULL,
                                send ? sizeof(int32_t) * ids->len : 0, &x);
    if (rc != G3_EXIT_OK) {   /* this rank failed already: its own code */
        g3_comm_exchange_free(x);
        return rc;
    }
    if (st == G3_OK)
        st = g3_comm_exchange_get(x, 0, &blob, &len);
    if (st == G3_OK && s->rank != 0) {
        size_t n = len / sizeof(int32_t);
        int32_t *got = malloc(len > 0 ? len : 1);
        if (!got || n == 0) {
            g3_error("%s", got ? "rank 0 passed an empty prompt" : "out of memory for the prompt");
            free(got);
            g3_comm_exchange_free(x);
            return G3_EXIT_FAILURE;
        }
        memcpy(got, blob, len);
        free(ids->ids);
        ids->ids = got;
        ids->len = ids->cap = n;
    }
    g3_comm_exchange_free(x);
    return g3_status_exit_code(st);
}

static g3_status_t g3_cmd_generate_on_token(void *ctx, const int32_t *ids, size_t len)
{
    return g3_infer_stream_update((g3_infer_stream_t *)ctx, ids, len);
}

/* Rank 0: the prompt, encoded and checked against the context.  OUT: ids, what (size).
 * RET: the exit code. */
static int g3_cmd_generate_read_prompt(const g3_opts_t *o, const g3_cli_infer_t *s,
                                   const g3_bpe_t *bpe, g3_bpe_ids_t *ids, char *what,
                                   size_t size)
{
    char *prompt = NULL;
    size_t prompt_len = 0;
    int rc = g3_cmd_generate_prompt(o, &prompt, &prompt_len, what, size);
    g3_status_t st;

    if (rc != G3_EXIT_OK)
        return rc;
    st = g3_infer_encode_prompt(bpe, prompt, prompt_len, what, ids);
    free(prompt);
    if (st != G3_OK)
        return st == G3_ERR_FORMAT ? G3_EXIT_USAGE : g3_status_exit_code(st);
    if (ids->len > (size_t)s->T) {
        g3_error(
            "%s is %zu tokens, longer than the model's context of %d tokens (--seq-length): shorten it to at most %d tokens (the continuation then slides the window along)",
            what, ids->len, s->T, s->T);
        return G3_EXIT_USAGE;
    }
    return G3_EXIT_OK;
}

/* The sampling flags and --max-new-tokens.  OUT: sp, *max_new_p.  RET: the exit code. */
static int g3_cmd_generate_settings(const g3_opts_t *o, const g3_cli_infer_t *s,
                                g3_infer_sampling_t *sp, int *max_new_p)
{
    int rc = g3_cmd_generate_sampling(o, s, sp);
    int64_t max_new = g3_opts_int(o, "max-new-tokens");

    if (rc != G3_EXIT_OK)
        return rc;
    if (max_new < 0 || max_new > INT32_MAX) {
        g3_error("--max-new-tokens must be between 0 and %d (got %lld)", INT32_MAX,
                 (long long)max_new);
        return G3_EXIT_USAGE;
    }
    *max_new_p = (int)max_new;
    return G3_EXIT_OK;
}

/* Rank 0's closing line on standard error: what was made, how it stopped, how fast. */
static void g3_cmd_generate_summary(const g3_infer_sampling_t *sp, int made, size_t prompt_ids,
                                int stopped, double dt)
{
    fprintf(stderr, "gpt3d generate: %d token%s after a %zu-token prompt (%s, seed %" PRIu64
            "); stopped at %s; %.2f s, %.1f tokens/s\n", made, made == 1 ? "" : "s",
            prompt_ids, sp->greedy || sp->top_k == 1 ? "greedy" : "sampled", sp->seed,
            stopped ? "the end-of-document token" : "--max-new-tokens", dt,
            dt > 0 ? made / dt : 0.0);
}

/* Generate after the prompt ids (every rank, collective), rank 0 streaming the text to
 * standard output, then its summary and --output-file.  RET: the exit code. */
static int g3_cmd_generate_run(const g3_opts_t *o, g3_cli_infer_t *s, const g3_bpe_t *bpe,
                           const g3_infer_sampling_t *sp, int max_new, g3_bpe_ids_t *ids)
{
    g3_infer_generate_opts_t go;
    g3_infer_stream_t stream;
    g3_infer_lm_t lm = g3_cli_infer_lm(s);
    size_t prompt_ids = ids->len, text_len = 0;
    char *text = NULL;
    int made = 0, stopped = 0, rc;
    double t0;
    g3_status_t st = G3_OK;

    memset(&go, 0, sizeof(go));
    go.max_new_tokens = max_new;
    go.context = s->T;
    go.vocab_size = s->info->model.vocab_size;
    go.stop_id = g3_opts_bool(o, "ignore-eod") ? -1 : g3_bpe_eod_id(bpe);
    go.sampling = *sp;
    if (s->rank == 0) {   /* the prompt first (its complete characters), then each new token */
        go.on_token = g3_cmd_generate_on_token;
        go.on_token_ctx = &stream;
        g3_infer_stream_init(&stream, bpe, stdout);
        st = g3_infer_stream_update(&stream, ids->ids, ids->len);
    }
    t0 = g3_clock_now();
    if (st == G3_OK)
        st = g3_infer_generate(&lm, &go, ids, &made, &stopped);
    if (st == G3_OK && s->rank == 0)
        st = g3_infer_stream_finish(&stream);
    if (s->rank == 0)
        g3_infer_stream_free(&stream);
    if (st != G3_OK)
        return g3_cli_infer_fail(s, st);
    if (s->rank != 0)
        return G3_EXIT_OK;
    printf("\n");
    fflush(stdout);
    g3_cmd_generate_summary(sp, made, prompt_ids, stopped, g3_clock_now() - t0);
    if (!g3_opts_str(o, "output-file"))
        return G3_EXIT_OK;
    st = g3_infer_decode_text(bpe, ids->ids, ids->len, &text, &text_len);
    rc = st != G3_OK ? g3_status_exit_code(st)
                     : g3_cmd_generate_write_json(g3_opts_str(o, "output-file"), s, sp, ids,
                                              prompt_ids, text, stopped ? "eod" : "max-new-tokens");
    free(text);
    return rc;
}

int g3_cmd_generate(int argc, char **argv)
{
    g3_opts_t *o = NULL;
    g3_cli_infer_t s;
    g3_infer_sampling_t sp;
    g3_bpe_t *bpe = NULL;
    g3_bpe_ids_t ids = { 0 };
    char what[PATH_MAX + 32];
    int rc, max_new = 0;

    memset(&s, 0, sizeof(s));
    rc = g3_cli_infer_parse(&g3_generate_cmd, argc, argv, &o);
    if (rc != G3_EXIT_OK)
        return rc;
    if (g3_opts_help_shown(o))
        goto out;
    /* every check before any work, on every rank (one replica: no data parallelism) */
    rc = g3_cli_infer_check(o, "generate", 1, &s);
    if (rc == G3_EXIT_OK)
        rc = g3_cmd_generate_settings(o, &s, &sp, &max_new);
    if (rc == G3_EXIT_OK)
        rc = g3_status_exit_code(g3_bpe_load(s.vocab_file, s.merge_file, &bpe));
    /* rank 0 reads the prompt (standard input is its own under mpirun and srun) */
    if (rc == G3_EXIT_OK && s.rank == 0)
        rc = g3_cmd_generate_read_prompt(o, &s, bpe, &ids, what, sizeof(what));
    rc = g3_cmd_generate_share_prompt(&s, &ids, rc);
    rc = g3_cli_infer_agree(&s, rc);
    if (rc == G3_EXIT_OK)
        rc = g3_cli_infer_load(o, 1, &s);
    if (rc == G3_EXIT_OK && s.rank == 0)
        g3_cli_infer_describe(&s, stderr);
    if (rc == G3_EXIT_OK)
        rc = g3_cmd_generate_run(o, &s, bpe, &sp, max_new, &ids);
out:
    g3_bpe_ids_free(&ids);
    g3_bpe_free(bpe);
    g3_cli_infer_free(&s);
    g3_opts_free(o);
    return rc;
}
