# tests/slurm
