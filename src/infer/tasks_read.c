/* gpt3d infer: reading the task files: one JSON object a line, the published formats of
 * HellaSwag, PiQA and WinoGrande converted as the lm-evaluation-harness converts them, every
 * problem named with its file and line (see tasks.h). */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/log.h"
#include "data/json.h"
#include "infer/tasks_internal.h"

/* ---- one line's JSON object --------------------------------------------------------------- */

/* The fields a line may carry: strings, a string array, an integer or a digit string. */
typedef struct {
    const char *name;
    int         type;      /* 's' string, 'a' array of strings, 'i' integer or "digits" */
    int         found;
    g3_buf_t    str;       /* 's', and 'i' given as a string                            */
    char      **arr;       /* 'a': (narr,) malloc'd strings                             */
    int         narr;
    long long   num;       /* 'i'                                                       */
} g3_task_field_t;

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

/* Parse the object in line[0..n) into the fields asked for (others skipped).
 * RET: G3_OK, or G3_ERR_FORMAT with *why (static) set. */
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
            st = g3_json_skip_value(&j);
        } else if (fd->type == 's' || (fd->type == 'i' && j.pos < n && line[j.pos] == '"')) {
            if (j.pos >= n || line[j.pos] != '"') {
                *why = "a field that must be a string is not";
                st = G3_ERR_FORMAT;
            } else {
                st = g3_json_string(&j, &fd->str);
                if (st == G3_OK && fd->type == 'i') {
                    char *end;
                    errno = 0;
                    fd->num = fd->str.data ? strtoll(fd->str.data, &end, 10) : 0;
                    if (!fd->str.data || errno || *end || end == fd->str.data) {
                        *why = "a field that must be an integer is not";
                        st = G3_ERR_FORMAT;
                    }
                }
            }
        } else if (fd->type == 'i') {
            st = g3_json_int(&j, &fd->num);
            if (st != G3_OK && !j.why)
                *why = "a field that must be an integer is not";
        } else {   /* 'a' */
            int afirst = 1;
            if (j.pos >= n || line[j.pos] != '[') {
                *why = "a field that must be an array of strings is not";
                st = G3_ERR_FORMAT;
            }
            j.pos++;
            while (st == G3_OK) {
                char *s = NULL, **grown;
                g3_json_skip_ws(&j);
                if (j.pos < n && line[j.pos] == ']' && afirst) {
                    j.pos++;
                    break;
                }
                if (!afirst) {
                    if (j.pos < n && line[j.pos] == ']') {
                        j.pos++;
                        break;
                    }
                    if (j.pos >= n || line[j.pos] != ',') {
                        *why = "an array is not closed";
                        st = G3_ERR_FORMAT;
                        break;
                    }
                    j.pos++;
                    g3_json_skip_ws(&j);
                }
                afirst = 0;
                if (j.pos >= n || line[j.pos] != '"') {
                    *why = "an array element that must be a string is not";
                    st = G3_ERR_FORMAT;
                    break;
                }
                st = g3_task_json_str(&j, &s);
                if (st != G3_OK)
                    break;
                grown = realloc(fd->arr, sizeof(char *) * (size_t)(fd->narr + 1));
                if (!grown) {
                    free(s);
                    st = G3_ERR_NO_MEMORY;
                    break;
                }
                fd->arr = grown;
                fd->arr[fd->narr++] = s;
            }
        }
        if (st != G3_OK)
            break;
        fd = fd && !fd->found ? fd : NULL;
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

void g3_task_items_free(g3_task_item_t *items, int64_t n)
{
    for (int64_t i = 0; items && i < n; i++) {
        for (int c = 0; c < items[i].nchoices; c++) {
            if (items[i].ctx && (c == 0 || items[i].partial))
                free(items[i].ctx[c]);
            if (items[i].cont && (c == 0 || !items[i].partial))
                free(items[i].cont[c]);
        }
        free(items[i].ctx);
        free(items[i].cont);
        free(items[i].delim);
    }
    free(items);
}

