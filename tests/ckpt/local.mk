# tests/ckpt
