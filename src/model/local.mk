# src/model: the GPT model (g3_gpt_): parameter table and initialisation, forward and
# backward passes through a backend's ops table (src/backend).
src_libgpt3d_a_SOURCES += \
	src/model/gpt.h \
	src/model/gpt.c \
	src/model/gpt_pass.c
