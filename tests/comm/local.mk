# tests/comm
