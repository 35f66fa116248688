/* gpt3d data: SHA-256 (FIPS 180-4, section 6.2), see sha256.h. */
#include "data/sha256.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"

static const uint32_t g3_sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2
};

static inline uint32_t g3_sha256_ror(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

/* One 64-byte block into the state. */
static void g3_sha256_block(uint32_t h[8], const unsigned char *p)
{
    uint32_t w[64], a, b, c, d, e, f, g, hh;
    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 |
               (uint32_t)p[4 * t + 2] << 8 | (uint32_t)p[4 * t + 3];
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = g3_sha256_ror(w[t - 15], 7) ^ g3_sha256_ror(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = g3_sha256_ror(w[t - 2], 17) ^ g3_sha256_ror(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    a = h[0]; b = h[1]; c = h[2]; d = h[3]; e = h[4]; f = h[5]; g = h[6]; hh = h[7];
    for (int t = 0; t < 64; t++) {
        uint32_t S1 = g3_sha256_ror(e, 6) ^ g3_sha256_ror(e, 11) ^ g3_sha256_ror(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = hh + S1 + ch + g3_sha256_k[t] + w[t];
        uint32_t S0 = g3_sha256_ror(a, 2) ^ g3_sha256_ror(a, 13) ^ g3_sha256_ror(a, 22);
        uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = S0 + maj;
        hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

void g3_sha256_init(g3_sha256_t *s)
{
    static const uint32_t h0[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
    memcpy(s->h, h0, sizeof(h0));
    s->len = 0;
    s->nbuf = 0;
}

void g3_sha256_update(g3_sha256_t *s, const void *data, size_t n)
{
    const unsigned char *p = data;
    s->len += n;
    if (s->nbuf) {
        size_t c = 64 - s->nbuf < n ? 64 - s->nbuf : n;
        memcpy(s->buf + s->nbuf, p, c);
        s->nbuf += c;
        p += c;
        n -= c;
        if (s->nbuf < 64)
            return;
        g3_sha256_block(s->h, s->buf);
        s->nbuf = 0;
    }
    for (; n >= 64; p += 64, n -= 64)
        g3_sha256_block(s->h, p);
    memcpy(s->buf, p, n);
    s->nbuf = n;
}

void g3_sha256_final(g3_sha256_t *s, unsigned char digest[32])
{
    uint64_t bits = s->len * 8;
    unsigned char pad[72] = { 0x80 };
    size_t npad = s->nbuf < 56 ? 56 - s->nbuf : 120 - s->nbuf;
    for (int i = 0; i < 8; i++)
        pad[npad + i] = (unsigned char)(bits >> (56 - 8 * i));
    g3_sha256_update(s, pad, npad + 8);
    for (int i = 0; i < 8; i++) {
        digest[4 * i] = (unsigned char)(s->h[i] >> 24);
        digest[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
        digest[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
        digest[4 * i + 3] = (unsigned char)s->h[i];
    }
}

void g3_sha256_hex(const unsigned char digest[32], char hex[65])
{
    static const char x[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = x[digest[i] >> 4];
        hex[2 * i + 1] = x[digest[i] & 15];
    }
    hex[64] = '\0';
}

g3_status_t g3_sha256_file(const char *path, const char *what, char hex[65])
{
    FILE *f = fopen(path, "rb");
    unsigned char buf[1 << 16], digest[32];
    g3_sha256_t s;
    size_t n;

    if (!f) {
        g3_error("cannot open the %s '%s': %s", what, path, strerror(errno));
        return errno == ENOENT ? G3_ERR_NOT_FOUND : G3_ERR_IO;
    }
    g3_sha256_init(&s);
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
        g3_sha256_update(&s, buf, n);
    if (ferror(f)) {
        g3_error("cannot read the %s '%s': %s", what, path, strerror(errno));
        fclose(f);
        return G3_ERR_IO;
    }
    fclose(f);
    g3_sha256_final(&s, digest);
    g3_sha256_hex(digest, hex);
    return G3_OK;
}
