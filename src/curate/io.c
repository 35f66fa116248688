/* gpt3d curate: shard lists, the JSON-lines reader, atomic outputs, reports and the loop that
 * runs a stage over a task's shards and skips the shards that are done (curate_internal.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/fs.h"
#include "core/log.h"
#include "curate/curate_internal.h"

#define G3_CURATE_REPORT_FORMAT "gpt3d-curate-report"
#define G3_CURATE_REPORT_VERSION 1

/* ---- the shard list ------------------------------------------------------ */

void g3_curate_list_free(g3_curate_list_t *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->path[i]);
    free(l->path);
    free(l->line);
    memset(l, 0, sizeof(*l));
}

g3_status_t g3_curate_list_read(const char *list_path, g3_curate_list_t *l)
{
    char *data = NULL;
    size_t len = 0;
    g3_status_t st;
    uint64_t lineno = 0;
    int cap = 0;

    memset(l, 0, sizeof(*l));
    st = g3_read_file(list_path, "shard list", &data, &len);
    if (st != G3_OK)
        return st;
    for (char *p = data, *next; p < data + len; p = next) {
        char *e = memchr(p, '\n', (size_t)(data + len - p));
        next = e ? e + 1 : data + len;
        if (e)
            *e = '\0';
        lineno++;
        while (*p == ' ' || *p == '\t')
            p++;
        char *end = p + strlen(p);
        while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
            *--end = '\0';
        if (*p == '\0' || *p == '#')
            continue;
        struct stat sb;
        if (stat(p, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            g3_error("gpt3d curate: shard list '%s' line %llu: shard '%s' %s (fix the list or restore the file)",
                     list_path, (unsigned long long)lineno, p,
                     errno == ENOENT ? "does not exist" : "is not a readable regular file");
            st = G3_ERR_NOT_FOUND;
            goto err_free;
        }
        if (l->n == cap) {
            cap = cap ? 2 * cap : 64;
            char **np = realloc(l->path, (size_t)cap * sizeof(char *));
            uint64_t *nl = np ? realloc(l->line, (size_t)cap * sizeof(uint64_t)) : NULL;
            if (np)
                l->path = np;
            if (!np || !nl) {
                st = G3_ERR_NO_MEMORY;
                goto err_free;
            }
            l->line = nl;
        }
        l->line[l->n] = lineno;
        if (!(l->path[l->n] = strdup(p))) {
            st = G3_ERR_NO_MEMORY;
            goto err_free;
        }
        l->n++;
    }
    if (l->n == 0) {
        g3_error("gpt3d curate: shard list '%s' names no shard (one input path a line)", list_path);
        st = G3_ERR_FORMAT;
        goto err_free;
    }
    free(data);
    return G3_OK;

err_free:
    if (st == G3_ERR_NO_MEMORY)
        g3_error("gpt3d curate: out of memory reading the shard list '%s'", list_path);
    free(data);
    g3_curate_list_free(l);
    return st;
}

/* ---- the reader -------------------------------------------------------- */

g3_status_t g3_curate_reader_open(g3_curate_reader_t *r, const char *path, size_t max_line)
{
    memset(r, 0, sizeof(*r));
    r->path = path;
    r->max_line = max_line;
    r->f = fopen(path, "rb");
    if (!r->f) {
        g3_error("gpt3d curate: cannot open the shard '%s': %s", path, strerror(errno));
        return errno == ENOENT ? G3_ERR_NOT_FOUND : G3_ERR_IO;
    }
    return G3_OK;
}

void g3_curate_reader_close(g3_curate_reader_t *r)
{
    if (r->f)
        fclose(r->f);
    free(r->buf);
    memset(r, 0, sizeof(*r));
}

/* The next line into *line_p (NUL-terminated in place, without '\n' and a '\r' before it).
 * RET: G3_OK, G3_ERR_NOT_FOUND at the end, G3_ERR_FORMAT (too long), G3_ERR_IO, NO_MEMORY. */
static g3_status_t g3_curate_reader_line(g3_curate_reader_t *r, char **line_p, size_t *len_p)
{
    for (;;) {
        char *nl = r->len > r->pos ? memchr(r->buf + r->pos, '\n', r->len - r->pos) : NULL;
        if (nl || (r->eof && r->len > r->pos)) {
            char *line = r->buf + r->pos;
            size_t len = nl ? (size_t)(nl - line) : r->len - r->pos;
            if (len > r->max_line)
                goto too_long;
            r->pos += len + (nl != NULL);
            line[len] = '\0';
            if (len > 0 && line[len - 1] == '\r')
                line[--len] = '\0';
            r->lineno++;
            *line_p = line;
            *len_p = len;
            return G3_OK;
        }
        if (r->eof)
            return G3_ERR_NOT_FOUND;
        if (r->len - r->pos > r->max_line)
            goto too_long;
        /* Keep the unread tail, then read more. */
        memmove(r->buf, r->buf + r->pos, r->len - r->pos);
        r->len -= r->pos;
        r->pos = 0;
        if (r->cap - r->len < (1u << 20) + 1) {
            size_t cap = r->cap ? 2 * r->cap : (4u << 20);
            char *q = realloc(r->buf, cap);
            if (!q) {
                g3_error("gpt3d curate: out of memory reading '%s' line %llu (lower --max-line-bytes)",
                         r->path, (unsigned long long)r->lineno + 1);
                return G3_ERR_NO_MEMORY;
            }
            r->buf = q;
            r->cap = cap;
        }
        size_t got = fread(r->buf + r->len, 1, r->cap - r->len - 1, r->f);
        r->len += got;
        r->bytes += got;
        if (got == 0) {
            if (ferror(r->f)) {
                g3_error("gpt3d curate: cannot read the shard '%s': %s", r->path, strerror(errno));
                return G3_ERR_IO;
            }
            r->eof = 1;
        }
    }
too_long:
    g3_error("gpt3d curate: %s line %llu: the line is longer than %zu bytes (a corrupt shard, or raise --max-line-bytes)",
             r->path, (unsigned long long)r->lineno + 1, r->max_line);
    return G3_ERR_FORMAT;
}

g3_status_t g3_curate_reader_next(g3_curate_reader_t *r, const char *text_key,
                                  g3_curate_doc_t *d)
{
    char *s;
    size_t n;
    g3_status_t st;

    for (;;) {
        if ((st = g3_curate_reader_line(r, &s, &n)) != G3_OK)
            return st;
        size_t q = 0;
        while (q < n && (s[q] == ' ' || s[q] == '\t'))
            q++;
        if (q < n)
            break;
    }
    return g3_curate_doc_parse(r->path, r->lineno, s, n, text_key, d);
}

g3_status_t g3_curate_doc_parse(const char *path, uint64_t lineno, char *s, size_t n,
                                const char *text_key, g3_curate_doc_t *d)
{
    size_t bad;
    g3_status_t st;
    g3_buf_t key = { 0 };

    if ((bad = g3_curate_utf8_check(s, n)) != n) {
        g3_error("gpt3d curate: %s line %llu, byte %zu: invalid UTF-8 (fix the encoding of the shard, e.g. with iconv)",
                 path, (unsigned long long)lineno, bad + 1);
        return G3_ERR_FORMAT;
    }
    g3_json_t j = { s, n, 0, NULL, 0 };
    int first = 1, found = 0;
    d->text.len = 0;
    for (;;) {
        st = g3_json_object_next(&j, &first, &key);
        if (st == G3_ERR_NOT_FOUND)
            break;
        if (st != G3_OK)
            goto json_error;
        if (!found && key.len == strlen(text_key) && memcmp(key.data, text_key, key.len) == 0) {
            if (j.pos >= j.n || j.s[j.pos] != '"') {
                g3_error("gpt3d curate: %s line %llu: the value of \"%s\" is not a string",
                         path, (unsigned long long)lineno, text_key);
                g3_buf_free(&key);
                return G3_ERR_FORMAT;
            }
            d->val_start = j.pos;
            if ((st = g3_json_string(&j, &d->text)) != G3_OK)
                goto json_error;
            d->val_end = j.pos;
            found = 1;
            continue;
        }
        if ((st = g3_json_skip_value(&j)) != G3_OK)
            goto json_error;
    }
    g3_json_skip_ws(&j);
    if (j.pos != j.n) {
        j.why = "trailing characters after the JSON object (one object per line)";
        st = G3_ERR_FORMAT;
        goto json_error;
    }
    g3_buf_free(&key);
    if (!found) {
        g3_error("gpt3d curate: %s line %llu: the JSON object has no key \"%s\" (choose the text's key with --text-key)",
                 path, (unsigned long long)lineno, text_key);
        return G3_ERR_FORMAT;
    }
    if (!d->text.data && g3_buf_reserve(&d->text, 1) != G3_OK)
        return G3_ERR_NO_MEMORY;
    d->text.data[d->text.len] = '\0';
    d->raw = s;
    d->raw_len = n;
    d->line = lineno;
    return G3_OK;

json_error:
    g3_buf_free(&key);
    if (st == G3_ERR_NO_MEMORY) {
        g3_error("gpt3d curate: out of memory at %s line %llu", path, (unsigned long long)lineno);
        return st;
    }
    g3_error("gpt3d curate: %s line %llu, column %zu: %s (each line must be one JSON object, e.g. {\"text\": \"...\"})",
             path, (unsigned long long)lineno, j.pos + 1, j.why ? j.why : "invalid JSON");
    return G3_ERR_FORMAT;
}

/* ---- atomic outputs ------------------------------------------------------ */

g3_status_t g3_curate_out_open(g3_curate_out_t *o, const char *path, const char *what)
{
    memset(o, 0, sizeof(*o));
    snprintf(o->path, sizeof(o->path), "%s", path);
    g3_tmp_name(path, o->tmp, sizeof(o->tmp));
    o->f = fopen(o->tmp, "wb");
    if (!o->f) {
        g3_error("gpt3d curate: cannot create the %s '%s': %s", what, o->tmp, strerror(errno));
        return G3_ERR_IO;
    }
    return G3_OK;
}

g3_status_t g3_curate_out_commit(g3_curate_out_t *o)
{
    int bad = ferror(o->f) != 0;
    bad |= fflush(o->f) != 0;
    bad |= fsync(fileno(o->f)) != 0 && errno != EINVAL;
    int err = errno;
    bad |= fclose(o->f) != 0;
    o->f = NULL;
    if (bad || rename(o->tmp, o->path) != 0) {
        if (!bad)
            err = errno;
        g3_error("gpt3d curate: cannot write '%s': %s (disk full or quota?)", o->path, strerror(err));
        unlink(o->tmp);
        return G3_ERR_IO;
    }
    return G3_OK;
}

static void g3_curate_out_abort(g3_curate_out_t *o)
{
    if (o->f) {
        fclose(o->f);
        o->f = NULL;
        unlink(o->tmp);
    }
}

/* ---- reports ----------------------------------------------------------- */

void g3_curate_doc_id(const char *path, uint64_t line, char *id, size_t size)
{
    snprintf(id, size, "%s:%llu", path, (unsigned long long)line);
}

void g3_curate_doc_keep(FILE *out, const g3_curate_doc_t *d, uint64_t *docs_out)
{
    fwrite(d->raw, 1, d->raw_len, out);
    fputc('\n', out);
    (*docs_out)++;
}

void g3_curate_json_str(g3_buf_t *b, const char *s, size_t n)
{
    char esc[8];
    g3_buf_append(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            g3_buf_append(b, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof(esc), "\\u%04x", c);
            g3_buf_append(b, esc, 6);
        } else {
            g3_buf_append(b, &s[i], 1);
        }
    }
    g3_buf_append(b, "\"", 1);
}

