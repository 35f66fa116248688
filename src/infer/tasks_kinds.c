/* gpt3d infer: the table of task kinds (see tasks_internal.h) and what reads it: the --task
 * words, the lists of kinds in help and messages, g3_task_load and g3_task_convert, and the
 * --eval-tasks SPEC.  Each kind's reader sits above its row: the fields of a line of its
 * published file and the item builder that makes a prompt and its choices of them, as the
 * lm-evaluation-harness does (HellaSwag, PiQA and WinoGrande converted as the harness
 * converts them).
 *
 * Adding a kind: its schema and item builder here, one row in g3_task_kinds[] naming them;
 * a multiple-choice kind takes the rest from G3_TASK_MULTIPLE_CHOICE (its choices scored as
 * the harness's requests, acc and acc_norm); another kind names its row builder (tasks.c) and
 * its metrics with their scorer (tasks_run.c).  docs/evaluation.md then describes its file. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/log.h"
#include "infer/tasks_internal.h"

/* ---- the readers of the published formats ------------------------------------------------- */

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

/* The fields of a PiQA line, in the order g3_task_item_piqa reads them. */
static const g3_task_schema_t g3_task_schema_piqa[] = {
    { "goal", 's', G3_TASK_FIELD_NEEDED },  { "sol1", 's', G3_TASK_FIELD_NEEDED },
    { "sol2", 's', G3_TASK_FIELD_NEEDED },  { "label", 'i', G3_TASK_FIELD_UNLESS_LABELS },
    { NULL, 0, 0 },
};

/* The PiQA labels beside FILE when its lines (text) have none: FILE with ".jsonl" replaced
 * by "-labels.lst" (the published naming: valid.jsonl, valid-labels.lst).
 * OUT: *labels_p (malloc'd; NULL: none needed), *n_p. */
