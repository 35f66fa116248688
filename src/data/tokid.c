/* gpt3d data: tokenizer identity (see tokid.h). */
#define _GNU_SOURCE
#include "data/tokid.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fs.h"
#include "core/log.h"
#include "data/json.h"
#include "data/sha256.h"

/* OpenAI's published GPT-2 files (openaipublic.blob.core.windows.net/gpt-2/.../encoder.json
 * and vocab.bpe; Hugging Face's gpt2 vocab.json and merges.txt are the same bytes), the
 * digests tiktoken pins for its "gpt2" encoding. */
#define G3_GPT2_VOCAB_SHA256 "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"
#define G3_GPT2_MERGE_SHA256 "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"

static g3_status_t g3_tokid_copy(char *dst, const char *src, const char *what)
{
    size_t n = strlen(src);
    if (n >= G3_TOKID_PATH_MAX) {
        g3_error("the %s path is %zu bytes long; at most %d are recorded: use a shorter path", what,
                 n, G3_TOKID_PATH_MAX - 1);
        return G3_ERR_INVALID_ARG;
    }
    memcpy(dst, src, n + 1);
    return G3_OK;
}

g3_status_t g3_tokid_of_files(const char *vocab_file, const char *merge_file, g3_tokid_t *id)
{
    g3_status_t st;
    memset(id, 0, sizeof(*id));
    if ((st = g3_tokid_copy(id->vocab_file, vocab_file, "--vocab-file")) != G3_OK ||
        (st = g3_tokid_copy(id->merge_file, merge_file, "--merge-file")) != G3_OK)
        return st;
    if ((st = g3_sha256_file(vocab_file, "vocabulary file (--vocab-file)", id->vocab_sha256)) != G3_OK)
        return st;
    return g3_sha256_file(merge_file, "merges file (--merge-file)", id->merge_sha256);
}

static const char *g3_tokid_known_name(const g3_tokid_t *id)
{
    if (!strcmp(id->vocab_sha256, G3_GPT2_VOCAB_SHA256) &&
        !strcmp(id->merge_sha256, G3_GPT2_MERGE_SHA256))
        return "GPT-2 BPE";
    return NULL;
}

static const char *g3_tokid_base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

void g3_tokid_describe(const g3_tokid_t *id, char *buf, size_t size)
{
    const char *name = g3_tokid_known_name(id);
    snprintf(buf, size, "%s (%s sha256 %.12s..., %s sha256 %.12s...)",
             name ? name : "custom tokenizer files", g3_tokid_base(id->vocab_file),
             id->vocab_sha256, g3_tokid_base(id->merge_file), id->merge_sha256);
}

g3_status_t g3_tokid_to_json(const g3_tokid_t *id, char **text_p)
{
    char *text = NULL;
    size_t len = 0;
    const char *name = g3_tokid_known_name(id);
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return G3_ERR_NO_MEMORY;
    fprintf(f, "{\"format\": \"%s\", \"version\": %d, \"name\": \"%s\", \"vocab_file\": ",
            G3_TOKID_FORMAT, G3_TOKID_VERSION, name ? name : "custom");
    g3_json_write_string(f, id->vocab_file);
    fprintf(f, ", \"vocab_sha256\": \"%s\", \"merge_file\": ", id->vocab_sha256);
    g3_json_write_string(f, id->merge_file);
    fprintf(f, ", \"merge_sha256\": \"%s\"}", id->merge_sha256);
    if (fclose(f) != 0) {
        free(text);
        return G3_ERR_NO_MEMORY;
    }
    *text_p = text;
    return G3_OK;
}

