# tests/train
