# tests/metrics: the metrics' schema read back (gpt3d metrics).  The writers' tests are in
# tests/train (test_tensorboard.sh, test_timing.sh, test_plot.sh: they train).
G3_SH_TESTS += tests/metrics/test_metrics.sh
