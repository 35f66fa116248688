/* gpt3d curate: the filter stage: the quality heuristics of Gopher (Rae et al. 2021, "MassiveText
 * quality filters") and C4, each settable (curate.h) and counted per rule with example ids.
 *
 * Words here are runs of non-space characters (as Gopher splits); lines are split at '\n' and
 * blank lines are not counted.  A document fails a rule when:
 *   words         its word count is outside [min_words, max_words];
 *   mean_word     its mean word length (characters) is outside [min, max];
 *   symbols       ('#' characters + ellipses "..." or U+2026) / words > max_symbol_ratio;
 *   bullets       the share of lines starting with a bullet (- * U+2022 U+2023 U+2043 U+2219
 *                 U+25E6) > max_bullet_lines;
 *   ellipsis      the share of lines ending in an ellipsis > max_ellipsis_lines;
 *   dup_lines     the share of lines equal to an earlier line > max_dup_lines;
 *   dup_line_chars their share of the characters > max_dup_line_chars;
 *   top_ngram     for n = 2, 3, 4: the characters of the most frequent word n-gram (times its
 *                 count) / the characters of all words > max_top_ngram[n-2];
 *   dup_ngram     for n = 5..10: the characters of words inside a repeated n-gram / all
 *                 > max_dup_ngram[n-5];
 *   stop_words    fewer than min_stop_words of "the be to of and that have with" occur (C4/Gopher);
 *   alpha_words   the share of words holding a letter < min_alpha_words.
 * A document that fails any rule is dropped; every rule it fails is counted. */
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/mem.h"
#include "curate/curate_internal.h"
#include "data/unicode_tables.h"

#define G3_CURATE_EXAMPLES 5

enum {
    G3_R_WORDS, G3_R_MEAN_WORD, G3_R_SYMBOLS, G3_R_BULLETS, G3_R_ELLIPSIS, G3_R_DUP_LINES,
    G3_R_DUP_LINE_CHARS, G3_R_TOP_NGRAM, G3_R_DUP_NGRAM, G3_R_STOP_WORDS, G3_R_ALPHA_WORDS,
    G3_R_COUNT
};
static const char *const g3_curate_rule_name[G3_R_COUNT] = {
    "words", "mean_word", "symbols", "bullets", "ellipsis", "dup_lines", "dup_line_chars",
    "top_ngram", "dup_ngram", "stop_words", "alpha_words"
};

typedef struct {
    uint64_t hash;
    uint32_t start, end;    /* bytes                          */
    uint32_t chars;
    int      alpha;
} g3_curate_tok_t;

typedef struct {
    const g3_curate_filter_params_t *p;
    g3_curate_tok_t  *tok;
    size_t            ntok, ctok;
    uint64_t         *gh;         /* (ntok,) hash of the n-gram at each word  */
    size_t            cgh;
    uint64_t         *tab_key;    /* (ctab,) n-gram counts: key 0 = empty      */
    uint32_t         *tab_cnt;
    size_t            ctab;
    uint64_t         *lines;      /* (nlines,) hashes of the non-blank lines */
    size_t            clines;
    g3_curate_words_t words;
    uint64_t          fails[G3_R_COUNT];
    char              ex[G3_R_COUNT][G3_CURATE_EXAMPLES][256];
    int               nex[G3_R_COUNT];
} g3_curate_filter_t;

static int g3_curate_u64cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int g3_curate_is_space(uint32_t cp)
{
    return cp == ' ' || (cp >= '\t' && cp <= '\r')
           || (cp >= 0x80 && g3_ucs_class(cp) == G3_UCS_SPACE);
}

static int g3_curate_is_bullet(uint32_t cp)
{
    return cp == '-' || cp == '*' || cp == 0x2022 || cp == 0x2023 || cp == 0x2043
           || cp == 0x2219 || cp == 0x25E6;
}

/* Split into whitespace tokens. */
static g3_status_t g3_curate_tokens(g3_curate_filter_t *f, const char *s, size_t n)
{
    size_t i = 0;
    f->ntok = 0;
    while (i < n) {
        size_t at = i;
        uint32_t cp = g3_curate_utf8_next(s, &i);
        if (g3_curate_is_space(cp))
            continue;
        if (g3_mem_grow(&f->tok, &f->ctok, f->ntok, sizeof(*f->tok), 1024) != G3_OK)
            return G3_ERR_NO_MEMORY;
        g3_curate_tok_t *t = &f->tok[f->ntok++];
        t->start = (uint32_t)at;
        t->chars = 0;
        t->alpha = 0;
        size_t e = at;
        for (;;) {
            int letter = cp < 0x80 ? (cp | 32) >= 'a' && (cp | 32) <= 'z'
                                   : g3_ucs_class(cp) == G3_UCS_LETTER;
            t->alpha |= letter;
            t->chars++;
            e = i;
            if (i >= n)
                break;
            size_t j = i;
            cp = g3_curate_utf8_next(s, &j);
            if (g3_curate_is_space(cp))
                break;
            i = j;
        }
        t->end = (uint32_t)e;
        t->hash = g3_curate_hash_bytes(s + at, e - at, 0x1234567ULL);
    }
    return G3_OK;
}

