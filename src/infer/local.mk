# src/infer: forward-only passes of a GPT: the loss over a split (validation, gpt3d eval) and
# text generation (the trainer's sample, gpt3d generate), and the trained model out of a
# training checkpoint for gpt3d eval and generate (ckpt_model) (g3_infer_).
src_libgpt3d_a_SOURCES += \
	src/infer/infer.h \
	src/infer/eval.c \
	src/infer/sample.c \
	src/infer/ckpt_model.h \
	src/infer/ckpt_model.c