/* An item of n choices: one shared context (partial 0) or one per choice, the
 * continuations one per choice (partial 0) or shared.  The strings are taken over. */
static g3_status_t g3_task_item_make(g3_task_item_t *it, int n, int partial, int line)
{
    memset(it, 0, sizeof(*it));
    it->nchoices = n;
    it->partial = partial;
    it->line = line;
    it->ctx = calloc((size_t)n, sizeof(char *));
    it->cont = calloc((size_t)n, sizeof(char *));
    return it->ctx && it->cont ? G3_OK : G3_ERR_NO_MEMORY;
}

/* Python's str.strip() on s, in place. */
void g3_task_strip(char *s)
{
    size_t n = strlen(s), b = 0, e = 0, sp;
    while (b < n && (sp = g3_task_space_len(s + b, n - b)) > 0)
        b += sp;
    e = b;
    for (size_t p = b; p < n;) {
        sp = g3_task_space_len(s + p, n - p);
        p += sp ? sp : 1;
        if (!sp)
            e = p;
    }
    memmove(s, s + b, e - b);
    s[e - b] = '\0';
}

/* The harness's HellaSwag preprocess: strip; " [title]" -> ". "; drop each "[...]" (the
 * shortest, within a line); "  " -> " ".  RET: a malloc'd string, or NULL. */
static char *g3_task_hs_preprocess(const char *in)
{
    size_t n = strlen(in);
    char *a = malloc(2 * n + 1), *b = malloc(2 * n + 1);
    size_t o = 0;

    if (!a || !b) {
        free(a);
        free(b);
        return NULL;
    }
    memcpy(a, in, n + 1);
    g3_task_strip(a);
    n = strlen(a);
    for (size_t i = 0; i < n;) {   /* " [title]" -> ". " */
        if (strncmp(a + i, " [title]", 8) == 0) {
            memcpy(b + o, ". ", 2);
            o += 2;
            i += 8;
        } else {
            b[o++] = a[i++];
        }
    }
    b[o] = '\0';
    o = 0;
    for (size_t i = 0; b[i];) {    /* re.sub("\\[.*?\\]", ""): '.' stops at a newline */
        if (b[i] == '[') {
            size_t k = i + 1;
            while (b[k] && b[k] != ']' && b[k] != '\n')
                k++;
            if (b[k] == ']') {
                i = k + 1;
                continue;
            }
        }
        a[o++] = b[i++];
    }
    a[o] = '\0';
    o = 0;
    for (size_t i = 0; a[i];) {    /* "  " -> " ", non-overlapping */
        if (a[i] == ' ' && a[i + 1] == ' ') {
            b[o++] = ' ';
            i += 2;
        } else {
            b[o++] = a[i++];
        }
    }
    b[o] = '\0';
    free(a);
    return b;
}

/* Python's str.capitalize() for ASCII letters (other characters are left as they are). */
static void g3_task_capitalize(char *s)
{
    for (size_t i = 0; s[i]; i++)
        s[i] = (char)(i == 0 ? toupper((unsigned char)s[i]) : tolower((unsigned char)s[i]));
}

char *g3_task_concat(const char *a, const char *b, const char *c)
{
    size_t na = strlen(a), nb = strlen(b), nc = c ? strlen(c) : 0;
    char *s = malloc(na + nb + nc + 1);
    if (!s)
        return NULL;
    memcpy(s, a, na);
    memcpy(s + na, b, nb);
    if (c)
        memcpy(s + na + nb, c, nc);
    s[na + nb + nc] = '\0';
    return s;
}

/* The PiQA labels beside FILE: FILE with ".jsonl" replaced by "-labels.lst" (the published
 * naming: valid.jsonl, valid-labels.lst).  OUT: *labels_p (malloc'd), *n_p. */