/* The n-gram rules for n = 2..10 in one sweep: gh[i] holds the hash of the n-gram at i, made
 * from the (n-1)-gram's; a table counts the n-grams (open addressing, cleared per n); the top
 * n-gram's characters (n <= 4) or the characters covered by repeated n-grams (n >= 5) are
 * compared with their thresholds.  OUT: fail[G3_R_TOP_NGRAM], fail[G3_R_DUP_NGRAM]. */
static g3_status_t g3_curate_ngram_rules(g3_curate_filter_t *f, double total, int *fail)
{
    const g3_curate_filter_params_t *p = f->p;
    size_t nt = f->ntok;
    if (nt < 3 || total <= 0)
        return G3_OK;
    size_t cap = 16;
    while (cap < 2 * nt)
        cap *= 2;
    if (nt > f->cgh || cap > f->ctab) {
        uint64_t *gh = realloc(f->gh, nt * sizeof(*gh));
        if (gh)
            f->gh = gh;
        uint64_t *key = gh ? realloc(f->tab_key, cap * sizeof(*key)) : NULL;
        if (key)
            f->tab_key = key;
        uint32_t *cnt = key ? realloc(f->tab_cnt, cap * sizeof(*cnt)) : NULL;
        if (!gh || !key || !cnt)
            return G3_ERR_NO_MEMORY;
        f->tab_cnt = cnt;
        f->cgh = nt;
        f->ctab = cap;
    }
    for (size_t i = 0; i < nt; i++)
        f->gh[i] = f->tok[i].hash;
    for (int n = 2; n <= 10 && (size_t)n <= nt; n++) {
        size_t m = nt - (size_t)n + 1;
        for (size_t i = 0; i < m; i++) {
            uint64_t h = g3_hash_mix64(f->gh[i] ^ (f->tok[i + (size_t)n - 1].hash + (uint64_t)n));
            f->gh[i] = h ? h : 1;
        }
        if (n <= 4 ? fail[G3_R_TOP_NGRAM] : fail[G3_R_DUP_NGRAM])
            continue;
        memset(f->tab_key, 0, cap * sizeof(uint64_t));
        uint64_t mask = cap - 1;
        double best = 0;
        for (size_t i = 0; i < m; i++) {   /* count; for n <= 4 track the top n-gram */
            uint64_t t = f->gh[i] & mask;
            while (f->tab_key[t] && f->tab_key[t] != f->gh[i])
                t = (t + 1) & mask;
            if (!f->tab_key[t]) {
                f->tab_key[t] = f->gh[i];
                f->tab_cnt[t] = 0;
            }
            f->tab_cnt[t]++;
            if (n <= 4 && f->tab_cnt[t] >= 2) {
                double chars = 0;
                for (int k = 0; k < n; k++)
                    chars += f->tok[i + (size_t)k].chars;
                if (chars * f->tab_cnt[t] > best)
                    best = chars * f->tab_cnt[t];
            }
        }
        if (n <= 4) {
            fail[G3_R_TOP_NGRAM] = best / total > p->max_top_ngram[n - 2];
            continue;
        }
        size_t covered_to = 0;   /* words before it are counted */
        for (size_t i = 0; i < m; i++) {
            uint64_t t = f->gh[i] & mask;
            while (f->tab_key[t] != f->gh[i])
                t = (t + 1) & mask;
            if (f->tab_cnt[t] < 2)
                continue;
            for (size_t k = covered_to > i ? covered_to : i; k < i + (size_t)n; k++)
                best += f->tok[k].chars;
            covered_to = i + (size_t)n;
        }
        fail[G3_R_DUP_NGRAM] = best / total > p->max_dup_ngram[n - 5];
    }
    return G3_OK;
}

