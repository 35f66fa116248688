man1_MANS += man/gpt3d.1 man/gpt3d-submit.1
man5_MANS = man/gpt3d-train.sbatch.5
EXTRA_DIST += man/gpt3d.1 man/gpt3d-submit.1 man/gpt3d-train.sbatch.5
