man1_MANS += man/gpt3d.1
EXTRA_DIST += man/gpt3d.1
