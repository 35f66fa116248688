/* Device discovery for the CUDA backend. */
#include <cuda_runtime_api.h>
#include <stdio.h>

#include "g3cuda.h"

extern "C" int g3cuda_device_count(int *count_p, char *why, size_t why_len)
{
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);

    if (err != cudaSuccess) {
        snprintf(why, why_len, "cudaGetDeviceCount: %s", cudaGetErrorString(err));
        return 1;
    }
    if (n == 0) {
        snprintf(why, why_len, "the CUDA runtime sees no device");
        return 1;
    }
    *count_p = n;
    return 0;
}
