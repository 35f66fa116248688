/* gpt3d metrics: the records of a metrics file through the schema (query.h). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "metrics/events.h"
#include "metrics/query.h"

/* Every JSON field name of kind (-1: of every event) for a message, ", "-separated. */
static void g3_ev_query_names(int kind, char *buf, size_t size)
{
    size_t n = 0;

    buf[0] = '\0';
    for (int f = 0; f < G3_EVF_COUNT && n < size; f++) {
        const g3_ev_field_t *fd = &g3_ev_fields[f];
        int dup = 0;
        if ((kind >= 0 && (int)fd->kind != kind) || (fd->flags & G3_EV_F_TBONLY) ||
            !g3_ev_kinds[fd->kind].jsonl)
            continue;
        for (int g = 0; g < f && kind < 0 && !dup; g++)
            dup = !(g3_ev_fields[g].flags & G3_EV_F_TBONLY) &&
                  g3_ev_kinds[g3_ev_fields[g].kind].jsonl && !strcmp(g3_ev_fields[g].key, fd->key);
        if (!dup)
            n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? ", " : "", fd->key);
    }
}

/* The field keyed key (without ".member") of kind, written to the metrics file, or -1. */
static int g3_ev_query_field(int kind, const char *key, size_t len)
{
    for (int f = 0; f < G3_EVF_COUNT; f++) {
        const g3_ev_field_t *fd = &g3_ev_fields[f];
        if ((int)fd->kind == kind && !(fd->flags & G3_EV_F_TBONLY) && strlen(fd->key) == len &&
            !strncmp(fd->key, key, len))
            return f;
    }
    return -1;
}

/* Is name ("key" or "key.member") a field of the query's event (of some event when it
 * has none), with a member only of an object?  RET: G3_ERR_USAGE, logged (what: "--fields"). */
static g3_status_t g3_ev_query_check(const g3_ev_query_t *q, const char *name, const char *what)
{
    const char *dot = strchr(name, '.');
    size_t len = dot ? (size_t)(dot - name) : strlen(name);
    int found = 0, object = 0;
    char names[4096];

    if (!strcmp(name, "event"))
        return G3_OK;
    for (int k = 0; k < G3_EV_NKINDS; k++) {
        int f = (q->kind < 0 || q->kind == k) && g3_ev_kinds[k].jsonl
                    ? g3_ev_query_field(k, name, len)
                    : -1;
        if (f >= 0) {
            g3_ev_type_t t = g3_ev_fields[f].type;
            found = 1;
            object |= t == G3_EV_OBJ || t == G3_EV_MAP || t == G3_EV_PAIRS;
        }
    }
    if (found && (!dot || object))
        return G3_OK;
    g3_ev_query_names(q->kind, names, sizeof(names));
    if (found)
        g3_error("gpt3d metrics: %s %s: %.*s is not an object, it has no members; drop '%s'", what,
                 name, (int)len, name, dot);
    else if (q->kind >= 0)
        g3_error("gpt3d metrics: %s %s: the %s event has no field %.*s; its fields are: event, %s",
                 what, name, g3_ev_kinds[q->kind].name, (int)len, name, names);
    else
        g3_error("gpt3d metrics: %s %s: no event has a field %.*s; the fields are: event, %s", what,
                 name, (int)len, name, names);
    return G3_ERR_USAGE;
}

/* Set q's event from its name.  RET: G3_ERR_USAGE (logged, naming the events). */
static g3_status_t g3_ev_query_event(g3_ev_query_t *q, const char *event)
{
    char names[512];
    size_t n = 0;

    q->kind = event ? g3_ev_kind_find(event) : -1;
    if (!event || (q->kind >= 0 && g3_ev_kinds[q->kind].jsonl))
        return G3_OK;
    for (int k = 0; k < G3_EV_NKINDS; k++)
        if (g3_ev_kinds[k].jsonl)
            n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", n ? ", " : "",
                                  g3_ev_kinds[k].name);
    if (q->kind >= 0)
        g3_error(
            "gpt3d metrics: --event %s: that event is written to TensorBoard only, not to the metrics file; the metrics file's events are: %s",
            event, names);
    else
        g3_error("gpt3d metrics: --event %s: no such event; the events are: %s", event, names);
    return G3_ERR_USAGE;
}

g3_status_t g3_ev_query_init(g3_ev_query_t *q, const char *event, const char *fields,
                             char *const *where, int nwhere, int last)
{
    g3_status_t st;

    memset(q, 0, sizeof(*q));
    q->last = last;
    st = g3_ev_query_event(q, event);
    for (const char *p = fields; st == G3_OK && p && *p;) {
        size_t len = strcspn(p, ",");
        if (q->nfields == G3_EV_QUERY_MAX || len == 0) {
            g3_error("gpt3d metrics: --fields %s: %s", fields,
                     len ? "more than 32 fields"
                         : "an empty field name; separate the names with single commas");
            return G3_ERR_USAGE;
        }
        q->fields[q->nfields] = strndup(p, len);
        if (!q->fields[q->nfields])
            return G3_ERR_NO_MEMORY;
        st = g3_ev_query_check(q, q->fields[q->nfields++], "--fields");
        p += len + (p[len] == ',');
    }
    for (int i = 0; st == G3_OK && i < nwhere; i++) {
        const char *eq = strchr(where[i], '=');
        if (!eq || eq == where[i] || q->nwhere == G3_EV_QUERY_MAX) {
            g3_error(
                "gpt3d metrics: --where %s: %s", where[i],
                eq && eq != where[i]
                    ? "more than 32 conditions"
                    : "not KEY=VALUE (a field of the event, the value as printed); put the metrics file before --where");
            return G3_ERR_USAGE;
        }
        q->where_key[q->nwhere] = strndup(where[i], (size_t)(eq - where[i]));
        q->where_val[q->nwhere] = strdup(eq + 1);
        if (!q->where_key[q->nwhere] || !q->where_val[q->nwhere++])
            return G3_ERR_NO_MEMORY;
        st = g3_ev_query_check(q, q->where_key[q->nwhere - 1], "--where");
    }
    return st;
}

