# src/core: status, logging, options, counter-based RNG, the clock, timers, mkdir -p, the
# registry of GPT3D_* environment variables (param), the test hooks (hook) and CRC-32C.
# Depends on nothing.
src_libgpt3d_a_SOURCES += \
	src/core/status.c src/core/status.h \
	src/core/log.c src/core/log_env.c src/core/log.h \
	src/core/opt.c src/core/opt.h \
	src/core/rng.c src/core/rng.h \
	src/core/clock.c src/core/clock.h \
	src/core/timer.c src/core/timer.h \
	src/core/fs.c src/core/fs.h src/core/hash.h \
	src/core/mem.c src/core/mem.h src/core/table.h src/core/fileio.c src/core/fileio.h \
	src/core/param.c src/core/param.h \
	src/core/hook.c src/core/hook.h \
	src/core/crc32c.c src/core/crc32c.h \
	src/core/bf16.h
