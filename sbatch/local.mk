# sbatch/: Slurm job scripts (see issue "Slurm batch suite").
