/* gpt3d infer: reading the task files: one JSON object a line, each line's fields as its kind's
 * schema names them (tasks_internal.h), the item made by the kind's item builder; every
 * problem named with its file and line (see tasks.h).  Which kind a file is comes in as its
 * row: nothing here looks at the kind's name. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "data/json.h"
#include "infer/tasks_internal.h"

/* ---- one line's JSON object --------------------------------------------------------------- */

static void g3_task_fields_free(g3_task_field_t *f, int n)
{
    for (int i = 0; i < n; i++) {
        g3_buf_free(&f[i].str);
        for (int k = 0; k < f[i].narr; k++)
            free(f[i].arr[k]);
        free(f[i].arr);
        f[i].arr = NULL;
        f[i].narr = 0;
        f[i].found = 0;
    }
}

/* A string value into a malloc'd copy.  RET: as g3_json_string, G3_ERR_NO_MEMORY. */
static g3_status_t g3_task_json_str(g3_json_t *j, char **out)
{
    g3_buf_t b = { NULL, 0, 0 };
    g3_status_t st = g3_json_string(j, &b);

    if (st == G3_OK && !b.data) {   /* "" */
        b.data = strdup("");
        st = b.data ? G3_OK : G3_ERR_NO_MEMORY;
    }
    if (st != G3_OK) {
        g3_buf_free(&b);
        return st;
    }
    *out = b.data;
    return G3_OK;
}

/* A string field (or an integer given as "digits") at j's position into fd.
 * RET: G3_OK, or G3_ERR_FORMAT with *why set, G3_ERR_NO_MEMORY. */
static g3_status_t g3_task_parse_string(g3_json_t *j, g3_task_field_t *fd, const char **why)
{
    g3_status_t st;
    char *end;

    if (j->pos >= j->n || j->s[j->pos] != '"') {
        *why = "a field that must be a string is not";
        return G3_ERR_FORMAT;
    }
    st = g3_json_string(j, &fd->str);
    if (st != G3_OK || fd->type != 'i')
        return st;
    errno = 0;
    fd->num = fd->str.data ? strtoll(fd->str.data, &end, 10) : 0;
    if (!fd->str.data || errno || *end || end == fd->str.data) {
        *why = "a field that must be an integer is not";
        return G3_ERR_FORMAT;
    }
    return G3_OK;
}

/* An array of strings at j's position into fd.  RET: as g3_task_parse_string. */
static g3_status_t g3_task_parse_array(g3_json_t *j, g3_task_field_t *fd, const char **why)
{
    const char *line = j->s;
    size_t n = j->n;
    int first = 1;
    g3_status_t st = G3_OK;

    if (j->pos >= n || line[j->pos] != '[') {
        *why = "a field that must be an array of strings is not";
        return G3_ERR_FORMAT;
    }
    j->pos++;
    for (;;) {
        char *s = NULL, **grown;
        g3_json_skip_ws(j);
        if (j->pos < n && line[j->pos] == ']') {   /* empty, or after an element */
            j->pos++;
            return G3_OK;
        }
        if (!first) {
            if (j->pos >= n || line[j->pos] != ',') {
                *why = "an array is not closed";
                return G3_ERR_FORMAT;
            }
            j->pos++;
            g3_json_skip_ws(j);
        }
        first = 0;
        if (j->pos >= n || line[j->pos] != '"') {
            *why = "an array element that must be a string is not";
            return G3_ERR_FORMAT;
        }
        st = g3_task_json_str(j, &s);
        if (st != G3_OK)
            return st;
        grown = realloc(fd->arr, sizeof(char *) * (size_t)(fd->narr + 1));
        if (!grown) {
            free(s);
            return G3_ERR_NO_MEMORY;
        }
        fd->arr = grown;
        fd->arr[fd->narr++] = s;
    }
}

/* Parse the object in line[0..n) into the fields asked for (others skipped).
 * RET: G3_OK, or G3_ERR_FORMAT with *why (static) set, G3_ERR_NO_MEMORY. */