static g3_status_t g3_task_piqa_labels(const char *path, int **labels_p, int64_t *n_p)
{
    size_t n = strlen(path), len = 0;
    char *lp, *data = NULL, *save = NULL, *tok;
    int *labels = NULL;
    int64_t k = 0;
    struct stat sb;
    g3_status_t st;

    lp = malloc(n + 16);
    if (!lp)
        return G3_ERR_NO_MEMORY;
    if (n > 6 && strcmp(path + n - 6, ".jsonl") == 0)
        snprintf(lp, n + 16, "%.*s-labels.lst", (int)(n - 6), path);
    else
        snprintf(lp, n + 16, "%s-labels.lst", path);
    if (stat(lp, &sb) != 0) {
        g3_error("piqa: --task-data %s has no \"label\" field, and its labels file %s cannot be read (%s): pass the published valid.jsonl with valid-labels.lst beside it",
                 path, lp, strerror(errno));
        free(lp);
        return G3_ERR_INVALID_ARG;
    }
    st = g3_read_file(lp, "PiQA labels file", &data, &len);
    if (st != G3_OK) {
        free(lp);
        return st == G3_ERR_NO_MEMORY ? st : G3_ERR_INVALID_ARG;
    }
    labels = malloc(sizeof(int) * (len / 2 + 1));
    for (tok = strtok_r(data, "\n", &save); labels && tok; tok = strtok_r(NULL, "\n", &save)) {
        char *end;
        long v;
        g3_task_strip(tok);
        if (!*tok)
            continue;
        v = strtol(tok, &end, 10);
        if (*end || (v != 0 && v != 1)) {
            g3_error("%s:%lld: '%s' is not a PiQA label (0 or 1)", lp, (long long)k + 1, tok);
            st = G3_ERR_INVALID_ARG;
            break;
        }
        labels[k++] = (int)v;
    }
    if (!labels)
        st = G3_ERR_NO_MEMORY;
    free(data);
    free(lp);
    if (st != G3_OK) {
        free(labels);
        return st;
    }
    *labels_p = labels;
    *n_p = k;
    return G3_OK;
}

/* The fields of each kind's line, in the order its item builder reads them (f[0], f[1], ...);
 * types as g3_task_field_t's. */
typedef struct {
    const char *name;
    int         type;
} g3_task_schema_t;

static const g3_task_schema_t g3_task_schema_mc[] = {
    { "context", 's' },      { "choices", 'a' },      { "label", 'i' },
    { "contexts", 'a' },     { "continuation", 's' }, { "target_delimiter", 's' },
    { NULL, 0 },
};
static const g3_task_schema_t g3_task_schema_hellaswag[] = {
    { "activity_label", 's' }, { "ctx_a", 's' }, { "ctx_b", 's' },
    { "endings", 'a' },        { "label", 'i' }, { NULL, 0 },
};
static const g3_task_schema_t g3_task_schema_piqa[] = {
    { "goal", 's' }, { "sol1", 's' }, { "sol2", 's' }, { "label", 'i' }, { NULL, 0 },
};
static const g3_task_schema_t g3_task_schema_winogrande[] = {
    { "sentence", 's' }, { "option1", 's' }, { "option2", 's' }, { "answer", 'i' }, { NULL, 0 },
};

/* The fields of a kind's line into f (7 at most).  RET: their count. */
static int g3_task_mc_fields(g3_task_kind_t kind, g3_task_field_t *f)
{
    const g3_task_schema_t *sc = kind == G3_TASK_MC          ? g3_task_schema_mc
                                 : kind == G3_TASK_HELLASWAG ? g3_task_schema_hellaswag
                                 : kind == G3_TASK_PIQA      ? g3_task_schema_piqa
                                                             : g3_task_schema_winogrande;
    int n;

    for (n = 0; sc[n].name; n++) {
        f[n].name = sc[n].name;
        f[n].type = sc[n].type;
    }
    return n;
}