static int g3_tokid_is_sha256_hex(const char *s, size_t n)
{
    if (n != 64)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

g3_status_t g3_tokid_from_json(const char *text, size_t n, const char *what, g3_tokid_t *out)
{
    return g3_tokid_from_json_fix(text, n, what,
                                  "re-run 'gpt3d preprocess' (or remove it to skip the tokenizer check)",
                                  out);
}

g3_status_t g3_tokid_from_json_fix(const char *text, size_t n, const char *what, const char *fix,
                                   g3_tokid_t *out)
{
    g3_json_t j = { text, n, 0, NULL, 0 };
    g3_buf_t key = { 0 }, val = { 0 };
    g3_tokid_t id;
    int first = 1, have = 0;   /* bits: format, version, vocab_sha256, merge_sha256 */
    long long version = 0;
    g3_status_t st;

    memset(&id, 0, sizeof(id));
    g3_json_skip_ws(&j);
    if (j.pos >= j.n || text[j.pos] != '{') {
        j.why = "expected a JSON object";
        st = G3_ERR_FORMAT;
        goto err_syntax;
    }
    while ((st = g3_json_object_next(&j, &first, &key)) == G3_OK) {
        if (g3_buf_append(&key, "", 1) != G3_OK) {
            st = G3_ERR_NO_MEMORY;
            goto out;
        }
        if (!strcmp(key.data, "version")) {
            if ((st = g3_json_int(&j, &version)) != G3_OK)
                goto err_syntax;
            have |= 2;
            continue;
        }
        if (j.pos >= j.n || text[j.pos] != '"') {
            if ((st = g3_json_skip_value(&j)) != G3_OK)
                goto err_syntax;
            continue;
        }
        val.len = 0;
        if ((st = g3_json_string(&j, &val)) != G3_OK)
            goto err_syntax;
        if (val.len >= G3_TOKID_PATH_MAX)
            continue;
        char *dst = NULL;
        if (!strcmp(key.data, "format")) {
            if (val.len != strlen(G3_TOKID_FORMAT) || memcmp(val.data, G3_TOKID_FORMAT, val.len)) {
                g3_error("%s: format \"%.*s\" is not \"%s\"; this is not a gpt3d tokenizer record: %s",
                         what, (int)(val.len > 64 ? 64 : val.len), val.data, G3_TOKID_FORMAT, fix);
                st = G3_ERR_FORMAT;
                goto out;
            }
            have |= 1;
        } else if (!strcmp(key.data, "vocab_file")) {
            dst = id.vocab_file;
        } else if (!strcmp(key.data, "merge_file")) {
            dst = id.merge_file;
        } else if (!strcmp(key.data, "vocab_sha256") || !strcmp(key.data, "merge_sha256")) {
            int v = key.data[0] == 'v';
            if (!g3_tokid_is_sha256_hex(val.data, val.len)) {
                g3_error("%s: %s is not 64 lowercase hex digits; the record is corrupt: %s",
                         what, key.data, fix);
                st = G3_ERR_FORMAT;
                goto out;
            }
            dst = v ? id.vocab_sha256 : id.merge_sha256;
            have |= v ? 4 : 8;
        }
        if (dst) {
            memcpy(dst, val.data, val.len);
            dst[val.len] = '\0';
        }
    }
    if (st != G3_ERR_NOT_FOUND)
        goto err_syntax;
    if ((have & 2) && version != G3_TOKID_VERSION) {
        g3_error("%s: tokenizer record version %lld is not supported (this gpt3d reads version %d)",
                 what, version, G3_TOKID_VERSION);
        st = G3_ERR_VERSION;
        goto out;
    }
    if (have != 15) {
        g3_error("%s: the tokenizer record lacks %s; it is corrupt: %s",
                 what, !(have & 1) ? "\"format\"" : !(have & 2) ? "\"version\""
                       : !(have & 4) ? "\"vocab_sha256\"" : "\"merge_sha256\"", fix);
        st = G3_ERR_FORMAT;
        goto out;
    }
    *out = id;
    st = G3_OK;
    goto out;

err_syntax:
    if (st != G3_ERR_NO_MEMORY) {
        g3_error("%s: not valid JSON at byte %zu (%s); the tokenizer record is corrupt: %s",
                 what, j.pos, j.why ? j.why : "syntax error", fix);
        st = G3_ERR_FORMAT;
    }
out:
    g3_buf_free(&key);
    g3_buf_free(&val);
    return st;
}

static char *g3_tokid_sidecar_path(const char *prefix)
{
    char *p = NULL;
    if (asprintf(&p, "%s.tokenizer.json", prefix) < 0)
        return NULL;
    return p;
}

g3_status_t g3_tokid_write_sidecar(const char *prefix, const g3_tokid_t *id)
{
    char *path = g3_tokid_sidecar_path(prefix), tmp[PATH_MAX + 64], *text = NULL;
    g3_status_t st = G3_ERR_NO_MEMORY;
    FILE *f = NULL;

    if (!path || g3_tokid_to_json(id, &text) != G3_OK)
        goto out;
    g3_tmp_name(path, tmp, sizeof(tmp));
    f = fopen(tmp, "w");
    if (!f) {
        g3_error("cannot create '%s': %s (is the directory of --output-prefix writable?)", tmp,
                 strerror(errno));
        st = G3_ERR_IO;
        goto out;
    }
    if (fprintf(f, "%s\n", text) < 0 || fflush(f) != 0 || fsync(fileno(f)) != 0) {
        g3_error("cannot write '%s': %s", tmp, strerror(errno));
        fclose(f);
        unlink(tmp);
        st = G3_ERR_IO;
        goto out;
    }
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        g3_error("cannot write '%s': %s", path, strerror(errno));
        unlink(tmp);
        st = G3_ERR_IO;
        goto out;
    }
    st = G3_OK;
out:
    free(text);
    free(path);
    return st;
}