/* Evaluate the rules on one text.  OUT: fail[G3_R_COUNT].  RET: G3_OK or NO_MEMORY. */
static g3_status_t g3_curate_rules(g3_curate_filter_t *f, const char *s, size_t n,
                                   int fail[G3_R_COUNT])
{
    const g3_curate_filter_params_t *p = f->p;
    double chars = 0, symbols = 0, alpha = 0;
    size_t nlines = 0, bullets = 0, ellipses = 0, dup_lines = 0;
    double line_chars = 0, dup_chars = 0;
    g3_status_t st;

    memset(fail, 0, G3_R_COUNT * sizeof(int));
    if ((st = g3_curate_tokens(f, s, n)) != G3_OK)
        return st;
    for (size_t i = 0; i < f->ntok; i++) {
        chars += f->tok[i].chars;
        alpha += f->tok[i].alpha;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '#')
            symbols++;
        else if (s[i] == '.' && i + 2 < n && s[i + 1] == '.' && s[i + 2] == '.') {
            symbols++;
            i += 2;
        } else if ((unsigned char)s[i] == 0xE2 && i + 2 < n && (unsigned char)s[i + 1] == 0x80
                   && (unsigned char)s[i + 2] == 0xA6)
            symbols++;
    }
    double nw = (double)f->ntok;
    fail[G3_R_WORDS] = (int64_t)f->ntok < p->min_words || (int64_t)f->ntok > p->max_words;
    fail[G3_R_MEAN_WORD] = nw == 0 || chars / nw < p->min_mean_word
                           || chars / nw > p->max_mean_word;
    fail[G3_R_SYMBOLS] = nw > 0 && symbols / nw > p->max_symbol_ratio;
    fail[G3_R_ALPHA_WORDS] = nw == 0 || alpha / nw < p->min_alpha_words;
    /* Lines. */
    for (size_t a = 0; a < n;) {
        size_t e = a;
        while (e < n && s[e] != '\n')
            e++;
        size_t b = a, c = e;
        while (b < c && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r'))
            b++;
        while (c > b && (s[c - 1] == ' ' || s[c - 1] == '\t' || s[c - 1] == '\r'))
            c--;
        if (c > b) {
            size_t j = b;
            uint32_t first = g3_curate_utf8_next(s, &j);
            bullets += g3_curate_is_bullet(first);
            ellipses += (c - b >= 3 && !memcmp(s + c - 3, "...", 3))
                        || (c - b >= 3 && !memcmp(s + c - 3, "\xE2\x80\xA6", 3));
            if (g3_mem_grow(&f->lines, &f->clines, nlines, sizeof(*f->lines), 256) != G3_OK)
                return G3_ERR_NO_MEMORY;
            /* Low 20 bits carry the length, so the duplicates' characters can be summed. */
            uint64_t len = c - b > 0xFFFFF ? 0xFFFFF : c - b;
            f->lines[nlines++] = (g3_curate_hash_bytes(s + b, c - b, 77) & ~0xFFFFFULL) | len;
            line_chars += (double)(c - b);
        }
        a = e + 1;
    }
    if (nlines > 0) {
        qsort(f->lines, nlines, sizeof(uint64_t), g3_curate_u64cmp);
        for (size_t i = 1; i < nlines; i++)
            if (f->lines[i] == f->lines[i - 1]) {
                dup_lines++;
                dup_chars += (double)(f->lines[i] & 0xFFFFF);
            }
        fail[G3_R_BULLETS] = (double)bullets / (double)nlines > p->max_bullet_lines;
        fail[G3_R_ELLIPSIS] = (double)ellipses / (double)nlines > p->max_ellipsis_lines;
        fail[G3_R_DUP_LINES] = (double)dup_lines / (double)nlines > p->max_dup_lines;
        fail[G3_R_DUP_LINE_CHARS] = line_chars > 0
                                    && dup_chars / line_chars > p->max_dup_line_chars;
    }
    if ((st = g3_curate_ngram_rules(f, chars, fail)) != G3_OK)
        return st;
    /* Stop words among the lower-cased letter words. */
    static const char *const stop[] = { "the", "be", "to", "of", "and", "that", "have", "with" };
    unsigned seen = 0;
    if ((st = g3_curate_words(s, n, &f->words)) != G3_OK)
        return st;
    for (size_t i = 0; i < f->words.n; i++) {
        size_t a = f->words.w[i].start, len = f->words.w[i].end - a;
        if (len < 2 || len > 4)
            continue;
        for (unsigned k = 0; k < 8; k++) {
            if (strlen(stop[k]) != len)
                continue;
            size_t c = 0;
            while (c < len && (s[a + c] | 32) == stop[k][c])
                c++;
            if (c == len)
                seen |= 1u << k;
        }
    }
    fail[G3_R_STOP_WORDS] = __builtin_popcount(seen) < p->min_stop_words;
    return G3_OK;
}