/* The item of a generic multiple-choice line (its fields f, taken over where they become the
 * item's).  RET: G3_OK, G3_ERR_INVALID_ARG (logged), G3_ERR_NO_MEMORY (not logged). */
static g3_status_t g3_task_mc_item(g3_task_field_t *f, const char *path, int line,
                                   g3_task_item_t *it)
{
    int full = f[0].found && f[1].found, part = f[3].found && f[4].found, nchoices;
    g3_status_t st;

    if (full == part || (full && (f[3].found || f[4].found)) ||
        (part && (f[0].found || f[1].found))) {
        g3_error("%s:%d: a multiple-choice item has either \"context\" and \"choices\" or (partial scoring) \"contexts\" and \"continuation\", and \"label\"",
                 path, line);
        return G3_ERR_INVALID_ARG;
    }
    nchoices = full ? f[1].narr : f[3].narr;
    if (nchoices < 2) {
        g3_error("%s:%d: %d choice%s: a multiple-choice item needs at least 2", path, line,
                 nchoices, nchoices == 1 ? "" : "s");
        return G3_ERR_INVALID_ARG;
    }
    if (f[2].num < 0 || f[2].num >= nchoices) {
        g3_error("%s:%d: label %lld is out of range: the item has %d choices, labels 0 .. %d",
                 path, line, f[2].num, nchoices, nchoices - 1);
        return G3_ERR_INVALID_ARG;
    }
    st = g3_task_item_make(it, nchoices, part, line);
    if (st != G3_OK)
        return G3_ERR_NO_MEMORY;
    it->label = (int)f[2].num;
    if (f[5].found) {
        it->delim = f[5].str.data ? f[5].str.data : strdup("");
        f[5].str.data = NULL;
        if (!it->delim)
            return G3_ERR_NO_MEMORY;
    }
    if (full) {
        it->ctx[0] = f[0].str.data ? f[0].str.data : strdup("");
        f[0].str.data = NULL;
        for (int c = 0; c < nchoices; c++) {
            it->ctx[c] = it->ctx[0];
            it->cont[c] = f[1].arr[c];
            f[1].arr[c] = NULL;
        }
    } else {
        it->cont[0] = f[4].str.data ? f[4].str.data : strdup("");
        f[4].str.data = NULL;
        for (int c = 0; c < nchoices; c++) {
            it->cont[c] = it->cont[0];
            it->ctx[c] = f[3].arr[c];
            f[3].arr[c] = NULL;
        }
    }
    return G3_OK;
}

/* The item of a HellaSwag line.  RET: as g3_task_mc_item. */
static g3_status_t g3_task_hs_item(g3_task_field_t *f, const char *path, int line,
                                   g3_task_item_t *it)
{
    int nchoices = f[3].narr;
    char *cb, *q, *qp;

    if (nchoices < 2 || f[4].num < 0 || f[4].num >= nchoices) {
        g3_error("%s:%d: label %lld is out of range for %d endings (labels 0 .. %d)", path,
                 line, f[4].num, nchoices, nchoices - 1);
        return G3_ERR_INVALID_ARG;
    }
    if (g3_task_item_make(it, nchoices, 0, line) != G3_OK)
        return G3_ERR_NO_MEMORY;
    it->label = (int)f[4].num;
    cb = strdup(f[2].str.data ? f[2].str.data : "");
    if (!cb)
        return G3_ERR_NO_MEMORY;
    g3_task_capitalize(cb);
    /* query = preprocess(activity_label + ": " + ctx_a + " " + ctx_b.capitalize()) */
    q = g3_task_concat(f[0].str.data ? f[0].str.data : "", ": ",
                       f[1].str.data ? f[1].str.data : "");
    qp = q ? g3_task_concat(q, " ", cb) : NULL;
    free(q);
    free(cb);
    it->ctx[0] = qp ? g3_task_hs_preprocess(qp) : NULL;
    free(qp);
    if (!it->ctx[0])
        return G3_ERR_NO_MEMORY;
    for (int c = 0; c < nchoices; c++) {
        it->ctx[c] = it->ctx[0];
        it->cont[c] = g3_task_hs_preprocess(f[3].arr[c]);
        if (!it->cont[c])
            return G3_ERR_NO_MEMORY;
    }
    return G3_OK;
}

