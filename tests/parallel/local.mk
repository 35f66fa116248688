# tests/parallel: 3D-parallel training under mpirun (src/parallel): every layout trains the
# one-rank model (loss curves, gradients assembled from the ranks' dumps by grad_check),
# layouts refused before any work, and the speed benchmark (tests/parallel/bench_parallel.sh:
# by hand or make check-long).
check_PROGRAMS += tests/parallel/grad_check
# grad_check parses the dumps itself, with no gpt3d code: it links libm only.
tests_parallel_grad_check_LDADD = -lm
G3_SH_TESTS += tests/parallel/test_parallel_equiv.sh tests/parallel/test_parallel_errors.sh
# The checkpoints' finite check (par_ckpt.c): the first NaN or infinity, at every block edge;
# their host staging area: the background allocation, the fall-back to plain memory.
G3_C_TESTS += tests/parallel/test_ckpt_finite tests/parallel/test_ckpt_stage
# The linear layers' per-tensor backend state: allocated by the model, handed to the matmul
# ops, saved and loaded byte for byte, reset from a checkpoint without it (a test row).
G3_C_TESTS += tests/parallel/test_ckpt_lstate
# grad_check's own checks, on dumps the test writes.
G3_SH_TESTS += tests/parallel/test_grad_check.sh
# Under srun --mpi=pmix on the private Slurm cluster (skips where none can start).
G3_SH_TESTS += tests/parallel/test_parallel_slurm.sh
LONG_TESTS += tests/parallel/bench_parallel.sh
# On GPUs (--device cuda, NCCL groups): every layout against one GPU and the CPU; skips
# without 2 GPUs after checking the refusal.  The bf16 data-parallel reduction on the CPU.
G3_SH_TESTS += tests/parallel/test_parallel_cuda.sh tests/parallel/test_grad_reduce_bf16.sh
EXTRA_DIST += tests/parallel/par_lib.sh
# By hand (docs/cuda.md, "bf16 against the CPU"): the GPU's roundings emulated on the CPU.
EXTRA_DIST += tests/parallel/bf16_gap.py
# --overlap-grad-reduce / --overlap-param-gather: bitwise the same as the bucketed reduction
# without overlap (CPU, host groups).
G3_SH_TESTS += tests/parallel/test_overlap.sh
# Their time per iteration under DP 2, by hand (docs/benchmarks.md): not a TAP test.
EXTRA_DIST += tests/parallel/bench_overlap.sh
# Interleaved 1F1B (--virtual-pipeline-model-parallel-size): the one-rank model under TP, DP,
# ZeRO-1, overlap, recomputation; V 1 bitwise 1F1B; checkpoints across V, TP, PP; refusals.
# The measured idle fraction of stage 0 under PP 4 for V 1 and V 2 beside the formulas.
G3_SH_TESTS += tests/parallel/test_interleaved.sh tests/parallel/test_bubble.sh
# --sequence-parallel: the one-rank model under TP 2 alone, with PP, DP + ZeRO-1, overlap,
# recomputation, V 2; less activation memory; the sample; the refusal without TP.
G3_SH_TESTS += tests/parallel/test_sequence_parallel.sh
