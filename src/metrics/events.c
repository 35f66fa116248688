/* The metrics' schema, its one sink and its reader (events.h). */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/log.h"
#include "data/json.h"
#include "metrics/events.h"

/* ---- the tables ---------------------------------------------------------------------------- */

/* the table's short words for its flags and axes, only while it is expanded */
#define OPT    G3_EV_F_OPT
#define TBONLY G3_EV_F_TBONLY
#define FINITE G3_EV_F_FINITE
#define PPL    G3_EV_F_PPL
#define TIMERS G3_EV_F_TIMERS
#define I      G3_EV_AX_I
#define S      G3_EV_AX_S
#define K      G3_EV_AX_K
const g3_ev_field_t g3_ev_fields[G3_EVF_COUNT] = {
#define G3_EV_FIELD_ROW(ev, id, key, type, fmt, unit, flags, tag, axes, doc) \
    { G3_EV_##ev, key, G3_EV_##type, fmt, unit, flags, tag, axes, doc },
    G3_EV_FIELDS(G3_EV_FIELD_ROW)
#undef G3_EV_FIELD_ROW
};
#undef OPT
#undef TBONLY
#undef FINITE
#undef PPL
#undef TIMERS
#undef I
#undef S
#undef K

const g3_ev_kind_info_t g3_ev_kinds[G3_EV_NKINDS] = {
#define G3_EV_KIND_ROW(name, json, jsonl, doc) { json, jsonl, doc },
    G3_EV_KINDS(G3_EV_KIND_ROW)
#undef G3_EV_KIND_ROW
};

static const char *const g3_ev_type_names[] = { "int",    "number", "string", "bool",
                                                "object", "map",    "pairs" };

int g3_ev_kind_find(const char *name)
{
    for (int k = 0; k < G3_EV_NKINDS; k++)
        if (!strcmp(g3_ev_kinds[k].name, name))
            return k;
    return -1;
}

static int g3_ev_field_find(g3_ev_kind_t kind, const char *key)
{
    for (int f = 0; f < G3_EVF_COUNT; f++)
        if (g3_ev_fields[f].kind == kind && !strcmp(g3_ev_fields[f].key, key))
            return f;
    return -1;
}

/* ---- building a record ------------------------------------------------------------------- */

void g3_ev_init(g3_ev_t *e, g3_ev_kind_t kind)
{
    memset(e, 0, sizeof(*e));
    e->kind = kind;
}

/* Field f may take a value of type t in e: else a programming error, logged. */
static int g3_ev_check(const g3_ev_t *e, g3_ev_field_id_t f, g3_ev_type_t t)
{
    if ((int)f >= 0 && f < G3_EVF_COUNT && g3_ev_fields[f].kind == e->kind &&
        g3_ev_fields[f].type == t)
        return 1;
    g3_error("internal: metrics field %d is not a %s field of the %s event", (int)f,
             g3_ev_type_names[t], g3_ev_kinds[e->kind].name);
    return 0;
}

void g3_ev_int(g3_ev_t *e, g3_ev_field_id_t f, int64_t v)
{
    if (g3_ev_check(e, f, G3_EV_INT)) {
        e->v[f].i = v;
        e->set[f] = 1;
    }
}

void g3_ev_num(g3_ev_t *e, g3_ev_field_id_t f, double v)
{
    if (g3_ev_check(e, f, G3_EV_NUM)) {
        e->v[f].d = v;
        e->set[f] = 1;
    }
}

void g3_ev_str(g3_ev_t *e, g3_ev_field_id_t f, const char *s)
{
    if (g3_ev_check(e, f, G3_EV_STR) && s) {
        e->v[f].s = s;
        e->set[f] = 1;
    }
}

void g3_ev_bool(g3_ev_t *e, g3_ev_field_id_t f, int v)
{
    if (g3_ev_check(e, f, G3_EV_BOOL)) {
        e->v[f].i = v != 0;
        e->set[f] = 1;
    }
}

void g3_ev_obj(g3_ev_t *e, g3_ev_field_id_t f, const char *members)
{
    if (g3_ev_check(e, f, G3_EV_OBJ) && members) {
        e->v[f].s = members;
        e->set[f] = 1;
    }
}

void g3_ev_map(g3_ev_t *e, g3_ev_field_id_t f, const g3_ev_map_t *m)
{
    if (g3_ev_check(e, f, g3_ev_fields[f].type == G3_EV_PAIRS ? G3_EV_PAIRS : G3_EV_MAP) && m) {
        e->v[f].m = m;
        e->set[f] = 1;
    }
}

/* ---- the JSON line ----------------------------------------------------------------------- */

/* A number in fmt, or null (JSON has no NaN or infinity). */
static void g3_ev_json_num(FILE *f, const char *fmt, double v)
{
    if (isfinite(v))
        fprintf(f, fmt ? fmt : "%.9g", v);
    else
        fputs("null", f);
}

static void g3_ev_json_value(FILE *f, const g3_ev_field_t *fd, const g3_ev_val_t *v)
{
    switch (fd->type) {
    case G3_EV_INT: fprintf(f, "%lld", (long long)v->i); break;
    case G3_EV_NUM: g3_ev_json_num(f, fd->fmt, v->d); break;
    case G3_EV_STR: g3_json_write_string(f, v->s); break;
    case G3_EV_BOOL: fputs(v->i ? "true" : "false", f); break;
    case G3_EV_OBJ: fprintf(f, "{%s}", v->s); break;
    case G3_EV_MAP:
    case G3_EV_PAIRS:
        fputc('{', f);
        for (int i = 0; i < v->m->n; i++) {
            if (i)
                fputc(',', f);
            g3_json_write_string(f, v->m->names[i]);
            fputc(':', f);
            if (fd->type == G3_EV_PAIRS)
                fputc('[', f);
            g3_ev_json_num(f, fd->fmt, v->m->v[i]);
            if (fd->type == G3_EV_PAIRS) {
                fputc(',', f);
                g3_ev_json_num(f, fd->fmt, v->m->v2[i]);
                fputc(']', f);
            }
        }
        fputc('}', f);
        break;
    }
}

static void g3_ev_json_line(FILE *f, const g3_ev_t *e)
{
    fprintf(f, "{\"event\":\"%s\"", g3_ev_kinds[e->kind].name);
    for (int i = 0; i < G3_EVF_COUNT; i++) {
        const g3_ev_field_t *fd = &g3_ev_fields[i];
        if (fd->kind != e->kind || (fd->flags & G3_EV_F_TBONLY) ||
            (!e->set[i] && (fd->flags & G3_EV_F_OPT)))
            continue;
        fprintf(f, ",\"%s\":", fd->key);
        if (e->set[i])
            g3_ev_json_value(f, fd, &e->v[i]);
        else
            fputs("null", f);
    }
    fputs("}\n", f);
    fflush(f);
}

/* ---- TensorBoard ------------------------------------------------------------------------- */

/* The value of the INT field keyed key of e's kind (a TensorBoard step).  RET: 0 if unset. */
static int g3_ev_step(const g3_ev_t *e, const char *key, int64_t *step)
{
    int f = g3_ev_field_find(e->kind, key);
    if (f < 0 || !e->set[f] || g3_ev_fields[f].type != G3_EV_INT)
        return 0;
    *step = e->v[f].i;
    return 1;
}

static void g3_ev_tb_field(g3_tb_t *tb, const g3_ev_t *e, int f)
{
    static const char *const axis_key[3] = { "iteration", "consumed_samples", "consumed_tokens" };
    static const char *const axis_suffix[3] = { "", " vs samples", " vs tokens" };
    const g3_ev_field_t *fd = &g3_ev_fields[f];
    char tag[160];
    int64_t step;
    double v;

    if (fd->type == G3_EV_PAIRS) { /* NAME + tag at the iteration, the max in seconds */
        if (!g3_ev_step(e, "iteration", &step))
            return;
        for (int i = 0; i < e->v[f].m->n; i++) {
            snprintf(tag, sizeof(tag), "%s%s", e->v[f].m->names[i], fd->tb_tag);
            g3_tb_scalar(tb, tag, step, e->v[f].m->v2[i] / 1e3);
        }
        return;
    }
    v = fd->type == G3_EV_INT ? (double)e->v[f].i : e->v[f].d;
    if ((fd->flags & G3_EV_F_FINITE) && !isfinite(v))
        return;
    for (int a = 0; a < 3; a++) {
        if (!(fd->tb_axes & (1u << a)) || !g3_ev_step(e, axis_key[a], &step))
            continue;
        snprintf(tag, sizeof(tag), "%s%s", fd->tb_tag, axis_suffix[a]);
        g3_tb_scalar(tb, tag, step, v);
    }
}

static void g3_ev_tb(g3_tb_t *tb, unsigned groups, const g3_ev_t *e)
{
    for (int f = 0; f < G3_EVF_COUNT; f++) {
        const g3_ev_field_t *fd = &g3_ev_fields[f];
        unsigned need = fd->flags & (G3_EV_F_PPL | G3_EV_F_TIMERS);
        if (fd->kind != e->kind || !fd->tb_tag || !e->set[f] || (need & ~groups))
            continue;
        g3_ev_tb_field(tb, e, f);
    }
}

/* ---- the progress lines ------------------------------------------------------------------ */

/* Megatron-LM's training_log line. */
static void g3_ev_line_train(FILE *out, const g3_ev_t *e)
{
    const g3_ev_val_t *v = e->v;
    fprintf(
        out,
        " iteration %8lld/%8lld | consumed samples: %10lld | elapsed time per iteration (ms): %.1f | learning rate: %.6E | global batch size: %5lld | lm loss: %.6E | grad norm: %.3f | tokens/s: %.0f | TFLOP/s: %.4f | MFU: %.2f%% |\n",
        (long long)v[G3_EVF_TRAIN_ITER].i, (long long)v[G3_EVF_TRAIN_ITERS].i,
        (long long)v[G3_EVF_TRAIN_SAMPLES].i, v[G3_EVF_TRAIN_MS].d, v[G3_EVF_TRAIN_LR].d,
        (long long)v[G3_EVF_TRAIN_GBS].i, v[G3_EVF_TRAIN_LOSS].d, v[G3_EVF_TRAIN_NORM].d,
        v[G3_EVF_TRAIN_TPS].d, v[G3_EVF_TRAIN_TFLOPS].d, 100.0 * v[G3_EVF_TRAIN_MFU].d);
}

/* Megatron-LM's evaluation lines ("validation loss at iteration N | ..." between dashes). */
static void g3_ev_line_eval(FILE *out, const g3_ev_t *e)
{
    const g3_ev_val_t *v = e->v;
    const char *split = e->set[G3_EVF_EVAL_SPLIT] ? v[G3_EVF_EVAL_SPLIT].s : "valid";
    const char *label = !strcmp(split, "valid") ? "validation" : split;

    fprintf(out, "-----------------------------------------------------------------------------\n");
    fprintf(out, " %s loss %s %lld | lm loss value: %.6E | lm loss PPL: %.6E |\n", label,
            v[G3_EVF_EVAL_FINAL].i ? "at the end of training, iteration" : "at iteration",
            (long long)v[G3_EVF_EVAL_ITER].i, v[G3_EVF_EVAL_LOSS].d, v[G3_EVF_EVAL_PPL].d);
    fprintf(out, "-----------------------------------------------------------------------------\n");
}

static void g3_ev_line_task(FILE *out, const g3_ev_t *e)
{
    const g3_ev_val_t *v = e->v;
    const g3_ev_map_t *m = v[G3_EVF_TASK_METRICS].m, *se = v[G3_EVF_TASK_STDERR].m;

    fprintf(out, " task %s at iteration %lld | %lld-shot | n %lld", v[G3_EVF_TASK_NAME].s,
            (long long)v[G3_EVF_TASK_ITER].i, (long long)v[G3_EVF_TASK_SHOTS].i,
            (long long)v[G3_EVF_TASK_N].i);
    for (int i = 0; m && i < m->n; i++) {
        fprintf(out, " | %s: %.6g", m->names[i], m->v[i]);
        if (se && i < se->n && isfinite(se->v[i]))
            fprintf(out, " +- %.2g", se->v[i]);
    }
    if (v[G3_EVF_TASK_TRUNC].i)
        fprintf(out, " | truncated: %lld", (long long)v[G3_EVF_TASK_TRUNC].i);
    fprintf(out, " | %.1f tokens/s |\n", v[G3_EVF_TASK_TPS].d);
}

void g3_ev_emit(const g3_ev_sink_t *sink, const g3_ev_t *e)
{
    if (sink->progress) {
        if (e->kind == G3_EV_TRAIN)
            g3_ev_line_train(sink->progress, e);
        else if (e->kind == G3_EV_EVAL)
            g3_ev_line_eval(sink->progress, e);
        else if (e->kind == G3_EV_TASK)
            g3_ev_line_task(sink->progress, e);
        fflush(sink->progress);
    }
    if (sink->jsonl && g3_ev_kinds[e->kind].jsonl)
        g3_ev_json_line(sink->jsonl, e);
    if (sink->tb)
        g3_ev_tb(sink->tb, sink->tb_groups, e);
}

/* ---- reading ----------------------------------------------------------------------------- */

static g3_status_t g3_ev_parse(const char *line, size_t len, g3_ev_parsed_t *p, const char **why_p)
{
    enum { G3_EV_MEMBERS_MAX = 64 };
    g3_json_t j = { line, len, 0, NULL, 0 };
    g3_buf_t key = { NULL, 0, 0 };
    struct {
        char key[48];
        size_t at, n;
    } mem[G3_EV_MEMBERS_MAX];
    int nmem = 0, first = 1;
    g3_status_t st;

    memset(p, 0, sizeof(*p));
    p->kind = -1;
    *why_p = NULL;
    g3_json_skip_ws(&j);
    if (j.pos >= j.n || j.s[j.pos] != '{') {
        *why_p = "not a JSON object";
        return G3_ERR_FORMAT;
    }
    while ((st = g3_json_object_next(&j, &first, &key)) == G3_OK) {
        size_t at = j.pos;
        st = g3_json_skip_value(&j);
        if (st != G3_OK)
            break;
        if (nmem < G3_EV_MEMBERS_MAX && key.len < sizeof(mem[0].key)) {
            snprintf(mem[nmem].key, sizeof(mem[nmem].key), "%.*s", (int)key.len, key.data);
            mem[nmem].at = at;
            mem[nmem++].n = j.pos - at;
        }
    }
    g3_buf_free(&key);
    if (st != G3_ERR_NOT_FOUND) {
        *why_p = "not a JSON object";
        return G3_ERR_FORMAT;
    }
    for (int m = 0; m < nmem; m++) {
        if (!strcmp(mem[m].key, "event") && mem[m].n >= 2 && line[mem[m].at] == '"') {
            char name[32];
            p->event = line + mem[m].at;
            p->event_len = mem[m].n;
            snprintf(name, sizeof(name), "%.*s", (int)(mem[m].n - 2), p->event + 1);
            p->kind = g3_ev_kind_find(name);
        }
    }
    if (!p->event) {
        *why_p = "a record without an \"event\" string";
        return G3_ERR_FORMAT;
    }
    for (int m = 0; m < nmem && p->kind >= 0; m++) {
        int f = g3_ev_field_find((g3_ev_kind_t)p->kind, mem[m].key);
        if (f >= 0) {
            p->raw[f] = line + mem[m].at;
            p->raw_len[f] = mem[m].n;
        }
    }
    return G3_OK;
}

/* The number in raw (n bytes).  RET: NaN for null or anything but a whole number. */
static double g3_ev_number(const char *raw, size_t n)
{
    char tmp[64], *end;
    double v;
    if (!raw || n == 0 || n >= sizeof(tmp))
        return NAN;
    memcpy(tmp, raw, n);
    tmp[n] = '\0';
    v = strtod(tmp, &end);
    return end == tmp || *end ? NAN : v;
}

double g3_ev_parsed_num(const g3_ev_parsed_t *p, g3_ev_field_id_t f)
{
    return g3_ev_number(p->raw[f], p->raw_len[f]);
}

double g3_ev_parsed_num_key(const g3_ev_parsed_t *p, const char *key)
{
    int f = p->kind >= 0 ? g3_ev_field_find((g3_ev_kind_t)p->kind, key) : -1;
    return f < 0 ? NAN : g3_ev_parsed_num(p, (g3_ev_field_id_t)f);
}

/* A JSON value's text for a TSV cell: a string decoded (a tab, newline and backslash as \t,
 * \n and \\), an array's items without brackets, anything else as written.
 * RET: G3_ERR_FORMAT (a bad string). */
static g3_status_t g3_ev_value_text(const char *raw, size_t n, FILE *out)
{
    if (n >= 2 && raw[0] == '"') {
        g3_json_t j = { raw, n, 0, NULL, 0 };
        g3_buf_t s = { NULL, 0, 0 };
        g3_status_t st = g3_json_string(&j, &s);
        for (size_t i = 0; st == G3_OK && i < s.len; i++) { /* one cell: \t \n \\ escaped */
            char c = s.data[i];
            if (c == '\t' || c == '\n' || c == '\\')
                fputc('\\', out);
            fputc(c == '\t' ? 't' : c == '\n' ? 'n' : c, out);
        }
        g3_buf_free(&s);
        return st == G3_OK ? G3_OK : G3_ERR_FORMAT;
    }
    if (n >= 2 && raw[0] == '[') {
        raw++;
        n -= 2;
    }
    fwrite(raw, 1, n, out);
    return G3_OK;
}

/* An object's members as "NAME=VALUE ..." (sub: only that member's value). */
static g3_status_t g3_ev_object_text(const char *raw, size_t n, const char *sub, FILE *out)
{
    g3_json_t j = { raw, n, 0, NULL, 0 };
    g3_buf_t key = { NULL, 0, 0 };
    int first = 1, k = 0;
    g3_status_t st;

    if (n == 0 || raw[0] != '{')
        return n == 4 && !memcmp(raw, "null", 4) ? G3_OK : G3_ERR_FORMAT;
    while ((st = g3_json_object_next(&j, &first, &key)) == G3_OK) {
        size_t at = j.pos;
        int want = !sub || (strlen(sub) == key.len && !memcmp(sub, key.data, key.len));
        st = g3_json_skip_value(&j);
        if (st != G3_OK)
            break;
        if (!want)
            continue;
        if (!sub)
            fprintf(out, "%s%.*s=", k++ ? " " : "", (int)key.len, key.data);
        else if (j.pos - at == 4 && !memcmp(raw + at, "null", 4))
            continue; /* one member, null: nothing, as a null field */
        st = g3_ev_value_text(raw + at, j.pos - at, out);
        if (st != G3_OK)
            break;
    }
    g3_buf_free(&key);
    return st == G3_ERR_NOT_FOUND ? G3_OK : G3_ERR_FORMAT;
}

g3_status_t g3_ev_parsed_text(const g3_ev_parsed_t *p, g3_ev_field_id_t f, const char *sub,
                              FILE *out)
{
    const char *raw = p->raw[f];
    size_t n = p->raw_len[f];
    g3_ev_type_t t = g3_ev_fields[f].type;

    if (!raw || (n == 4 && !memcmp(raw, "null", 4)))
        return G3_OK;
    if (t == G3_EV_OBJ || t == G3_EV_MAP || t == G3_EV_PAIRS)
        return g3_ev_object_text(raw, n, sub, out);
    return g3_ev_value_text(raw, n, out);
}

g3_status_t g3_ev_file_each(const char *path, g3_ev_each_fn fn, void *arg)
{
    char file[4096], *data = NULL;
    size_t len = 0, lineno = 0;
    struct stat sb;
    g3_status_t st;

    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        snprintf(file, sizeof(file), "%s/metrics.jsonl", path);
    else
        snprintf(file, sizeof(file), "%s", path);
    st = g3_read_file(file, "metrics file", &data, &len);
    if (st != G3_OK)
        return st;
    for (size_t a = 0; a < len && st == G3_OK;) {
        size_t b = a;
        g3_ev_parsed_t p;
        const char *why;
        while (b < len && data[b] != '\n')
            b++;
        lineno++;
        if (b == len)
            break; /* a last line without its newline: a run killed while writing it */
        if (b > a && g3_ev_parse(data + a, b - a, &p, &why) != G3_OK) {
            g3_error("metrics file %s, line %zu: %s; pass a metrics.jsonl written by gpt3d train",
                     file, lineno, why);
            st = G3_ERR_FORMAT;
        } else if (b > a) {
            st = fn(&p, data + a, b - a, lineno, arg);
        }
        a = b + 1;
    }
    free(data);
    return st;
}

/* ---- the documentation ------------------------------------------------------------------- */

static void g3_ev_markdown_tags(FILE *out, const g3_ev_field_t *fd)
{
    static const char *const suffix[3] = { "", " vs samples", " vs tokens" };
    int k = 0;

    if (!fd->tb_tag)
        return;
    if (fd->type == G3_EV_PAIRS) {
        fprintf(out, "`TIMER%s`", fd->tb_tag);
        return;
    }
    for (int a = 0; a < 3; a++)
        if (fd->tb_axes & (1u << a))
            fprintf(out, "%s`%s%s`", k++ ? ", " : "", fd->tb_tag, suffix[a]);
}

void g3_ev_schema_markdown(FILE *out)
{
    fprintf(out, "| event | field | type | unit | TensorBoard | meaning |\n");
    fprintf(out, "|---|---|---|---|---|---|\n");
    for (int f = 0; f < G3_EVF_COUNT; f++) {
        const g3_ev_field_t *fd = &g3_ev_fields[f];
        fprintf(out, "| `%s` | `%s` | %s%s | %s | ", g3_ev_kinds[fd->kind].name, fd->key,
                g3_ev_type_names[fd->type], fd->flags & G3_EV_F_OPT ? " (optional)" : "", fd->unit);
        g3_ev_markdown_tags(out, fd);
        fprintf(out, "%s | %s%s |\n",
                fd->flags & G3_EV_F_PPL      ? " (--log-validation-ppl-to-tensorboard)"
                : fd->flags & G3_EV_F_TIMERS ? " (--log-timers-to-tensorboard)"
                                             : "",
                fd->doc, fd->flags & G3_EV_F_TBONLY ? " (TensorBoard only)" : "");
    }
}
