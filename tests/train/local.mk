# tests/train: schedules and ramp-up, the PyTorch reference check, the training command, and
# the training-speed benchmark (tests/train/bench_train.sh: run by hand or by make check-long).
G3_C_TESTS += tests/train/test_schedule
check_PROGRAMS += tests/train/ref_dump tests/train/mkdata
G3_SH_TESTS += tests/train/test_reference.sh tests/train/test_train_cli.sh \
	tests/train/test_resume.sh tests/train/test_resume_faults.sh tests/train/test_timing.sh \
	tests/train/test_tensorboard.sh tests/train/test_plot.sh tests/train/test_backend_flags.sh \
	tests/train/test_wait_policy.sh
EXTRA_DIST += tests/train/ref_check.py tests/train/resume_h5check.py tests/train/tb_read.py \
	tests/train/plot_check.py

LONG_TESTS += tests/train/bench_train.sh
EXTRA_DIST += tests/train/bench_torch.py tests/train/bench_busy.sh
noinst_PROGRAMS += tests/train/bench_train
