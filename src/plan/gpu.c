/* gpt3d plan: the GPUs it knows and what it reads of the local one (see gpu.h; the sources of
 * every number are in docs/plan.md "GPUs"). */
#include "config.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "plan/gpu.h"

/* Memory: what the driver reports as the device's total (nvidia-smi memory.total; H100 80GB
 * HBM3 81,559 MiB, H200 143,771 MiB on the project's machines), the A100s' 40 and 80 GiB.
 * Peaks and bandwidths: the H100 SXM5, H200 SXM and A100 SXM4 datasheets.  The fixed cost of
 * a process (docs/plan.md "Overhead"): the H100's context, cuBLASLt and the kernels loaded as
 * gpt3d plan --calibrate measured them (2026-11-26: 600,637,440 bytes); NCCL's four
 * communicators: what the H100's 12 rows of 2026-11-26 and the H200's 5 of issue 29 leave
 * beyond the tensors, the GEMM autotuning scratch and that context (1,761-1,764 MiB on the
 * H100, 1,744-1,755 on the H200 with the H100's context; 1,763 the H100's mean), not yet
 * measured on its own (the calibration does now); the H200's context is not measured on its
 * own either: its rows' sum (2,324 MiB) less the H100's NCCL; the A100s not measured (the
 * H100's). */
static const g3_plan_gpu_t g3_plan_gpus[] = {
    { "h100", "H100", 81559.0 / 1024, 989e12, 3350e9, 450e9, 50e9, 573.0, 1763.0,
      "measured on an H100 80GB HBM3, 2026-11-26 (docs/plan.md)" },
    { "h200", "H200", 143771.0 / 1024, 989e12, 4800e9, 450e9, 50e9, 561.0, 1763.0,
      "measured on an H200, 2026-11-26, as a sum with NCCL's (docs/plan.md)" },
    { "a100-40gb", "A100", 40.0, 312e12, 1555e9, 300e9, 25e9, 573.0, 1763.0,
      "not measured: the H100's figure" },
    { "a100-80gb", "A100 80GB", 80.0, 312e12, 2039e9, 300e9, 25e9, 573.0, 1763.0,
      "not measured: the H100's figure" },
};
#define G3_PLAN_NGPUS ((int)(sizeof(g3_plan_gpus) / sizeof(g3_plan_gpus[0])))

static const char *g3_plan_gpu_names(void)
{
    return "h100, h200, a100-40gb, a100-80gb";
}

const g3_plan_gpu_t *g3_plan_gpu_row(const char *name)
{
    for (int i = 0; i < G3_PLAN_NGPUS; i++)
        if (strcmp(g3_plan_gpus[i].name, name) == 0)
            return &g3_plan_gpus[i];
    return NULL;
}

const g3_plan_gpu_t *g3_plan_gpu_find(const char *name)
{
    const g3_plan_gpu_t *g = g3_plan_gpu_row(name);
    if (g)
        return g;
    g3_error("--gpu %s: not a GPU gpt3d plan knows; give one of %s (docs/plan.md \"GPUs\"), or a calibration made on your GPU with --machine FILE", name, g3_plan_gpu_names());
    return NULL;
}

const g3_plan_gpu_t *g3_plan_gpu_match(const char *device_name)
{
    /* "NVIDIA H200", "NVIDIA GH200 480GB": h200; "NVIDIA H100 80GB HBM3": h100; the A100s by
     * memory: "NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe" against the 40 GB ones */
    if (strstr(device_name, "H200"))
        return &g3_plan_gpus[1];
    if (strstr(device_name, "H100"))
        return &g3_plan_gpus[0];
    if (strstr(device_name, "A100"))
        return strstr(device_name, "80GB") ? &g3_plan_gpus[3] : &g3_plan_gpus[2];
    return NULL;
}

int g3_plan_gpu_local(const char *root, char *name, size_t len)
{
    DIR *d = opendir(root);
    struct dirent *e;
    char first[256] = "", path[512], line[256];
    int found = 0;

    if (!d)
        return 0;
    while ((e = readdir(d)) != NULL)   /* the lowest PCI bus id: device 0 in PCI order */
        if (e->d_name[0] != '.' && (!first[0] || strcmp(e->d_name, first) < 0))
            snprintf(first, sizeof(first), "%s", e->d_name);
    closedir(d);
    if (!first[0])
        return 0;
    snprintf(path, sizeof(path), "%s/%s/information", root, first);
    {
        FILE *f = fopen(path, "r");
        if (!f)
            return 0;
        while (!found && fgets(line, sizeof(line), f)) {
            if (strncmp(line, "Model:", 6) == 0) {
                char *v = line + 6;
                v += strspn(v, " \t");
                v[strcspn(v, "\r\n")] = '\0';
                snprintf(name, len, "%s", v);
                found = name[0] != '\0';
            }
        }
        fclose(f);
    }
    return found;
}