/* The item of a PiQA line; its label from the line, else the index-th of the labels file
 * (piqa_labels: (npiqa)).  RET: as g3_task_mc_item. */
static g3_status_t g3_task_piqa_item(g3_task_field_t *f, const char *path, int line,
                                     const int *piqa_labels, int64_t npiqa, int64_t index,
                                     g3_task_item_t *it)
{
    int label;

    if (f[3].found) {
        label = (int)f[3].num;
    } else if (index < npiqa) {
        label = piqa_labels[index];
    } else {
        g3_error("%s:%d: the labels file has only %lld labels: it does not belong to this file",
                 path, line, (long long)npiqa);
        return G3_ERR_INVALID_ARG;
    }
    if (label < 0 || label > 1) {
        g3_error("%s:%d: label %d is out of range: PiQA has 2 solutions, labels 0 and 1",
                 path, line, label);
        return G3_ERR_INVALID_ARG;
    }
    if (g3_task_item_make(it, 2, 0, line) != G3_OK)
        return G3_ERR_NO_MEMORY;
    it->label = label;
    /* "Question: {goal}\nAnswer:", the two solutions */
    it->ctx[0] = g3_task_concat("Question: ", f[0].str.data ? f[0].str.data : "",
                                "\nAnswer:");
    it->ctx[1] = it->ctx[0];
    it->cont[0] = f[1].str.data ? f[1].str.data : strdup("");
    it->cont[1] = f[2].str.data ? f[2].str.data : strdup("");
    f[1].str.data = f[2].str.data = NULL;
    if (!it->ctx[0] || !it->cont[0] || !it->cont[1])
        return G3_ERR_NO_MEMORY;
    return G3_OK;
}

/* The item of a WinoGrande line: the sentence's blank filled with each option, then the
 * rest.  RET: as g3_task_mc_item. */
static g3_status_t g3_task_wg_item(g3_task_field_t *f, const char *path, int line,
                                   g3_task_item_t *it)
{
    const char *s = f[0].str.data ? f[0].str.data : "", *blank = strchr(s, '_');

    if (!blank) {
        g3_error("%s:%d: the sentence has no '_' blank: not a WinoGrande item", path, line);
        return G3_ERR_INVALID_ARG;
    }
    if (f[3].num != 1 && f[3].num != 2) {
        g3_error("%s:%d: answer %lld is out of range: WinoGrande answers are \"1\" or \"2\"",
                 path, line, f[3].num);
        return G3_ERR_INVALID_ARG;
    }
    if (g3_task_item_make(it, 2, 1, line) != G3_OK)
        return G3_ERR_NO_MEMORY;
    it->label = (int)f[3].num - 1;
    for (int c = 0; c < 2; c++) {
        char *pre = strndup(s, (size_t)(blank - s));
        it->ctx[c] = pre ? g3_task_concat(pre, f[1 + c].str.data ? f[1 + c].str.data : "",
                                          NULL) : NULL;
        free(pre);
        if (!it->ctx[c])
            return G3_ERR_NO_MEMORY;
    }
    it->cont[0] = strdup(blank + 1);
    if (!it->cont[0])
        return G3_ERR_NO_MEMORY;
    g3_task_strip(it->cont[0]);
    it->cont[1] = it->cont[0];
    return G3_OK;
}

/* One line of a multiple-choice file (kind) into it.  RET: G3_OK, G3_ERR_INVALID_ARG
 * (logged naming path and line), G3_ERR_NO_MEMORY. */