void g3_ev_query_free(g3_ev_query_t *q)
{
    for (int i = 0; i < q->nfields; i++)
        free(q->fields[i]);
    for (int i = 0; i < q->nwhere; i++) {
        free(q->where_key[i]);
        free(q->where_val[i]);
    }
    memset(q, 0, sizeof(*q));
}

/* ---- running a query ------------------------------------------------------------------- */

typedef struct {
    const g3_ev_query_t *q;
    const char *path;
    FILE *out;
    char *last; /* --last: the last match's output line (malloc'd) */
} g3_ev_query_run_t;

/* The text of name ("event", "key" or "key.member") in record p, written to f. */
static g3_status_t g3_ev_query_text(const g3_ev_parsed_t *p, const char *name, FILE *f)
{
    const char *dot = strchr(name, '.');
    size_t len = dot ? (size_t)(dot - name) : strlen(name);
    int fid;

    if (!strcmp(name, "event")) {
        fwrite(p->event + 1, 1, p->event_len - 2, f);
        return G3_OK;
    }
    fid = p->kind >= 0 ? g3_ev_query_field(p->kind, name, len) : -1;
    if (fid < 0)
        return G3_OK; /* not a field of this event: empty */
    return g3_ev_parsed_text(p, (g3_ev_field_id_t)fid, dot ? dot + 1 : NULL, f);
}

/* Into *text_p (malloc'd): name's text in p.  RET: G3_ERR_FORMAT, G3_ERR_NO_MEMORY. */
static g3_status_t g3_ev_query_string(const g3_ev_parsed_t *p, const char *name, char **text_p)
{
    size_t n = 0;
    FILE *f = open_memstream(text_p, &n);
    g3_status_t st;

    if (!f)
        return G3_ERR_NO_MEMORY;
    st = g3_ev_query_text(p, name, f);
    if (fclose(f) != 0)
        st = G3_ERR_NO_MEMORY;
    return st;
}

/* Does p match the query's event and conditions?  RET: G3_ERR_FORMAT, G3_ERR_NO_MEMORY. */
static g3_status_t g3_ev_query_match(const g3_ev_query_t *q, const g3_ev_parsed_t *p, int *yes)
{
    *yes = q->kind < 0 || p->kind == q->kind;
    for (int i = 0; i < q->nwhere && *yes; i++) {
        char *text = NULL;
        g3_status_t st = g3_ev_query_string(p, q->where_key[i], &text);
        *yes = st == G3_OK && !strcmp(text, q->where_val[i]);
        free(text);
        if (st != G3_OK)
            return st;
    }
    return G3_OK;
}

/* The output line of a matching record: its fields tab-separated, or the line itself. */
static g3_status_t g3_ev_query_line(const g3_ev_query_t *q, const g3_ev_parsed_t *p,
                                    const char *line, size_t len, FILE *f)
{
    g3_status_t st = G3_OK;

    if (q->nfields == 0)
        fwrite(line, 1, len, f);
    for (int i = 0; i < q->nfields && st == G3_OK; i++) {
        if (i)
            fputc('\t', f);
        st = g3_ev_query_text(p, q->fields[i], f);
    }
    fputc('\n', f);
    return st;
}

static g3_status_t g3_ev_query_take(const g3_ev_parsed_t *p, const char *line, size_t len,
                                    size_t lineno, void *arg)
{
    g3_ev_query_run_t *r = arg;
    char *text = NULL;
    size_t n = 0;
    int yes;
    FILE *f;
    g3_status_t st = g3_ev_query_match(r->q, p, &yes);

    if (st == G3_OK && yes) {
        f = r->q->last ? open_memstream(&text, &n) : r->out;
        if (!f)
            return G3_ERR_NO_MEMORY;
        st = g3_ev_query_line(r->q, p, line, len, f);
        if (r->q->last && fclose(f) != 0)
            st = G3_ERR_NO_MEMORY;
        if (r->q->last && st == G3_OK) {
            free(r->last);
            r->last = text;
            text = NULL;
        }
        free(text);
    }
    if (st == G3_ERR_FORMAT)
        g3_error(
            "metrics file %s, line %zu: a field's value is not valid JSON; pass a metrics.jsonl written by gpt3d train",
            r->path, lineno);
    else if (st == G3_ERR_NO_MEMORY)
        g3_error("gpt3d metrics: out of memory at line %zu of %s", lineno, r->path);
    return st;
}

g3_status_t g3_ev_query_run(const g3_ev_query_t *q, const char *path, FILE *out)
{
    g3_ev_query_run_t r = { q, path, out, NULL };
    g3_status_t st = g3_ev_file_each(path, g3_ev_query_take, &r);

    if (st == G3_OK && r.last)
        fputs(r.last, out);
    free(r.last);
    return st;
}
