# tests/kernels
