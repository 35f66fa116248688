/* SHA-256 (src/data/sha256.c) against the FIPS 180-4 / NIST example vectors (one block, two
 * blocks with the 56-byte padding edge, a million 'a's through g3_sha256_file), and every
 * length from 0 to 200 hashed whole against the same bytes fed in uneven pieces.  The
 * tokenizer records are compared with sha256sum itself in test_tokenizer_identity.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "data/sha256.h"
#include "tap.h"

static void hex_of(const void *p, size_t n, char hex[65])
{
    g3_sha256_t s;
    unsigned char d[32];
    g3_sha256_init(&s);
    g3_sha256_update(&s, p, n);
    g3_sha256_final(&s, d);
    g3_sha256_hex(d, hex);
}

int main(void)
{
    char hex[65], hex2[65], path[] = "/tmp/g3-test-sha256-XXXXXX";
    unsigned char buf[256];
    int fd, same = 1;
    FILE *f;

    g3_log_set_level(G3_LOG_ERROR);
    hex_of("", 0, hex);
    tap_ok(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"), "empty message: %s", hex);
    hex_of("abc", 3, hex);
    tap_ok(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"), "\"abc\": %s", hex);
    hex_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, hex);
    tap_ok(!strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"), "56 bytes (two blocks of padding): %s", hex);

    /* lengths 0..200: whole == in pieces of 1, 7 and 63 bytes */
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (unsigned char)(i * 131 + 7);
    for (size_t n = 0; n <= 200 && same; n++) {
        static const size_t steps[3] = { 1, 7, 63 };
        hex_of(buf, n, hex);
        for (int k = 0; k < 3; k++) {
            g3_sha256_t s;
            unsigned char d[32];
            g3_sha256_init(&s);
            for (size_t o = 0; o < n; o += steps[k])
                g3_sha256_update(&s, buf + o, n - o < steps[k] ? n - o : steps[k]);
            g3_sha256_final(&s, d);
            g3_sha256_hex(d, hex2);
            if (strcmp(hex, hex2) != 0)
                same = 0;
        }
    }
    tap_ok(same, "lengths 0..200: the same digest whole and in pieces of 1, 7 and 63 bytes");

    fd = mkstemp(path);
    f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f)
        tap_skip_all("cannot create a temporary file");
    for (int i = 0; i < 1000000; i++)
        fputc('a', f);
    fclose(f);
    tap_ok(g3_sha256_file(path, "test file", hex) == G3_OK &&
           !strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
           "a million 'a's through g3_sha256_file: %s", hex);
    unlink(path);
    tap_ok(g3_sha256_file(path, "test file", hex) == G3_ERR_NOT_FOUND, "a missing file: not found");
    return tap_exit();
}