static g3_status_t g3_task_piqa_labels(const char *path, const char *text, int **labels_p,
                                       int64_t *n_p)
{
    size_t n = strlen(path), len = 0;
    char *lp, *data = NULL, *save = NULL, *tok;
    int *labels = NULL;
    int64_t k = 0;
    struct stat sb;
    g3_status_t st;

    *labels_p = NULL;
    *n_p = 0;
    if (strstr(text, "\"label\""))
        return G3_OK;   /* the labels are in the lines */
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

/* The fields of a multiple-choice line, in the order g3_task_item_mc reads them: either
 * context and choices or contexts and continuation, which it checks. */
static const g3_task_schema_t g3_task_schema_mc[] = {
    { "context", 's', G3_TASK_FIELD_OPTIONAL },  { "choices", 'a', G3_TASK_FIELD_OPTIONAL },
    { "label", 'i', G3_TASK_FIELD_NEEDED },      { "contexts", 'a', G3_TASK_FIELD_OPTIONAL },
    { "continuation", 's', G3_TASK_FIELD_OPTIONAL },
    { "target_delimiter", 's', G3_TASK_FIELD_OPTIONAL },
    { NULL, 0, 0 },
};

/* The item of a line of gpt3d's multiple-choice JSONL (its fields f, taken over where they
 * become the item's).  RET: G3_OK, G3_ERR_INVALID_ARG (logged), G3_ERR_NO_MEMORY (not logged). */
static g3_status_t g3_task_item_mc(g3_task_field_t *f, const g3_task_line_t *l,
                                   g3_task_item_t *it)
{
    int full = f[0].found && f[1].found, part = f[3].found && f[4].found, nchoices;
    g3_status_t st;

    if (full == part || (full && (f[3].found || f[4].found)) ||
        (part && (f[0].found || f[1].found))) {
        g3_error("%s:%d: a multiple-choice item has either \"context\" and \"choices\" or (partial scoring) \"contexts\" and \"continuation\", and \"label\"",
                 l->path, l->line);
        return G3_ERR_INVALID_ARG;
    }
    nchoices = full ? f[1].narr : f[3].narr;
    if (nchoices < 2) {
        g3_error("%s:%d: %d choice%s: a multiple-choice item needs at least 2", l->path, l->line,
                 nchoices, nchoices == 1 ? "" : "s");
        return G3_ERR_INVALID_ARG;
    }
    if (f[2].num < 0 || f[2].num >= nchoices) {
        g3_error("%s:%d: label %lld is out of range: the item has %d choices, labels 0 .. %d",
                 l->path, l->line, f[2].num, nchoices, nchoices - 1);
        return G3_ERR_INVALID_ARG;
    }
    st = g3_task_item_make(it, nchoices, part, l->line);
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

/* The fields of a HellaSwag line, in the order g3_task_item_hellaswag reads them. */
static const g3_task_schema_t g3_task_schema_hellaswag[] = {
    { "activity_label", 's', G3_TASK_FIELD_NEEDED }, { "ctx_a", 's', G3_TASK_FIELD_NEEDED },
    { "ctx_b", 's', G3_TASK_FIELD_NEEDED },          { "endings", 'a', G3_TASK_FIELD_NEEDED },
    { "label", 'i', G3_TASK_FIELD_NEEDED },          { NULL, 0, 0 },
};

/* The item of a HellaSwag line.  RET: as g3_task_item_mc. */
static g3_status_t g3_task_item_hellaswag(g3_task_field_t *f, const g3_task_line_t *l,
                                          g3_task_item_t *it)
{
    int nchoices = f[3].narr;
    char *cb, *q, *qp;

    if (nchoices < 2 || f[4].num < 0 || f[4].num >= nchoices) {
        g3_error("%s:%d: label %lld is out of range for %d endings (labels 0 .. %d)", l->path,
                 l->line, f[4].num, nchoices, nchoices - 1);
        return G3_ERR_INVALID_ARG;
    }
    if (g3_task_item_make(it, nchoices, 0, l->line) != G3_OK)
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

/* The item of a PiQA line; its label from the line, else the index-th of the labels file.
 * RET: as g3_task_item_mc. */
static g3_status_t g3_task_item_piqa(g3_task_field_t *f, const g3_task_line_t *l,
                                     g3_task_item_t *it)
{
    int label;

    if (f[3].found) {
        label = (int)f[3].num;
    } else if (l->index < l->nlabels) {
        label = l->labels[l->index];
    } else {
        g3_error("%s:%d: the labels file has only %lld labels: it does not belong to this file",
                 l->path, l->line, (long long)l->nlabels);
        return G3_ERR_INVALID_ARG;
    }
    if (label < 0 || label > 1) {
        g3_error("%s:%d: label %d is out of range: PiQA has 2 solutions, labels 0 and 1",
                 l->path, l->line, label);
        return G3_ERR_INVALID_ARG;
    }
    if (g3_task_item_make(it, 2, 0, l->line) != G3_OK)
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

/* The fields of a WinoGrande line, in the order g3_task_item_winogrande reads them. */
static const g3_task_schema_t g3_task_schema_winogrande[] = {
    { "sentence", 's', G3_TASK_FIELD_NEEDED }, { "option1", 's', G3_TASK_FIELD_NEEDED },
    { "option2", 's', G3_TASK_FIELD_NEEDED },  { "answer", 'i', G3_TASK_FIELD_NEEDED },
    { NULL, 0, 0 },
};

/* The item of a WinoGrande line: the sentence's blank filled with each option, then the
 * rest.  RET: as g3_task_item_mc. */
static g3_status_t g3_task_item_winogrande(g3_task_field_t *f, const g3_task_line_t *l,
                                           g3_task_item_t *it)
{
    const char *s = f[0].str.data ? f[0].str.data : "", *blank = strchr(s, '_');

    if (!blank) {
        g3_error("%s:%d: the sentence has no '_' blank: not a WinoGrande item", l->path, l->line);
        return G3_ERR_INVALID_ARG;
    }
    if (f[3].num != 1 && f[3].num != 2) {
        g3_error("%s:%d: answer %lld is out of range: WinoGrande answers are \"1\" or \"2\"",
                 l->path, l->line, f[3].num);
        return G3_ERR_INVALID_ARG;
    }
    if (g3_task_item_make(it, 2, 1, l->line) != G3_OK)
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

/* The fields of a LAMBADA line. */
static const g3_task_schema_t g3_task_schema_lambada[] = {
    { "text", 's', G3_TASK_FIELD_OPTIONAL },   /* g3_task_item_lambada says how a line looks */
    { NULL, 0, 0 },
};

/* The item of a LAMBADA line {"text": ...}: the text, whose last word is predicted (its
 * rows: g3_task_rows_lambada).  RET: as g3_task_item_mc. */
static g3_status_t g3_task_item_lambada(g3_task_field_t *f, const g3_task_line_t *l,
                                        g3_task_item_t *it)
{
    size_t len = f[0].str.len, p = 0, sp;
    int word = 0;

    if (!f[0].found) {
        g3_task_line_error(l, "no \"text\" field");
        return G3_ERR_INVALID_ARG;
    }
    while (p < len && !word) {
        sp = f[0].str.data ? g3_task_space_len(f[0].str.data + p, len - p) : 0;
        word = sp == 0;
        p += sp ? sp : 1;
    }
    if (!word) {
        g3_error("%s:%d: the text has no word to predict", l->path, l->line);
        return G3_ERR_INVALID_ARG;
    }
    if (g3_task_item_make(it, 1, 0, l->line) != G3_OK)
        return G3_ERR_NO_MEMORY;
    it->ctx[0] = f[0].str.data;   /* no continuation: the text's end is scored */
    f[0].str.data = NULL;
    return G3_OK;
}

/* ---- the table ----------------------------------------------------------------------------- */

/* What every multiple-choice kind shares: its items' choices scored as the harness's requests
 * (g3_task_rows_choices), acc and acc_norm (g3_task_score_choices), --convert-to writes it. */
#define G3_TASK_MULTIPLE_CHOICE \
    .choices = 1, .rows = g3_task_rows_choices, .metrics = { "acc", "acc_norm", NULL }, \
    .score = g3_task_score_choices

/* One row per kind, in the order help and messages list them (mc last: gpt3d eval's message
 * explains it after the list). */
static const g3_task_kind_info_t g3_task_kinds[] = {
    {
        .name = "lambada",
        .format = "a lambada file holds one {\"text\": ...} object a line, as OpenAI's lambada_test.jsonl",
        .greedy = 1,
        .fields = g3_task_schema_lambada,
        .item = g3_task_item_lambada,
        .rows = g3_task_rows_lambada,
        .metrics = { "acc_strict", "acc_nonstrict", "ppl", NULL },
        .score = g3_task_score_lambada,
    },
    {
        .name = "wikitext103",
        .aliases = { "wikitext", NULL },
        .rows_all = g3_task_rows_wikitext,   /* the raw wiki.test.tokens, read whole */
        .metrics = { "loss", "ppl", "adjusted_ppl", "token_ratio", NULL },
        .score = g3_task_score_wikitext,
    },
    {
        .name = "hellaswag",
        .fields = g3_task_schema_hellaswag,
        .item = g3_task_item_hellaswag,
        G3_TASK_MULTIPLE_CHOICE,
    },
    {
        .name = "piqa",
        .fields = g3_task_schema_piqa,
        .labels = g3_task_piqa_labels,
        .item = g3_task_item_piqa,
        G3_TASK_MULTIPLE_CHOICE,
    },
    {
        .name = "winogrande",
        .fields = g3_task_schema_winogrande,
        .item = g3_task_item_winogrande,
        G3_TASK_MULTIPLE_CHOICE,
    },
    {
        .name = "mc",   /* gpt3d's own multiple-choice JSONL: reports name the file */
        .what = "multiple-choice",
        .named_by_file = 1,
        .fields = g3_task_schema_mc,
        .item = g3_task_item_mc,
        G3_TASK_MULTIPLE_CHOICE,
    },
};

#define G3_TASK_KINDS ((int)(sizeof(g3_task_kinds) / sizeof(g3_task_kinds[0])))

/* RET: kind's row, or NULL. */
static const g3_task_kind_info_t *g3_task_kind_row(g3_task_kind_t kind)
{
    return kind >= 0 && kind < G3_TASK_KINDS ? &g3_task_kinds[kind] : NULL;
}

int g3_task_kind(const char *name)
{
    for (int k = 0; name && k < G3_TASK_KINDS; k++) {
        if (strcmp(name, g3_task_kinds[k].name) == 0)
            return k;
        for (int a = 0; a < G3_TASK_MAX_ALIASES && g3_task_kinds[k].aliases[a]; a++)
            if (strcmp(name, g3_task_kinds[k].aliases[a]) == 0)
                return k;
    }
    return -1;
}

static const char *g3_task_kind_name(g3_task_kind_t kind)
{
    return g3_task_kind_row(kind) ? g3_task_kind_row(kind)->name : "?";
}

const char *g3_task_kinds_list(g3_task_kinds_t which, const char *last, char *buf, size_t size)
{
    int n = 0, total = 0;
    size_t len = 0;

    for (int k = 0; k < G3_TASK_KINDS; k++)
        total += which == G3_TASK_KINDS_ALL || g3_task_kinds[k].choices;
    if (size)
        buf[0] = '\0';
    for (int k = 0; k < G3_TASK_KINDS && len < size; k++) {
        if (which != G3_TASK_KINDS_ALL && !g3_task_kinds[k].choices)
            continue;
        n++;
        len += (size_t)snprintf(buf + len, size - len, "%s%s",
                                n == 1 ? "" : n == total ? last : ", ", g3_task_kinds[k].name);
    }
    return buf;
}

g3_status_t g3_task_load(const g3_task_spec_t *spec, const g3_bpe_t *bpe, int T,
                         g3_task_t **task_p)
{
    const g3_task_kind_info_t *row = g3_task_kind_row(spec->kind);

    if (!row) {   /* a caller's bug: g3_task_kind said -1 */
        g3_error("task kind %d is not one gpt3d knows", (int)spec->kind);
        return G3_ERR_INVALID_ARG;
    }
    return g3_task_build(row, spec, bpe, T, task_p);
}

g3_status_t g3_task_convert(g3_task_kind_t kind, const char *in, const char *out)
{
    const g3_task_kind_info_t *row = g3_task_kind_row(kind);

    if (!row || !row->choices) {
        g3_error("--convert-to writes multiple-choice items: %s is not a multiple-choice task",
                 g3_task_kind_name(kind));
        return G3_ERR_INVALID_ARG;
    }
    return g3_task_write_choices(row, in, out);
}

/* ---- --eval-tasks ------------------------------------------------------------------------ */

g3_status_t g3_task_set_load(const char *spec, const char *vocab_file, const char *merge_file,
                             int T, uint64_t seed, g3_task_set_t *set)
{
    char *copy = strdup(spec), *save = NULL, *entry;
    g3_status_t st = copy ? G3_OK : G3_ERR_NO_MEMORY;

    memset(set, 0, sizeof(*set));
    if (st == G3_OK)
        st = g3_bpe_load(vocab_file, merge_file, &set->bpe);
    for (entry = st == G3_OK ? strtok_r(copy, ",", &save) : NULL; entry && st == G3_OK;
         entry = strtok_r(NULL, ",", &save)) {
        char *name = entry, *file = strchr(entry, ':'), *k = NULL, *end = NULL;
        g3_task_spec_t ts;
        g3_task_t **grown;
        long K = 0;
        if (file) {
            *file++ = '\0';
            k = strchr(file, ':');
        }
        if (k) {
            *k++ = '\0';
            K = strtol(k, &end, 10);
        }
        if (!file || !*file || g3_task_kind(name) < 0 || (k && (*end || end == k || K < 0))) {
            char kinds[256];
            g3_error("--eval-tasks '%s': '%s' is not NAME:FILE[:K] with NAME %s and K the few-shot examples",
                     spec, name, g3_task_kinds_list(G3_TASK_KINDS_ALL, " or ", kinds,
                                                    sizeof(kinds)));
            st = G3_ERR_INVALID_ARG;
            break;
        }
        memset(&ts, 0, sizeof(ts));
        ts.kind = (g3_task_kind_t)g3_task_kind(name);
        ts.data = file;
        ts.num_fewshot = (int)K;
        ts.seed = seed;
        grown = realloc(set->tasks, sizeof(*grown) * (size_t)(set->n + 1));
        if (!grown) {
            st = G3_ERR_NO_MEMORY;
            break;
        }
        set->tasks = grown;
        /* the spec text lives as long as the task: the copy is kept (t->spec.data) */
        st = g3_task_load(&ts, set->bpe, T, &set->tasks[set->n]);
        if (st == G3_OK)
            set->n++;
    }
    if (st == G3_OK && set->n == 0) {
        g3_error("--eval-tasks '%s' names no task: pass NAME:FILE[:K],...", spec);
        st = G3_ERR_INVALID_ARG;
    }
    if (st == G3_OK || set->n > 0)
        set->spec_copy = copy;
    else
        free(copy);
    return st;
}