static g3_status_t g3_task_parse_line(const char *line, size_t n, g3_task_field_t *f, int nf,
                                      const char **why)
{
    g3_json_t j = { line, n, 0, NULL, 0 };
    g3_buf_t key = { NULL, 0, 0 };
    int first = 1;
    g3_status_t st;

    *why = NULL;
    g3_json_skip_ws(&j);
    if (j.pos >= n || line[j.pos] != '{') {
        *why = "not a JSON object";
        return G3_ERR_FORMAT;
    }
    while ((st = g3_json_object_next(&j, &first, &key)) == G3_OK) {
        g3_task_field_t *fd = NULL;
        for (int i = 0; i < nf; i++)
            if (key.data && strcmp(key.data, f[i].name) == 0)
                fd = &f[i];
        g3_json_skip_ws(&j);
        if (!fd || fd->found) {
            fd = NULL;
            st = g3_json_skip_value(&j);
        } else if (fd->type == 's' || (fd->type == 'i' && j.pos < n && line[j.pos] == '"')) {
            st = g3_task_parse_string(&j, fd, why);
        } else if (fd->type == 'i') {
            st = g3_json_int(&j, &fd->num);
            if (st != G3_OK && !j.why)
                *why = "a field that must be an integer is not";
        } else {
            st = g3_task_parse_array(&j, fd, why);
        }
        if (st != G3_OK)
            break;
        if (fd)
            fd->found = 1;
    }
    g3_buf_free(&key);
    if (st == G3_ERR_NOT_FOUND) {   /* the closing brace */
        g3_json_skip_ws(&j);
        if (j.pos < n) {
            *why = "text after the JSON object";
            return G3_ERR_FORMAT;
        }
        return G3_OK;
    }
    if (!*why)
        *why = j.why ? j.why : "malformed JSON";
    return st == G3_ERR_NO_MEMORY ? st : G3_ERR_FORMAT;
}

/* ---- items ----------------------------------------------------------------------------------- */

/* Free what item it holds. */
static void g3_task_item_clear(g3_task_item_t *it)
{
    for (int c = 0; c < it->nchoices; c++) {
        if (it->ctx && (c == 0 || it->partial))
            free(it->ctx[c]);
        if (it->cont && (c == 0 || !it->partial))
            free(it->cont[c]);
    }
    free(it->ctx);
    free(it->cont);
    free(it->delim);
    memset(it, 0, sizeof(*it));
}

void g3_task_items_free(g3_task_item_t *items, int64_t n)
{
    for (int64_t i = 0; items && i < n; i++)
        g3_task_item_clear(&items[i]);
    free(items);
}

g3_status_t g3_task_item_make(g3_task_item_t *it, int n, int partial, int line)
{
    memset(it, 0, sizeof(*it));
    it->nchoices = n;
    it->partial = partial;
    it->line = line;
    it->ctx = calloc((size_t)n, sizeof(char *));
    it->cont = calloc((size_t)n, sizeof(char *));
    return it->ctx && it->cont ? G3_OK : G3_ERR_NO_MEMORY;
}

void g3_task_line_error(const g3_task_line_t *l, const char *why)
{
    if (l->kind->format)
        g3_error("%s:%d: %s; %s", l->path, l->line, why, l->kind->format);
    else
        g3_error("%s:%d: %s; a %s task file holds one JSON object a line (docs/evaluation.md)",
                 l->path, l->line, why, l->kind->what ? l->kind->what : l->kind->name);
}

/* One line of l's kind into it: its fields, the ones the kind needs there, the item, every
 * choice with text.  RET: G3_OK, G3_ERR_INVALID_ARG (logged naming path and line),
 * G3_ERR_NO_MEMORY. */
static g3_status_t g3_task_read_line(const g3_task_line_t *l, const char *text, size_t n,
                                     g3_task_item_t *it)
{
    const g3_task_kind_info_t *k = l->kind;
    g3_task_field_t f[G3_TASK_MAX_FIELDS];
    const char *why = NULL;
    int nf = 0;
    g3_status_t st;

    memset(f, 0, sizeof(f));
    for (; k->fields[nf].name && nf < G3_TASK_MAX_FIELDS; nf++) {
        f[nf].name = k->fields[nf].name;
        f[nf].type = k->fields[nf].type;
    }
    st = g3_task_parse_line(text, n, f, nf, &why);
    if (st == G3_ERR_NO_MEMORY)
        goto err_no_memory;
    if (st != G3_OK) {
        g3_task_line_error(l, why);
        goto err_bad;
    }
    for (int i = 0; i < nf; i++) {
        int need = k->fields[i].need;
        if (!f[i].found && (need == G3_TASK_FIELD_NEEDED ||
                            (need == G3_TASK_FIELD_UNLESS_LABELS && !l->labels))) {
            g3_error("%s:%d: no \"%s\" field: a %s item needs it (docs/evaluation.md)", l->path,
                     l->line, f[i].name, k->what ? k->what : k->name);
            goto err_bad;
        }
    }
    st = k->item(f, l, it);
    if (st == G3_ERR_NO_MEMORY)
        goto err_no_memory;
    if (st != G3_OK)
        goto err_bad;
    for (int c = 0; c < it->nchoices; c++)
        if (it->cont[c] && !it->cont[c][0]) {   /* (a text scored at its end has none) */
            g3_error("%s:%d: %s %d is empty: every choice needs text to score", l->path,
                     l->line, it->partial ? "the continuation of choice" : "choice", c);
            goto err_bad;
        }
    g3_task_fields_free(f, nf);
    return G3_OK;

err_no_memory:
    g3_error("%s:%d: out of memory reading the item", l->path, l->line);
    g3_task_fields_free(f, nf);
    return G3_ERR_NO_MEMORY;
err_bad:
    g3_task_fields_free(f, nf);
    return G3_ERR_INVALID_ARG;
}