void g3_curate_rep_raw(g3_buf_t *b, const char *s)
{
    g3_buf_append(b, s, strlen(s));
}

static void g3_curate_rep_key(g3_buf_t *b, const char *key)
{
    g3_curate_rep_raw(b, ",\n  ");
    g3_curate_json_str(b, key, strlen(key));
    g3_curate_rep_raw(b, ": ");
}

void g3_curate_rep_u64(g3_buf_t *b, const char *key, uint64_t v)
{
    char t[32];
    g3_curate_rep_key(b, key);
    snprintf(t, sizeof(t), "%llu", (unsigned long long)v);
    g3_curate_rep_raw(b, t);
}

void g3_curate_rep_str(g3_buf_t *b, const char *key, const char *v)
{
    g3_curate_rep_key(b, key);
    g3_curate_json_str(b, v, strlen(v));
}

void g3_curate_rep_ids(g3_buf_t *b, const char *key, char ids[][256], int n)
{
    g3_curate_rep_key(b, key);
    g3_curate_rep_raw(b, "[");
    for (int i = 0; i < n; i++) {
        if (i)
            g3_curate_rep_raw(b, ", ");
        g3_curate_json_str(b, ids[i], strlen(ids[i]));
    }
    g3_curate_rep_raw(b, "]");
}

