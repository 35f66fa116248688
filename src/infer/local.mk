# src/infer: forward-only passes of a GPT: the loss over a split (validation, gpt3d eval),
# text generation (the trainer's sample, gpt3d generate), zero- and few-shot tasks (tasks:
# LAMBADA, WikiText-103, multiple choice), and the trained model out of a training
# checkpoint for gpt3d eval and generate (ckpt_model) (g3_infer_, g3_task_).
src_libgpt3d_a_SOURCES += \
	src/infer/infer.h \
	src/infer/eval.c \
	src/infer/sample.c \
	src/infer/ckpt_model.h \
	src/infer/ckpt_model.c \
	src/infer/tasks.h \
	src/infer/tasks_internal.h \
	src/infer/tasks.c \
	src/infer/tasks_kinds.c \
	src/infer/tasks_read.c \
	src/infer/tasks_text.c \
	src/infer/tasks_run.c