static g3_status_t g3_curate_filter_shard(void *ctx, const g3_curate_shard_t *sh,
                                          g3_curate_reader_t *in, FILE *out, g3_buf_t *rep,
                                          uint64_t *docs_in, uint64_t *docs_out)
{
    g3_curate_filter_t *f = ctx;
    g3_curate_doc_t doc = { 0 };
    int fail[G3_R_COUNT];
    g3_status_t st;

    memset(f->fails, 0, sizeof(f->fails));
    memset(f->nex, 0, sizeof(f->nex));
    while ((st = g3_curate_reader_next(in, sh->text_key, &doc)) == G3_OK) {
        int any = 0;
        (*docs_in)++;
        if ((st = g3_curate_rules(f, doc.text.data, doc.text.len, fail)) != G3_OK) {
            g3_error("gpt3d curate filter: out of memory at %s line %llu", sh->in_path,
                     (unsigned long long)doc.line);
            break;
        }
        for (int r = 0; r < G3_R_COUNT; r++) {
            if (!fail[r])
                continue;
            any = 1;
            f->fails[r]++;
            if (f->nex[r] < G3_CURATE_EXAMPLES)
                g3_curate_doc_id(sh->in_path, doc.line, f->ex[r][f->nex[r]++], 256);
        }
        if (any)
            continue;
        g3_curate_doc_keep(out, &doc, docs_out);
    }
    g3_buf_free(&doc.text);
    if (st != G3_ERR_NOT_FOUND)
        return st;
    g3_curate_rep_raw(rep, ",\n  \"rules\": {");
    for (int r = 0; r < G3_R_COUNT; r++) {
        char t[320];
        snprintf(t, sizeof(t), "%s\n    \"%s\": {\"failed\": %llu, \"examples\": [", r ? "," : "",
                 g3_curate_rule_name[r], (unsigned long long)f->fails[r]);
        g3_curate_rep_raw(rep, t);
        for (int k = 0; k < f->nex[r]; k++) {
            if (k)
                g3_curate_rep_raw(rep, ", ");
            g3_curate_json_str(rep, f->ex[r][k], strlen(f->ex[r][k]));
        }
        g3_curate_rep_raw(rep, "]}");
    }
    g3_curate_rep_raw(rep, "\n  }");
    return G3_OK;
}

g3_status_t g3_curate_filter(const g3_curate_io_t *io, const g3_curate_filter_params_t *p,
                             g3_curate_counts_t *c)
{
    g3_curate_filter_t *f;
    char params[1024];
    g3_status_t st;

    memset(c, 0, sizeof(*c));
    if (p->min_words < 0 || p->max_words < p->min_words || p->min_mean_word > p->max_mean_word) {
        g3_error("gpt3d curate filter: --min-words %lld / --max-words %lld or --min-mean-word %g / --max-mean-word %g make an empty range",
                 (long long)p->min_words, (long long)p->max_words, p->min_mean_word,
                 p->max_mean_word);
        return G3_ERR_INVALID_ARG;
    }
    f = g3_mem_calloc(1, sizeof(*f), "gpt3d curate filter");
    if (!f)
        return G3_ERR_NO_MEMORY;
    f->p = p;
    snprintf(params, sizeof(params),
             "key=%s words=%lld..%lld mean_word=%g..%g symbols=%g bullets=%g ellipsis=%g dup_lines=%g dup_line_chars=%g top=%g,%g,%g dup=%g,%g,%g,%g,%g,%g stop=%d alpha=%g",
             io->text_key, (long long)p->min_words, (long long)p->max_words, p->min_mean_word,
             p->max_mean_word, p->max_symbol_ratio, p->max_bullet_lines, p->max_ellipsis_lines,
             p->max_dup_lines, p->max_dup_line_chars, p->max_top_ngram[0], p->max_top_ngram[1],
             p->max_top_ngram[2], p->max_dup_ngram[0], p->max_dup_ngram[1], p->max_dup_ngram[2],
             p->max_dup_ngram[3], p->max_dup_ngram[4], p->max_dup_ngram[5], p->min_stop_words,
             p->min_alpha_words);
    st = g3_curate_each_shard(io, "filter", params, "jsonl", g3_curate_filter_shard, f, c);
    G3_FREE_ALL(f->tok, f->gh, f->tab_key, f->tab_cnt, f->lines);
    g3_curate_words_free(&f->words);
    free(f);
    return st;
}
