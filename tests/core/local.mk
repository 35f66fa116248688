# tests/core: status codes, options, the counter-based RNG, logging, timers, mkdir -p and the
# knob registry, CRC-32C.
G3_C_TESTS += tests/core/test_status tests/core/test_opt tests/core/test_rng \
	tests/core/test_log tests/core/test_timer tests/core/test_fs tests/core/test_param \
	tests/core/test_crc32c