/* The items of the lines of data[0..len) (l: the file; its line and index set here).
 * OUT: *items_p, *n_p (also after an error: what was read).  RET: as g3_task_read_line. */
static g3_status_t g3_task_read_lines(g3_task_line_t *l, const char *data, size_t len,
                                      g3_task_item_t **items_p, int64_t *n_p)
{
    int64_t cap = 0;
    g3_status_t st = G3_OK;

    for (size_t p = 0; p < len && st == G3_OK;) {
        const char *nl = memchr(data + p, '\n', len - p);
        size_t e = nl ? (size_t)(nl - data) : len, q = p;
        l->line++;
        while (q < e && (data[q] == ' ' || data[q] == '\t' || data[q] == '\r'))
            q++;
        if (q < e && g3_utf8_validate(data + p, e - p) != e - p) {
            g3_error("%s:%d: invalid UTF-8 at byte %zu of the line: task files are UTF-8 JSON lines",
                     l->path, l->line, g3_utf8_validate(data + p, e - p) + 1);
            return G3_ERR_INVALID_ARG;
        }
        if (q < e && *n_p == cap) {
            g3_task_item_t *g;
            cap = cap ? 2 * cap : 256;
            g = realloc(*items_p, sizeof(*g) * (size_t)cap);
            if (!g)
                return G3_ERR_NO_MEMORY;
            *items_p = g;
        }
        if (q < e) {
            g3_task_item_t *it = &(*items_p)[*n_p];
            memset(it, 0, sizeof(*it));
            l->index = *n_p;
            st = g3_task_read_line(l, data + p, e - p, it);
            if (st == G3_OK)
                ++*n_p;
            else
                g3_task_item_clear(it);   /* what the builder made of it */
        }
        p = e + 1;
    }
    return st;
}

g3_status_t g3_task_read_items(const g3_task_kind_info_t *kind, const char *path,
                               g3_task_item_t **items_p, int64_t *n_p)
{
    g3_task_line_t l;
    char *data = NULL;
    size_t len = 0;
    g3_task_item_t *items = NULL;
    int64_t n = 0;
    int *labels = NULL;
    g3_status_t st;

    memset(&l, 0, sizeof(l));
    l.kind = kind;
    l.path = path;
    st = g3_read_file(path, "task file", &data, &len);
    if (st != G3_OK)
        return st == G3_ERR_NO_MEMORY ? st : G3_ERR_INVALID_ARG;
    if (kind->labels)
        st = kind->labels(path, data, &labels, &l.nlabels);
    l.labels = labels;
    if (st == G3_OK)
        st = g3_task_read_lines(&l, data, len, &items, &n);
    if (st == G3_OK && labels && l.nlabels != n) {
        g3_error("%s has %lld items but its labels file %lld labels: pass the labels file of this split",
                 path, (long long)n, (long long)l.nlabels);
        st = G3_ERR_INVALID_ARG;
    }
    if (st == G3_OK && n == 0) {
        g3_error("%s holds no items: pass a %s file (docs/evaluation.md)", path, kind->name);
        st = G3_ERR_INVALID_ARG;
    }
    free(data);
    free(labels);
    if (st != G3_OK) {
        g3_task_items_free(items, n);
        return st;
    }
    *items_p = items;
    *n_p = n;
    return G3_OK;
}

g3_status_t g3_task_write_choices(const g3_task_kind_info_t *kind, const char *in,
                                  const char *out)
{
    g3_task_item_t *items = NULL;
    int64_t n = 0;
    FILE *f;
    int ok;
    g3_status_t st;

    st = g3_task_read_items(kind, in, &items, &n);
    if (st != G3_OK)
        return st;
    f = fopen(out, "w");
    ok = f != NULL;
    for (int64_t i = 0; ok && i < n; i++) {
        const g3_task_item_t *it = &items[i];
        fputs(it->partial ? "{\"contexts\":[" : "{\"context\":", f);
        for (int c = 0; c < (it->partial ? it->nchoices : 1); c++) {
            fputs(c ? "," : "", f);
            g3_json_write_string(f, it->ctx[c]);
        }
        fputs(it->partial ? "],\"continuation\":" : ",\"choices\":[", f);
        for (int c = 0; c < (it->partial ? 1 : it->nchoices); c++) {
            fputs(c ? "," : "", f);
            g3_json_write_string(f, it->cont[c]);
        }
        fprintf(f, "%s,\"label\":%d", it->partial ? "" : "]", it->label);
        if (it->delim) {
            fputs(",\"target_delimiter\":", f);
            g3_json_write_string(f, it->delim);
        }
        fputs("}\n", f);
        ok = !ferror(f);
    }
    if (f && fclose(f) != 0)
        ok = 0;
    g3_task_items_free(items, n);
    if (!ok) {
        g3_error("could not write --convert-to %s: %s", out, strerror(errno));
        return G3_ERR_IO;
    }
    return G3_OK;
}
