# tests/model
