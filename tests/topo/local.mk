# tests/topo
