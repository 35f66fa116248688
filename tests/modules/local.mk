# tests/modules
