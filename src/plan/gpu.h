/* gpt3d plan: the GPUs it knows (gpt3d plan --gpu NAME) and what it reads of the local one.
 * Each row says which of its numbers were measured on the project's GPUs and which are the
 * datasheet's or estimates (docs/plan.md "GPUs"). */
#ifndef G3_PLAN_GPU_H
#define G3_PLAN_GPU_H

#include <stddef.h>

#include "core/status.h"

typedef struct {
    const char *name;          /* the --gpu word: "h100", "h200", "a100-40gb", "a100-80gb"    */
    const char *model;         /* a substring of the driver's name: "H100", "A100-SXM4-80GB"  */
    double      memory_gib;    /* the memory one process can fill, GiB                         */
    double      peak_flops;    /* dense bf16, FLOP/s (datasheet)                              */
    double      mem_bw;        /* HBM bytes/s (datasheet)                                      */
    double      intra_bw;      /* NVLink per GPU, one direction, bytes/s (datasheet)           */
    double      inter_bw;      /* the DGX's InfiniBand per GPU, bytes/s (datasheet)            */
    double      fixed_mib;     /* a process's fixed cost: the CUDA context, cuBLASLt and its
                                * workspace, the kernels loaded, MiB                           */
    double      nccl_mib;      /* what the four NCCL communicators each rank makes (tp, pp,
                                * dp, emb, whatever their sizes) hold on the GPU, MiB         */
    const char *fixed_how;     /* "measured on ... (date)" or "not measured: ..."              */
} g3_plan_gpu_t;

/* RET: the row of --gpu word `name`, or NULL (logged, listing the names). */
const g3_plan_gpu_t *g3_plan_gpu_find(const char *name);
/* The same without a message.  RET: the row or NULL. */
const g3_plan_gpu_t *g3_plan_gpu_row(const char *name);

/* RET: the row whose model the driver's device name contains (longest match first), or
 * NULL. */
const g3_plan_gpu_t *g3_plan_gpu_match(const char *device_name);

/* The driver's directory of GPUs, one <PCI bus id>/information file each. */
#define G3_PLAN_GPU_PROC "/proc/driver/nvidia/gpus"

/* The first local GPU's name as the driver gives it (root/<bus>/information's "Model:" line,
 * the lowest bus id; root: G3_PLAN_GPU_PROC), read without touching the GPU.  OUT: name.
 * RET: 1 when there is one, else 0. */
int g3_plan_gpu_local(const char *root, char *name, size_t len);

/* The memory the driver counts as used on each GPU (what nvidia-smi's memory.used shows),
 * through NVML (libnvidia-ml.so.1, loaded at run time): open takes a snapshot of every GPU,
 * used compares one GPU (by PCI bus id) now with the snapshot.  Open RET: the handle, or NULL
 * when NVML or its GPUs cannot be had (why: the reason).  Used OUT: *before, *now bytes.
 * RET: 1, or 0 (why). */
typedef struct g3_plan_nvml g3_plan_nvml_t;
g3_plan_nvml_t *g3_plan_nvml_open(char *why, size_t why_len);
int g3_plan_nvml_used(g3_plan_nvml_t *v, const char *bus, double *before, double *now, char *why,
                      size_t why_len);
void g3_plan_nvml_close(g3_plan_nvml_t *v);

#endif