static g3_status_t g3_task_mc_line(g3_task_kind_t kind, const char *path, int line,
                                   const char *text, size_t n, const int *piqa_labels,
                                   int64_t npiqa, int64_t index, g3_task_item_t *it)
{
    g3_task_field_t f[7];
    const char *why = NULL;
    const char *kname = kind == G3_TASK_MC ? "multiple-choice" : g3_task_kind_name(kind);
    int nf;
    g3_status_t st;

    memset(f, 0, sizeof(f));
    nf = g3_task_mc_fields(kind, f);
    st = g3_task_parse_line(text, n, f, nf, &why);
    if (st == G3_ERR_NO_MEMORY)
        goto err_no_memory;
    if (st != G3_OK) {
        g3_error("%s:%d: %s; a %s task file holds one JSON object a line (docs/evaluation.md)",
                 path, line, why, kname);
        goto err_bad;
    }
    for (int i = 0; i < nf; i++) {
        int optional = (kind == G3_TASK_MC && i != 2) ||
                       (kind == G3_TASK_PIQA && i == 3 && piqa_labels);
        if (!f[i].found && !optional) {
            g3_error("%s:%d: no \"%s\" field: a %s item needs it (docs/evaluation.md)", path,
                     line, f[i].name, kname);
            goto err_bad;
        }
    }
    if (kind == G3_TASK_MC)
        st = g3_task_mc_item(f, path, line, it);
    else if (kind == G3_TASK_HELLASWAG)
        st = g3_task_hs_item(f, path, line, it);
    else if (kind == G3_TASK_PIQA)
        st = g3_task_piqa_item(f, path, line, piqa_labels, npiqa, index, it);
    else
        st = g3_task_wg_item(f, path, line, it);
    if (st == G3_ERR_NO_MEMORY)
        goto err_no_memory;
    if (st != G3_OK)
        goto err_bad;
    for (int c = 0; c < it->nchoices; c++)
        if (!it->cont[c][0]) {
            g3_error("%s:%d: %s %d is empty: every choice needs text to score", path, line,
                     it->partial ? "the continuation of choice" : "choice", c);
            goto err_bad;
        }
    g3_task_fields_free(f, nf);
    return G3_OK;

err_no_memory:
    g3_error("%s:%d: out of memory reading the item", path, line);
    g3_task_fields_free(f, nf);
    return G3_ERR_NO_MEMORY;
err_bad:
    g3_task_fields_free(f, nf);
    return G3_ERR_INVALID_ARG;
}

/* A LAMBADA line {"text": ...}: the text needs a word.  RET: as g3_task_mc_line. */
static g3_status_t g3_task_lambada_line(const char *path, int line, const char *text,
                                        size_t n, g3_task_item_t *it)
{
    g3_task_field_t f[1];
    const char *why = NULL;
    size_t len, p = 0, sp;
    int word = 0;
    g3_status_t st;

    memset(f, 0, sizeof(f));
    f[0].name = "text";
    f[0].type = 's';
    st = g3_task_parse_line(text, n, f, 1, &why);
    if (st == G3_OK && !f[0].found) {
        why = "no \"text\" field";
        st = G3_ERR_FORMAT;
    }
    if (st != G3_OK) {
        g3_error("%s:%d: %s; a lambada file holds one {\"text\": ...} object a line, as OpenAI's lambada_test.jsonl",
                 path, line, why ? why : "out of memory");
        g3_task_fields_free(f, 1);
        return st == G3_ERR_NO_MEMORY ? st : G3_ERR_INVALID_ARG;
    }
    len = f[0].str.len;
    while (p < len && !word) {
        sp = f[0].str.data ? g3_task_space_len(f[0].str.data + p, len - p) : 0;
        word = sp == 0;
        p += sp ? sp : 1;
    }
    if (!word) {
        g3_error("%s:%d: the text has no word to predict", path, line);
        g3_task_fields_free(f, 1);
        return G3_ERR_INVALID_ARG;
    }
    st = g3_task_item_make(it, 1, 0, line);
    if (st != G3_OK) {
        g3_task_fields_free(f, 1);
        return st;
    }
    it->ctx[0] = f[0].str.data;
    it->cont[0] = NULL;
    f[0].str.data = NULL;
    g3_task_fields_free(f, 1);
    return G3_OK;
}

