/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): the checksum of every checkpoint
 * dataset (src/ckpt) and of every TensorBoard record (the metrics' event files).  The SSE4.2
 * instruction when the CPU has it, else a slicing-by-8 table: the same value either way. */
#ifndef G3_CORE_CRC32C_H
#define G3_CORE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* crc = g3_crc32c(0, buf, n) for a whole buffer; continue with the previous result for
 * more.  RET: the CRC-32C ("123456789" -> 0xE3069283). */
uint32_t g3_crc32c(uint32_t crc, const void *buf, size_t n);

/* Tests: on 1, the hardware instruction when the CPU has it; on 0, the table.
 * RET: the previous setting. */
int g3_crc32c_use_hw(int on);

#endif
