/* gpt3d CUDA backend: the C interface of kernels/ (compiled by nvcc, called
 * from C).  Every entry point returns 0 on success or a non-zero code, and
 * writes a human-readable cause into why[why_len] on failure. */
#ifndef G3_KERNELS_G3CUDA_H
#define G3_KERNELS_G3CUDA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* OUT: *count_p, the number of visible CUDA devices (0 without a GPU is an
 * error here, with the driver's reason in why). */
int g3cuda_device_count(int *count_p, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
