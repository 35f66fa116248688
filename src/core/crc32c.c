/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of every
 * checkpoint dataset and TensorBoard record (core/crc32c.h).
 * Uses the SSE4.2 crc32 instruction when the CPU has it
 * (three independent streams, combined by a zero-extension table), else a
 * slicing-by-8 table.  Both give the same value; tests check them against each
 * other and against the standard check value ("123456789" -> 0xE3069283). */
#include "core/crc32c.h"

#include <pthread.h>
#include <string.h>

#define G3_CRC32C_POLY 0x82F63B78u

static uint32_t g3_crc32c_table[8][256];
static pthread_once_t g3_crc32c_once = PTHREAD_ONCE_INIT;
static int g3_crc32c_have_hw;

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <nmmintrin.h>
#define G3_CRC32C_X86 1

/* Shifting a CRC over `len` zero bytes is linear: crc' = M^len crc.  We keep the
 * operator for the stream length as 4 tables of 256 entries (one per byte). */
#define G3_CRC32C_LONG  8192
#define G3_CRC32C_SHORT 256
static uint32_t g3_crc32c_long[4][256];
static uint32_t g3_crc32c_short[4][256];
#endif

static void g3_crc32c_init_tables(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ G3_CRC32C_POLY : c >> 1;
        g3_crc32c_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = g3_crc32c_table[0][n];
        for (int k = 1; k < 8; k++) {
            c = g3_crc32c_table[0][c & 0xff] ^ (c >> 8);
            g3_crc32c_table[k][n] = c;
        }
    }
}