/* NVML's C interface, the few calls used (nvml.h, stable since CUDA 5: the _v2 names). */
typedef struct {
    unsigned long long total, free, used;
} g3_nvml_memory_t;
typedef int (*g3_nvml_void_fn)(void);
typedef int (*g3_nvml_count_fn)(unsigned int *n);
typedef int (*g3_nvml_byindex_fn)(unsigned int i, void **dev);
typedef int (*g3_nvml_bybus_fn)(const char *bus, void **dev);
typedef int (*g3_nvml_mem_fn)(void *dev, g3_nvml_memory_t *mem);

#define G3_NVML_MAX 64

struct g3_plan_nvml {
    void              *lib;
    g3_nvml_void_fn    shutdown;
    g3_nvml_bybus_fn   bybus;
    g3_nvml_mem_fn     mem;
    unsigned int       n;
    void              *dev[G3_NVML_MAX];
    double             used[G3_NVML_MAX];   /* at g3_plan_nvml_open */
};

g3_plan_nvml_t *g3_plan_nvml_open(char *why, size_t why_len)
{
    g3_plan_nvml_t *v = calloc(1, sizeof(*v));
    g3_nvml_void_fn init;
    g3_nvml_count_fn count;
    g3_nvml_byindex_fn byindex;
    int rc;

    if (!v) {
        snprintf(why, why_len, "out of host memory");
        return NULL;
    }
    v->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!v->lib) {
        snprintf(why, why_len, "NVML (libnvidia-ml.so.1) cannot be loaded: %s", dlerror());
        free(v);
        return NULL;
    }
    *(void **)&init = dlsym(v->lib, "nvmlInit_v2");
    *(void **)&v->shutdown = dlsym(v->lib, "nvmlShutdown");
    *(void **)&count = dlsym(v->lib, "nvmlDeviceGetCount_v2");
    *(void **)&byindex = dlsym(v->lib, "nvmlDeviceGetHandleByIndex_v2");
    *(void **)&v->bybus = dlsym(v->lib, "nvmlDeviceGetHandleByPciBusId_v2");
    *(void **)&v->mem = dlsym(v->lib, "nvmlDeviceGetMemoryInfo");
    if (!init || !v->shutdown || !count || !byindex || !v->bybus || !v->mem) {
        snprintf(why, why_len, "libnvidia-ml.so.1 lacks one of nvmlInit_v2, nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetHandleByPciBusId_v2, nvmlDeviceGetMemoryInfo");
        dlclose(v->lib);
        free(v);
        return NULL;
    }
    rc = init();
    if (rc == 0) {
        rc = count(&v->n);
        if (rc != 0)
            v->shutdown();
    }
    if (rc != 0) {
        snprintf(why, why_len, "NVML cannot list the GPUs (NVML error %d)", rc);
        dlclose(v->lib);
        free(v);
        return NULL;
    }
    if (v->n > G3_NVML_MAX)
        v->n = G3_NVML_MAX;
    for (unsigned int i = 0; i < v->n; i++) {
        g3_nvml_memory_t m;
        v->used[i] = -1;
        if (byindex(i, &v->dev[i]) == 0 && v->mem(v->dev[i], &m) == 0)
            v->used[i] = (double)m.used;
    }
    return v;
}

int g3_plan_nvml_used(g3_plan_nvml_t *v, const char *bus, double *before, double *now, char *why,
                      size_t why_len)
{
    void *dev = NULL;
    g3_nvml_memory_t m;
    int rc = v->bybus(bus, &dev);

    if (rc == 0)
        rc = v->mem(dev, &m);
    if (rc != 0) {
        snprintf(why, why_len, "NVML cannot read the memory of the GPU at PCI bus %s (NVML error %d)", bus, rc);
        return 0;
    }
    for (unsigned int i = 0; i < v->n; i++)
        if (v->dev[i] == dev && v->used[i] >= 0) {
            *before = v->used[i];
            *now = (double)m.used;
            return 1;
        }
    snprintf(why, why_len, "NVML did not list the GPU at PCI bus %s before the backend opened", bus);
    return 0;
}

void g3_plan_nvml_close(g3_plan_nvml_t *v)
{
    if (!v)
        return;
    v->shutdown();
    dlclose(v->lib);
    free(v);
}
