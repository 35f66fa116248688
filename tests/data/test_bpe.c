/* BPE tokenizer internals: UTF-8 validation and U+FFFD replacement, the
 * JSON string reader, encode/decode round trips on arbitrary bytes, the
 * word cache, and errors for broken vocabulary/merges files.  (Agreement
 * with the reference JS encoder is tests/data/test_tokenizer.sh.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "data/bpe.h"
#include "data/json.h"
#include "data/unicode_tables.h"
#include "tap.h"
#include "xorshift.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static uint64_t rnd(void)
{
    return g3t_xorshift64(&rng_state);
}

static int sanitize_is(const char *in, size_t n, const char *want, size_t want_repl,
                       const char *what)
{
    char *out;
    size_t len, repl;
    if (g3_utf8_sanitize(in, n, &out, &len, &repl) != G3_OK)
        return tap_ok(0, "%s", what);
    const char *got = out ? out : in;
    int ok = len == strlen(want) && memcmp(got, want, len) == 0 && repl == want_repl;
    free(out);
    return tap_ok(ok, "%s", what);
}

static int json_is(const char *in, const char *want, size_t want_lone, const char *what)
{
    g3_json_t j = { in, strlen(in), 0, NULL, 0 };
    g3_buf_t b = { 0 };
    int ok = g3_json_string(&j, &b) == G3_OK && b.len == strlen(want)
             && memcmp(b.data ? b.data : "", want, b.len) == 0 && j.lone_surrogates == want_lone;
    g3_buf_free(&b);
    return tap_ok(ok, "%s", what);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    fputs(text, f);
    fclose(f);
}

int main(void)
{
    const char *data = getenv("GPT3D_TEST_DATA");
    char vocab[4096], merges[4096];
    g3_bpe_t *bpe = NULL;
    g3_bpe_cache_t *cache = NULL;

    g3_log_set_level(G3_LOG_ERROR);

    /* ---- UTF-8 ---- */
    tap_ok(g3_utf8_validate("h\xc3\xa9llo \xe4\xb8\xad \xf0\x9f\x98\x80", 15) == 15, "valid UTF-8 passes");
    tap_ok(g3_utf8_validate("ab\xc0\xaf", 4) == 2, "overlong C0 AF fails at its offset");
    tap_ok(g3_utf8_validate("abc\xed\xa0\x80", 6) == 3, "an encoded surrogate fails");
    tap_ok(g3_utf8_validate("\xf4\x90\x80\x80", 4) == 0, "above U+10FFFF fails");
    tap_ok(g3_utf8_validate("abcdefghij\xe2\x82", 12) == 10, "a truncated sequence at the end fails");
    tap_ok(g3_utf8_validate("abcdefghijklmnop\x80", 17) == 16, "a lone continuation byte fails after the ASCII fast path");
    /* Expected outputs are Python's bytes.decode('utf-8', 'replace'). */
    sanitize_is("a\xed\xa0\x80" "b", 5, "a\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" "b", 3, "surrogate: three U+FFFD (Python)");
    sanitize_is("x\xe2\x82", 3, "x\xef\xbf\xbd", 1, "truncated 3-byte sequence: one U+FFFD (maximal subpart)");
    sanitize_is("\xf0\x90\x80" "A", 4, "\xef\xbf\xbd" "A", 1, "truncated 4-byte sequence before ASCII: one U+FFFD");
    sanitize_is("\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd", 2, "overlong: two U+FFFD");
    sanitize_is("\xf4\x90\x80\x80", 4, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 4, "above U+10FFFF: four U+FFFD");
    sanitize_is("ok \xc3\xa9", 5, "ok \xc3\xa9", 0, "valid text is left alone");

    /* ---- JSON strings ---- */
    json_is("\"plain\"", "plain", 0, "plain JSON string");
    json_is("\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"", "a\"b\\c/d\b\f\n\r\t", 0, "simple escapes");
    json_is("\"\\u00e9\\u4e2d\"", "\xc3\xa9\xe4\xb8\xad", 0, "\\u escapes to UTF-8");
    json_is("\"\\ud83d\\ude00!\"", "\xf0\x9f\x98\x80!", 0, "a surrogate pair joins into one code point");
    json_is("\"\\ud83dx\"", "\xef\xbf\xbdx", 1, "a lone high surrogate becomes U+FFFD, counted");
    json_is("\"\\ude00\"", "\xef\xbf\xbd", 1, "a lone low surrogate becomes U+FFFD, counted");
    {
        g3_json_t j = { "\"abc", 4, 0, NULL, 0 };
        tap_ok(g3_json_string(&j, NULL) == G3_ERR_FORMAT && strstr(j.why, "unterminated"), "unterminated string is an error");
        g3_json_t j2 = { "\"\\x\"", 4, 0, NULL, 0 };
        tap_ok(g3_json_string(&j2, NULL) == G3_ERR_FORMAT, "unknown escape is an error");
        const char *obj = "{\"a\": [1, 2.5e3, {\"b\": null}], \"text\": \"t\"}";
        g3_json_t j3 = { obj, strlen(obj), 0, NULL, 0 };
        g3_buf_t key = { 0 };
        int first = 1, keys = 0, ok = 1;
        for (;;) {
            g3_status_t st = g3_json_object_next(&j3, &first, &key);
            if (st == G3_ERR_NOT_FOUND)
                break;
            if (st != G3_OK || g3_json_skip_value(&j3) != G3_OK) {
                ok = 0;
                break;
            }
            keys++;
        }
        tap_ok(ok && keys == 2 && j3.pos == j3.n, "objects with nested values are walked key by key");
        g3_buf_free(&key);
    }

    /* ---- Unicode classes ---- */
    tap_ok(g3_ucs_class('a') == G3_UCS_LETTER && g3_ucs_class(0x4E2D) == G3_UCS_LETTER
           && g3_ucs_class(0x1D518) == G3_UCS_LETTER, "letters: ASCII, CJK, astral");
    tap_ok(g3_ucs_class('7') == G3_UCS_NUMBER && g3_ucs_class(0x0663) == G3_UCS_NUMBER
           && g3_ucs_class(0x216B) == G3_UCS_NUMBER && g3_ucs_class(0xBD) == G3_UCS_NUMBER,
           "numbers: digits, Arabic-Indic, Roman numeral, vulgar fraction");
    tap_ok(g3_ucs_class(0xA0) == G3_UCS_SPACE && g3_ucs_class(0xFEFF) == G3_UCS_SPACE
           && g3_ucs_class(0x3000) == G3_UCS_SPACE && g3_ucs_class(0x85) == G3_UCS_OTHER
           && g3_ucs_class(0x200B) == G3_UCS_OTHER, "\\s follows ECMAScript (U+FEFF yes, U+0085 and U+200B no)");
    tap_ok(g3_ucs_class(0x0301) == G3_UCS_OTHER && g3_ucs_class(0x1F600) == G3_UCS_OTHER,
           "combining marks and emoji are neither letters nor numbers");

    /* ---- with the GPT-2 vocabulary ---- */
    if (!data) {
        tap_ok(0, "GPT3D_TEST_DATA is set (run through make check)");
        return tap_exit();
    }
    snprintf(vocab, sizeof(vocab), "%s/kjv/encoder.json", data);
    snprintf(merges, sizeof(merges), "%s/kjv/vocab.bpe", data);
    if (!tap_ok(g3_bpe_load(vocab, merges, &bpe) == G3_OK, "GPT-2 vocabulary loads from %s", vocab))
        return tap_exit();
    tap_ok(g3_bpe_vocab_size(bpe) == 50257 && g3_bpe_eod_id(bpe) == 50256, "50257 tokens, <|endoftext|> = 50256");
    {
        int64_t vs = 0, eod = 0;
        tap_ok(g3_bpe_vocab_info(vocab, &vs, &eod) == G3_OK && vs == 50257 && eod == 50256,
               "g3_bpe_vocab_info reads the same without merges");
    }
    g3_bpe_cache_init(&cache);

    /* Known ids (GPT-2): "Hello world" = 15496 995. */
    {
        g3_bpe_ids_t ids = { 0 };
        g3_bpe_encode(bpe, cache, "Hello world", 11, &ids, NULL);
        tap_ok(ids.len == 2 && ids.ids[0] == 15496 && ids.ids[1] == 995, "'Hello world' -> 15496 995");
        ids.len = 0;
        size_t bad = 0;
        tap_ok(g3_bpe_encode(bpe, cache, "ok\xff", 3, &ids, &bad) == G3_ERR_FORMAT && bad == 2,
               "invalid UTF-8 is refused with its byte offset");
        g3_bpe_ids_free(&ids);
    }

    /* Round trip on arbitrary bytes (ill-formed ones included). */
    {
        int ok = 1;
        char buf[512];
        for (int t = 0; t < 3000 && ok; t++) {
            size_t n = rnd() % sizeof(buf);
            for (size_t i = 0; i < n; i++) {
                uint64_t r = rnd();
                /* Mix plain ASCII, spaces and raw bytes. */
                buf[i] = (char)(r % 4 == 0   ? ' '
                                : r % 4 == 1 ? 'a' + (int)(r >> 8) % 26
                                             : (int)(r >> 16));
            }
            g3_bpe_ids_t ids = { 0 };
            char *out = NULL;
            size_t len = 0;
            ok = g3_bpe_encode_bytes(bpe, cache, buf, n, &ids) == G3_OK
                 && g3_bpe_decode(bpe, ids.ids, ids.len, &out, &len) == G3_OK && len == n
                 && memcmp(out, buf, n) == 0;
            free(out);
            g3_bpe_ids_free(&ids);
        }
        tap_ok(ok, "decode(encode_bytes(b)) == b for 3000 random byte strings");
    }
    /* Round trip on random valid UTF-8 from all planes. */
    {
        g3_buf_t s = { 0 };
        for (int i = 0; i < 200000; i++) {
            unsigned cp;
            do {
                uint64_t r = rnd();
                cp = r % 3 == 0   ? (unsigned)(r >> 8) % 0x80
                     : r % 3 == 1 ? (unsigned)(r >> 8) % 0x3000
                                  : (unsigned)(r >> 8) % 0x110000;
            } while (cp >= 0xD800 && cp <= 0xDFFF);
            g3_utf8_put(&s, cp);
        }
        g3_bpe_ids_t ids = { 0 };
        char *out = NULL;
        size_t len = 0;
        int ok = g3_bpe_encode(bpe, cache, s.data, s.len, &ids, NULL) == G3_OK
                 && g3_bpe_decode(bpe, ids.ids, ids.len, &out, &len) == G3_OK && len == s.len
                 && memcmp(out, s.data, len) == 0;
        tap_ok(ok, "decode(encode(t)) == t for %zu bytes of random code points", s.len);
        /* The same text with a fresh cache, and with the cache warm, gives
         * the same ids (the cache returns what merging would). */
        g3_bpe_cache_t *fresh = NULL;
        g3_bpe_ids_t ids2 = { 0 };
        g3_bpe_cache_init(&fresh);
        g3_bpe_encode(bpe, fresh, s.data, s.len, &ids2, NULL);
        int same = ids2.len == ids.len && memcmp(ids.ids, ids2.ids, ids.len * 4) == 0;
        ids2.len = 0;
        g3_bpe_encode(bpe, fresh, s.data, s.len, &ids2, NULL);
        same = same && ids2.len == ids.len && memcmp(ids.ids, ids2.ids, ids.len * 4) == 0;
        tap_ok(same, "cold and warm caches give the same ids");
        g3_bpe_cache_free(fresh);
        g3_bpe_ids_free(&ids2);
        free(out);
        g3_bpe_ids_free(&ids);
        g3_buf_free(&s);
    }
    {
        /* A long word without spaces (1 MB of letters): merging is
         * O(n log n), so this stays fast, and round-trips. */
        size_t n = 1 << 20;
        char *w = malloc(n);
        for (size_t i = 0; i < n; i++)
            w[i] = "etaoinshrdlu"[rnd() % 12];
        g3_bpe_ids_t ids = { 0 };
        char *out = NULL;
        size_t len = 0;
        int ok = g3_bpe_encode(bpe, cache, w, n, &ids, NULL) == G3_OK
                 && g3_bpe_decode(bpe, ids.ids, ids.len, &out, &len) == G3_OK && len == n
                 && memcmp(out, w, n) == 0 && ids.len < n / 2;
        tap_ok(ok, "a 1 MB word merges and round-trips (%zu ids)", ids.len);
        free(out);
        free(w);
        g3_bpe_ids_free(&ids);
    }
    {
        int32_t bad[2] = { 1, 50257 };
        char *out = NULL;
        size_t len;
        tap_ok(g3_bpe_decode(bpe, bad, 2, &out, &len) == G3_ERR_INVALID_ARG, "decoding an id outside the vocabulary fails");
    }
    g3_bpe_cache_free(cache);
    g3_bpe_free(bpe);

    /* ---- broken files ---- */
    {
        char dir[] = "/tmp/g3-test-bpe-XXXXXX", v[4200], m[4200];
        g3_bpe_t *b = NULL;
        mkdtemp(dir);
        snprintf(v, sizeof(v), "%s/vocab.json", dir);
        snprintf(m, sizeof(m), "%s/merges.txt", dir);
        write_file(v, "{\"a\": 0, \"b\": 1");
        write_file(m, "#version: 0.2\na b\n");
        tap_ok(g3_bpe_load(v, m, &b) == G3_ERR_FORMAT, "truncated vocabulary JSON is refused");
        write_file(v, "{\"a\": 0, \"b\": 1}");
        tap_ok(g3_bpe_load(v, m, &b) == G3_ERR_FORMAT, "a vocabulary without all 256 byte tokens is refused");
        tap_ok(g3_bpe_load("/nonexistent/encoder.json", m, &b) == G3_ERR_NOT_FOUND, "a missing vocabulary file is NOT_FOUND");
        tap_ok(g3_bpe_load(vocab, v, &b) == G3_ERR_FORMAT, "a merges file that is not merges is refused");
        write_file(m, "#version: 0.2\nzzzzq qqqqz\n");
        tap_ok(g3_bpe_load(vocab, m, &b) == G3_ERR_FORMAT, "a merge of unknown tokens is refused");
        unlink(v);
        unlink(m);
        rmdir(dir);
    }
    return tap_exit();
}