void g3_curate_shard_path(const char *dir, int index, const char *suffix, char *path,
                          size_t size)
{
    snprintf(path, size, "%s/shard-%05d.%s", dir, index, suffix);
}

/* The fixed start of a report: what it is, for which input and parameters.  A report that
 * starts with the same text and records the output's size describes a finished shard. */
static void g3_curate_report_head(g3_buf_t *b, const char *stage, const char *input,
                                  long long input_bytes, const char *params)
{
    char t[64];
    g3_curate_rep_raw(b, "{\"format\": \"" G3_CURATE_REPORT_FORMAT "\"");
    snprintf(t, sizeof(t), ",\n  \"version\": %d", G3_CURATE_REPORT_VERSION);
    g3_curate_rep_raw(b, t);
    g3_curate_rep_str(b, "stage", stage);
    g3_curate_rep_str(b, "input", input);
    g3_curate_rep_u64(b, "input_bytes", (uint64_t)input_bytes);
    g3_curate_rep_str(b, "params", params);
}

int g3_curate_report_ok(const char *report, const char *stage, const char *input,
                        const char *params, const char *output)
{
    struct stat in_sb, out_sb, rep_sb;
    g3_buf_t head = { 0 };
    char *text = NULL, *p;
    size_t len;
    int ok = 0;

    if (stat(report, &rep_sb) != 0 || stat(output, &out_sb) != 0)
        return 0;
    if (input && stat(input, &in_sb) != 0)
        return 0;
    g3_curate_report_head(&head, stage, input ? input : "", input ? (long long)in_sb.st_size : 0,
                          params);
    if (g3_read_file(report, "report", &text, &len) != G3_OK)
        goto done;
    if (len < head.len || memcmp(text, head.data, head.len) != 0)
        goto done;
    p = strstr(text, "\"output_bytes\": ");
    if (p && strtoll(p + 16, NULL, 10) == (long long)out_sb.st_size)
        ok = 1;
done:
    free(text);
    g3_buf_free(&head);
    return ok;
}

