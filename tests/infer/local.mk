# tests/infer: the sampler and generation loop (C), and gpt3d eval / gpt3d generate on
# checkpoints of the real trainer, against the trainer's own numbers and a PyTorch reference.
G3_C_TESTS += tests/infer/test_sample
G3_SH_TESTS += tests/infer/test_infer.sh tests/infer/test_infer_parallel.sh \
	tests/infer/test_eval_tasks.sh tests/infer/test_eval_kjv.sh
EXTRA_DIST += tests/infer/infer_ref.py tests/infer/tasks_ref.py
