# src/model: see docs/design.md for what this layer owns.
