# src/train: schedules, the optimizer and the training loop (g3_train_).
src_libgpt3d_a_SOURCES += \
	src/train/schedule.h \
	src/train/schedule.c \
	src/train/optim.h \
	src/train/optim.c \
	src/train/train.h \
	src/train/config.c \
	src/train/flags.h \
	src/train/flags.c \
	src/train/train.c \
	src/train/train_ckpt.h \
	src/train/train_ckpt.c \
	src/train/ckpt_model.h \
	src/train/ckpt_model.c \
	src/train/timing.h \
	src/train/timing.c
