"""CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) written out in Python, bit by bit
through a table, for the tests that check gpt3d's checksums independently of src/core/crc32c.c:
the checkpoint index's checksum block (tests/ckpt/edit_ckpt.py, docs/checkpoint-format.md
section 6) and TensorBoard's record checksums (tests/train/tb_read.py)."""

_TABLE = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in bytes(data):
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283   # the check value of CRC-32C
