# src/ckpt: sharded HDF5 checkpoints (docs/checkpoint-format.md).  Depends on core only.
# ckpt_h5 the HDF5 helpers and tables; state, save, load, async, dir the library; check and
# verify the metadata checks; convert, export the tools; timing, dtype, box, name the pieces
# they share.
src_libgpt3d_a_SOURCES += src/ckpt/ckpt.h src/ckpt/ckpt_internal.h \
	src/ckpt/ckpt_timing.c src/ckpt/ckpt_dtype.c src/ckpt/ckpt_box.c src/ckpt/ckpt_name.c \
	src/ckpt/ckpt_h5.c src/ckpt/ckpt_state.c src/ckpt/ckpt_dir.c src/ckpt/ckpt_check.c \
	src/ckpt/ckpt_save.c src/ckpt/ckpt_load.c src/ckpt/ckpt_async.c src/ckpt/ckpt_verify.c \
	src/ckpt/ckpt_convert.c src/ckpt/ckpt_export.c
