# tests/infer: the sampler and generation loop (C), and gpt3d eval / gpt3d generate on
# checkpoints of the real trainer, against the trainer's own numbers and a PyTorch reference.
G3_C_TESTS += tests/infer/test_sample
G3_SH_TESTS += tests/infer/test_infer.sh tests/infer/test_infer_parallel.sh \
	tests/infer/test_eval_tasks.sh tests/infer/test_eval_kjv.sh tests/infer/test_infer_device.sh
EXTRA_DIST += tests/infer/infer_ref.py tests/infer/tasks_ref.py
# the task-scoring benchmark against the forward pass (docs/benchmarks.md; run by hand)
noinst_PROGRAMS += tests/infer/bench_tasks