/* Write the report: head, the stage's fields, the output's size. */
static g3_status_t g3_curate_report_write(const char *path, const char *stage, const char *input,
                                          long long input_bytes, const char *params,
                                          const g3_buf_t *fields, const char *output)
{
    g3_buf_t b = { 0 };
    g3_curate_out_t o;
    struct stat sb;
    g3_status_t st;

    if (stat(output, &sb) != 0) {
        g3_error("gpt3d curate: the output '%s' vanished before its report was written: %s",
                 output, strerror(errno));
        return G3_ERR_IO;
    }
    g3_curate_report_head(&b, stage, input, input_bytes, params);
    if (fields->len)
        g3_buf_append(&b, fields->data, fields->len);
    g3_curate_rep_u64(&b, "output_bytes", (uint64_t)sb.st_size);
    g3_curate_rep_raw(&b, "\n}\n");
    if (!b.data) {
        g3_error("gpt3d curate: out of memory writing the report '%s'", path);
        return G3_ERR_NO_MEMORY;
    }
    if ((st = g3_curate_out_open(&o, path, "report")) != G3_OK) {
        g3_buf_free(&b);
        return st;
    }
    fwrite(b.data, 1, b.len, o.f);
    g3_buf_free(&b);
    return g3_curate_out_commit(&o);
}

