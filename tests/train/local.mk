# tests/train: schedules and ramp-up, the PyTorch reference check, the training command, and
# the training-speed benchmark (tests/train/bench_train.sh: run by hand or by make check-long).
check_PROGRAMS += tests/train/test_schedule tests/train/ref_dump
TESTS += tests/train/test_schedule
tests_train_test_schedule_SOURCES = tests/train/test_schedule.c tests/tap.h
tests_train_test_schedule_LDADD = $(G3_TEST_LDADD)
tests_train_ref_dump_SOURCES = tests/train/ref_dump.c
tests_train_ref_dump_LDADD = $(G3_TEST_LDADD)
TESTS += tests/train/test_reference.sh tests/train/test_train_cli.sh
TESTS += tests/train/test_resume.sh tests/train/test_resume_faults.sh
TESTS += tests/train/test_timing.sh
EXTRA_DIST += tests/train/test_timing.sh
EXTRA_DIST += tests/train/test_resume.sh tests/train/test_resume_faults.sh tests/train/resume_h5check.py
EXTRA_DIST += tests/train/test_reference.sh tests/train/ref_check.py tests/train/test_train_cli.sh

LONG_TESTS += tests/train/bench_train.sh
EXTRA_DIST += tests/train/bench_train.sh tests/train/bench_torch.py
noinst_PROGRAMS += tests/train/bench_train
tests_train_bench_train_SOURCES = tests/train/bench_train.c
tests_train_bench_train_LDADD = $(G3_TEST_LDADD)
check_PROGRAMS += tests/train/mkdata
tests_train_mkdata_SOURCES = tests/train/mkdata.c
tests_train_mkdata_LDADD = $(G3_TEST_LDADD)
