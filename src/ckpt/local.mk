# src/ckpt: see docs/design.md for what this layer owns.