g3_status_t g3_tokid_read_sidecar(const char *prefix, g3_tokid_t *id, int *found_p)
{
    char *path = g3_tokid_sidecar_path(prefix), *text = NULL, what[G3_TOKID_PATH_MAX + 64];
    size_t len = 0;
    struct stat sb;
    g3_status_t st = G3_OK;

    *found_p = 0;
    if (!path)
        return G3_ERR_NO_MEMORY;
    if (stat(path, &sb) != 0) {
        if (errno == ENOENT)
            goto out;   /* none: the dataset was not made by gpt3d preprocess */
        sb.st_size = 0;   /* g3_read_file says what is wrong */
    }
    if (sb.st_size >= (off_t)1 << 20) {
        g3_error("the tokenizer record '%s' is over 1 MiB; it is not one 'gpt3d preprocess' wrote (remove it to skip the tokenizer check)",
                 path);
        st = G3_ERR_FORMAT;
        goto out;
    }
    st = g3_read_file(path, "tokenizer record", &text, &len);
    if (st != G3_OK)
        goto out;
    snprintf(what, sizeof(what), "'%s'", path);
    st = g3_tokid_from_json(text, len, what, id);
    if (st == G3_OK)
        *found_p = 1;
out:
    free(text);
    free(path);
    return st;
}

/* One file of the pair: kind "vocabulary" / "merges", flag "--vocab-file" / "--merge-file",
 * harm what a mismatch does.  RET: 1 when the digests differ (logged). */
static int g3_tokid_check_file(const char *what, const char *kind, const char *flag,
                               const char *made_file, const char *made_sha,
                               const char *run_file, const char *run_sha, const char *harm,
                               int allow)
{
    if (strcmp(made_sha, run_sha) == 0)
        return 0;
    if (allow)
        g3_warn("%s was made with the %s file %s (sha256 %.12s...) but %s %s has sha256 %.12s...; going on (--allow-tokenizer-mismatch)",
                what, kind, made_file, made_sha, flag, run_file, run_sha);
    else
        g3_error("%s was made with the %s file %s (sha256 %.12s...) but %s %s has sha256 %.12s...: %s; pass the %s file it was made with, or --allow-tokenizer-mismatch if you know they agree",
                 what, kind, made_file, made_sha, flag, run_file, run_sha, harm, kind);
    return 1;
}

g3_status_t g3_tokid_check(const g3_tokid_t *made, const g3_tokid_t *run, const char *what,
                           int allow)
{
    int bad = g3_tokid_check_file(what, "vocabulary", "--vocab-file", made->vocab_file,
                                  made->vocab_sha256, run->vocab_file, run->vocab_sha256,
                                  "the token ids would mean other tokens", allow);
    bad |= g3_tokid_check_file(what, "merges", "--merge-file", made->merge_file,
                               made->merge_sha256, run->merge_file, run->merge_sha256,
                               "the same text would be cut into other ids", allow);
    return bad && !allow ? G3_ERR_FORMAT : G3_OK;
}