g3_status_t g3_task_read_items(g3_task_kind_t kind, const char *path, g3_task_item_t **items_p,
                               int64_t *n_p)
{
    char *data = NULL;
    size_t len = 0;
    g3_task_item_t *items = NULL;
    int64_t n = 0, cap = 0, npiqa = 0;
    int *piqa = NULL, line = 0;
    g3_status_t st;

    st = g3_read_file(path, "task file", &data, &len);
    if (st != G3_OK)
        return st == G3_ERR_NO_MEMORY ? st : G3_ERR_INVALID_ARG;
    if (kind == G3_TASK_PIQA && !strstr(data, "\"label\"")) {
        st = g3_task_piqa_labels(path, &piqa, &npiqa);
        if (st != G3_OK)
            goto out;
    }
    for (size_t p = 0; p < len;) {
        char *nl = memchr(data + p, '\n', len - p);
        size_t e = nl ? (size_t)(nl - data) : len, q = p;
        line++;
        while (q < e && (data[q] == ' ' || data[q] == '\t' || data[q] == '\r'))
            q++;
        if (q < e) {
            if (g3_utf8_validate(data + p, e - p) != e - p) {
                g3_error("%s:%d: invalid UTF-8 at byte %zu of the line: task files are UTF-8 JSON lines",
                         path, line, g3_utf8_validate(data + p, e - p) + 1);
                st = G3_ERR_INVALID_ARG;
                goto out;
            }
            if (n == cap) {
                g3_task_item_t *g;
                cap = cap ? 2 * cap : 256;
                g = realloc(items, sizeof(*items) * (size_t)cap);
                if (!g) {
                    st = G3_ERR_NO_MEMORY;
                    goto out;
                }
                items = g;
            }
            st = kind == G3_TASK_LAMBADA
                     ? g3_task_lambada_line(path, line, data + p, e - p, &items[n])
                     : g3_task_mc_line(kind, path, line, data + p, e - p, piqa, npiqa, n,
                                       &items[n]);
            if (st != G3_OK) {
                g3_task_items_free(items, n);
                items = NULL;
                n = 0;
                goto out;
            }
            n++;
        }
        p = e + 1;
    }
    if (piqa && npiqa != n) {
        g3_error("%s has %lld items but its labels file %lld labels: pass the labels file of this split",
                 path, (long long)n, (long long)npiqa);
        st = G3_ERR_INVALID_ARG;
        goto out;
    }
    if (n == 0) {
        g3_error("%s holds no items: pass a %s file (docs/evaluation.md)", path,
                 g3_task_kind_name(kind));
        st = G3_ERR_INVALID_ARG;
        goto out;
    }
out:
    free(data);
    free(piqa);
    if (st != G3_OK) {
        g3_task_items_free(items, n);
        return st;
    }
    *items_p = items;
    *n_p = n;
    return G3_OK;
}

g3_status_t g3_task_convert(g3_task_kind_t kind, const char *in, const char *out)
{
    g3_task_item_t *items = NULL;
    int64_t n = 0;
    FILE *f;
    int ok;
    g3_status_t st;

    if (kind == G3_TASK_WIKITEXT || kind == G3_TASK_LAMBADA) {
        g3_error("--convert-to writes multiple-choice items: %s is not a multiple-choice task",
                 g3_task_kind_name(kind));
        return G3_ERR_INVALID_ARG;
    }
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