g3_status_t g3_curate_each_shard(const g3_curate_io_t *io, const char *stage, const char *params,
                                 const char *suffix, g3_curate_shard_fn fn, void *ctx,
                                 g3_curate_counts_t *c)
{
    g3_curate_list_t list;
    char out_path[4096], rep_path[4096], failed[4096];
    g3_status_t st;
    double t0 = g3_clock_now();

    memset(c, 0, sizeof(*c));
    if ((st = g3_curate_list_read(io->shard_list, &list)) != G3_OK)
        return st;
    if (g3_mkdir_p(io->output_dir, 0777, failed, sizeof(failed)) != G3_OK) {
        g3_error("gpt3d curate: cannot create the output directory '%s' (at '%s'): %s",
                 io->output_dir, failed, strerror(errno));
        g3_curate_list_free(&list);
        return G3_ERR_IO;
    }
    for (int i = io->task_id; i < list.n; i += io->num_tasks) {
        const char *in = list.path[i];
        g3_curate_shard_path(io->output_dir, i, suffix, out_path, sizeof(out_path));
        g3_curate_shard_path(io->output_dir, i, "report.json", rep_path, sizeof(rep_path));
        if (!io->force && g3_curate_report_ok(rep_path, stage, in, params, out_path)) {
            g3_info("curate %s: shard %d ('%s') is done already (%s verifies); skipped",
                    stage, i, in, rep_path);
            c->shards_skipped++;
            continue;
        }
        /* Not done: a report left from another run must not vouch for what follows. */
        unlink(rep_path);
        struct stat sb;
        if (stat(in, &sb) != 0) {
            g3_error("gpt3d curate: shard list '%s' line %llu: shard '%s' does not exist",
                     io->shard_list, (unsigned long long)list.line[i], in);
            st = G3_ERR_NOT_FOUND;
            break;
        }
        if (sb.st_size == 0 && !io->allow_empty) {
            g3_error("gpt3d curate: shard list '%s' line %llu: shard '%s' is empty (0 bytes); remove it from the list or pass --allow-empty",
                     io->shard_list, (unsigned long long)list.line[i], in);
            st = G3_ERR_FORMAT;
            break;
        }
        g3_curate_reader_t r;
        g3_curate_out_t o;
        g3_buf_t fields = { 0 };
        uint64_t din = 0, dout = 0;
        g3_curate_shard_t sh = { in, i, io->text_key };
        if ((st = g3_curate_reader_open(&r, in, io->max_line_bytes)) != G3_OK)
            break;
        if ((st = g3_curate_out_open(&o, out_path, "output")) != G3_OK) {
            g3_curate_reader_close(&r);
            break;
        }
        st = fn(ctx, &sh, &r, o.f, &fields, &din, &dout);
        c->bytes_in += r.bytes;
        g3_curate_reader_close(&r);
        if (st == G3_OK)
            st = g3_curate_out_commit(&o);
        else
            g3_curate_out_abort(&o);
        if (st == G3_OK) {
            g3_curate_rep_u64(&fields, "docs_in", din);
            g3_curate_rep_u64(&fields, "docs_out", dout);
            st = g3_curate_report_write(rep_path, stage, in, (long long)sb.st_size, params,
                                        &fields, out_path);
            if (st != G3_OK)
                unlink(out_path);
        }
        g3_buf_free(&fields);
        if (st != G3_OK)
            break;
        c->shards_done++;
        c->docs_in += din;
        c->docs_out += dout;
    }
    c->seconds = g3_clock_now() - t0;
    g3_curate_list_free(&list);
    return st;
}
