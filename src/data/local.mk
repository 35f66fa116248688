# src/data: see docs/design.md for what this layer owns.
