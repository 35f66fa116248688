/* core/crc32c.h: the standard check value ("123456789" -> 0xE3069283), and the hardware
 * instruction, the table and a computation continued in two parts agreeing at many lengths
 * and alignments.  (The checkpoints' and TensorBoard's checksums are also checked against an
 * independent Python CRC-32C: tests/crc32c_ref.py.) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/crc32c.h"
#include "tap.h"

int main(void)
{
    unsigned char *buf = malloc(200000);
    int ok = 1;

    if (!buf) {
        tap_ok(0, "200000 bytes to checksum");
        return tap_exit();
    }
    tap_ok(g3_crc32c(0, "123456789", 9) == 0xE3069283u, "crc32c check value of \"123456789\"");
    for (int i = 0; i < 200000; i++)
        buf[i] = (unsigned char)(i * 7 + (i >> 5));
    for (size_t len = 0; len < 200000; len = len * 3 + 1) {
        for (int off = 0; off < 9; off++) {
            uint32_t hw, sw, split;
            if (off + len > 200000)
                continue;
            g3_crc32c_use_hw(1);
            hw = g3_crc32c(0, buf + off, len);
            split = g3_crc32c(g3_crc32c(0, buf + off, len / 3), buf + off + len / 3, len - len / 3);
            g3_crc32c_use_hw(0);
            sw = g3_crc32c(0, buf + off, len);
            if (hw != sw || split != sw) {
                ok = 0;
                tap_diag("len %zu off %d: hw %08x sw %08x split %08x", len, off, hw, sw, split);
            }
        }
    }
    g3_crc32c_use_hw(1);
    tap_ok(ok, "crc32c: hardware, table and split computations agree at many lengths and alignments");
    free(buf);
    return tap_exit();
}
