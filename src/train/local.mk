# src/train: schedules and the training loop (g3_train_) on the engine of src/parallel.
src_libgpt3d_a_SOURCES += \
	src/train/schedule.c src/train/schedule.h \
	src/train/config.c src/train/flags.c src/train/flags.h \
	src/train/train.c src/train/train.h \
	src/train/train_ckpt.c src/train/train_ckpt.h \
	src/train/timing.c src/train/timing.h
