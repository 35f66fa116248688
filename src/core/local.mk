# src/core: status, logging, options, counter-based RNG, the clock, timers and mkdir -p.
# Depends on nothing.
src_libgpt3d_a_SOURCES += \
	src/core/status.c src/core/status.h \
	src/core/log.c src/core/log.h \
	src/core/opt.c src/core/opt.h \
	src/core/rng.c src/core/rng.h \
	src/core/clock.c src/core/clock.h \
	src/core/timer.c src/core/timer.h \
	src/core/fs.c src/core/fs.h \
	src/core/bf16.h