static uint32_t g3_crc32c_sw(uint32_t crc, const unsigned char *p, size_t n)
{
    while (n && ((uintptr_t)p & 7)) {
        crc = g3_crc32c_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
        n--;
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= crc;
        crc = g3_crc32c_table[7][w & 0xff] ^ g3_crc32c_table[6][(w >> 8) & 0xff] ^
              g3_crc32c_table[5][(w >> 16) & 0xff] ^ g3_crc32c_table[4][(w >> 24) & 0xff] ^
              g3_crc32c_table[3][(w >> 32) & 0xff] ^ g3_crc32c_table[2][(w >> 40) & 0xff] ^
              g3_crc32c_table[1][(w >> 48) & 0xff] ^ g3_crc32c_table[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = g3_crc32c_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

#ifdef G3_CRC32C_X86
/* GF(2) 32x32 matrix (columns) times vector. */
static uint32_t g3_crc32c_gf2_times(const uint32_t *mat, uint32_t vec)
{
    uint32_t sum = 0;
    while (vec) {
        if (vec & 1)
            sum ^= *mat;
        vec >>= 1;
        mat++;
    }
    return sum;
}

static void g3_crc32c_gf2_square(uint32_t *square, const uint32_t *mat)
{
    for (int n = 0; n < 32; n++)
        square[n] = g3_crc32c_gf2_times(mat, mat[n]);
}

/* op = mat op: every column of op through mat */
static void g3_crc32c_gf2_apply(uint32_t *op, const uint32_t *mat)
{
    uint32_t tmp[32];

    for (int n = 0; n < 32; n++)
        tmp[n] = g3_crc32c_gf2_times(mat, op[n]);
    memcpy(op, tmp, sizeof(tmp));
}

/* Tables applying "append len zero bytes" to a CRC register, one per byte. */
static void g3_crc32c_zeros_table(uint32_t zeros[4][256], size_t len)
{
    uint32_t op[32], odd[32], even[32], *cur, *prev, *tmp;
    uint32_t row = 1;

    /* operator for one zero bit */
    odd[0] = G3_CRC32C_POLY;
    for (int n = 1; n < 32; n++) {
        odd[n] = row;
        row <<= 1;
    }
    g3_crc32c_gf2_square(even, odd);   /* 2 bits */
    g3_crc32c_gf2_square(odd, even);   /* 4 bits */
    /* odd now = 4 bits; square repeatedly to reach len bytes = 8*len bits */
    memset(op, 0, sizeof(op));
    for (int n = 0; n < 32; n++)
        op[n] = 1u << n;     /* identity */
    /* cur: the operator of 1 byte, then 2, 4, ... bytes, squared from prev (the two swap) */
    cur = even;
    prev = odd;
    do {
        g3_crc32c_gf2_square(cur, prev);
        if (len & 1)
            g3_crc32c_gf2_apply(op, cur);
        len >>= 1;
        tmp = cur;
        cur = prev;
        prev = tmp;
    } while (len);
    for (uint32_t n = 0; n < 256; n++) {
        zeros[0][n] = g3_crc32c_gf2_times(op, n);
        zeros[1][n] = g3_crc32c_gf2_times(op, n << 8);
        zeros[2][n] = g3_crc32c_gf2_times(op, n << 16);
        zeros[3][n] = g3_crc32c_gf2_times(op, n << 24);
    }
}

static inline uint32_t g3_crc32c_shift(uint32_t zeros[4][256], uint32_t crc)
{
    return zeros[0][crc & 0xff] ^ zeros[1][(crc >> 8) & 0xff] ^
           zeros[2][(crc >> 16) & 0xff] ^ zeros[3][crc >> 24];
}

/* While at least 3 len bytes are left: three streams of len bytes each, joined by shifting
 * the first two over the zeros of the next (the instruction has a latency of 3 and a
 * throughput of 1, so interleaving triples the speed).  Inlined with a constant len. */
__attribute__((target("sse4.2"), always_inline))
static inline uint64_t g3_crc32c_hw3(uint64_t c0, const unsigned char **pp, size_t *np, size_t len,
                                     uint32_t zeros[4][256])
{
    const unsigned char *p = *pp;
    size_t n = *np;

    while (n >= 3 * len) {
        uint64_t c1 = 0, c2 = 0;
        const unsigned char *end = p + len;
        do {
            uint64_t w0, w1, w2;
            memcpy(&w0, p, 8);
            memcpy(&w1, p + len, 8);
            memcpy(&w2, p + 2 * len, 8);
            c0 = _mm_crc32_u64(c0, w0);
            c1 = _mm_crc32_u64(c1, w1);
            c2 = _mm_crc32_u64(c2, w2);
            p += 8;
        } while (p < end);
        c0 = g3_crc32c_shift(zeros, (uint32_t)c0) ^ c1;
        c0 = g3_crc32c_shift(zeros, (uint32_t)c0) ^ c2;
        p += 2 * len;
        n -= 3 * len;
    }
    *pp = p;
    *np = n;
    return c0;
}

__attribute__((target("sse4.2")))
static uint32_t g3_crc32c_hw(uint32_t crc, const unsigned char *p, size_t n)
{
    uint64_t c0 = crc;

    while (n && ((uintptr_t)p & 7)) {
        c0 = _mm_crc32_u8((uint32_t)c0, *p++);
        n--;
    }
    c0 = g3_crc32c_hw3(c0, &p, &n, G3_CRC32C_LONG, g3_crc32c_long);
    c0 = g3_crc32c_hw3(c0, &p, &n, G3_CRC32C_SHORT, g3_crc32c_short);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c0 = _mm_crc32_u64(c0, w);
        p += 8;
        n -= 8;
    }
    while (n--)
        c0 = _mm_crc32_u8((uint32_t)c0, *p++);
    return (uint32_t)c0;
}
#endif

static void g3_crc32c_init(void)
{
    g3_crc32c_init_tables();
#ifdef G3_CRC32C_X86
    {
        unsigned a, b, c, d;
        if (__get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2)) {
            g3_crc32c_zeros_table(g3_crc32c_long, G3_CRC32C_LONG);
            g3_crc32c_zeros_table(g3_crc32c_short, G3_CRC32C_SHORT);
            g3_crc32c_have_hw = 1;
        }
    }
#endif
}

/* Tests: force the table (0) or the instruction (1).  RET: the previous setting. */
int g3_crc32c_use_hw(int on)
{
    int was;
    pthread_once(&g3_crc32c_once, g3_crc32c_init);
    was = g3_crc32c_have_hw;
#ifdef G3_CRC32C_X86
    {
        unsigned a, b, c, d;
        int cpu = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2);
        if (on && cpu && !g3_crc32c_have_hw) {
            g3_crc32c_zeros_table(g3_crc32c_long, G3_CRC32C_LONG);
            g3_crc32c_zeros_table(g3_crc32c_short, G3_CRC32C_SHORT);
        }
        g3_crc32c_have_hw = on && cpu;
    }
#else
    (void)on;
#endif
    return was;
}

uint32_t g3_crc32c(uint32_t crc, const void *buf, size_t n)
{
    pthread_once(&g3_crc32c_once, g3_crc32c_init);
    crc = ~crc;
#ifdef G3_CRC32C_X86
    if (g3_crc32c_have_hw)
        return ~g3_crc32c_hw(crc, buf, n);
#endif
    return ~g3_crc32c_sw(crc, buf, n);
}
