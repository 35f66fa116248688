/* gpt3d plan's host-side GPU logic, on any machine: the --gpu table and the driver names it
 * matches, the local GPU's name read from a driver directory (a fake one here), NVML missing
 * (this machine has none: the calibration then says why), and the ops the model's passes
 * queue, counted on a backend that only counts (src/plan/count.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/gpt.h"
#include "plan/count.h"
#include "plan/gpu.h"
#include "plan/time.h"
#include "tap.h"

static void put(const char *dir, const char *bus, const char *text)
{
    char p[1024];
    FILE *f;
    snprintf(p, sizeof(p), "%s/%s", dir, bus);
    mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/%s/information", dir, bus);
    f = fopen(p, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static const char *match(const char *device)
{
    const g3_plan_gpu_t *g = g3_plan_gpu_match(device);
    return g ? g->name : "none";
}

/* The ops of one pass of the tiny GPT the calibration times (time.c). */
static double tiny_ops(g3_be_kind_t kind, int fused)
{
    g3_gpt_config_t c;
    g3_be_opts_t o;
    double n = -1;
    g3_plan_tiny(&c);
    g3_be_opts_default(&o);
    o.fused_ops = fused;
    if (g3_plan_count_pass(&c, kind, &o, 1, 64, &n) != G3_OK)
        return -1;
    return n;
}

int main(void)
{
    char tmpl[512], name[128], why[256] = "";
    const char *tmpdir = getenv("TMPDIR");
    const g3_plan_gpu_t *g;
    g3_plan_nvml_t *v;
    char *root;

    tap_ok(strcmp(match("NVIDIA H200"), "h200") == 0, "NVIDIA H200 is h200");
    tap_ok(strcmp(match("NVIDIA GH200 480GB"), "h200") == 0, "NVIDIA GH200 480GB is h200");
    tap_ok(strcmp(match("NVIDIA H100 80GB HBM3"), "h100") == 0, "NVIDIA H100 80GB HBM3 is h100");
    tap_ok(strcmp(match("NVIDIA A100-SXM4-80GB"), "a100-80gb") == 0, "A100-SXM4-80GB is a100-80gb");
    tap_ok(strcmp(match("NVIDIA A100 80GB PCIe"), "a100-80gb") == 0, "A100 80GB PCIe is a100-80gb");
    tap_ok(strcmp(match("NVIDIA A100-PCIE-40GB"), "a100-40gb") == 0, "A100-PCIE-40GB is a100-40gb");
    tap_ok(strcmp(match("Tesla V100-SXM2-16GB"), "none") == 0, "a V100 is not in the table");
    g = g3_plan_gpu_row("h200");
    tap_ok(g && g->fixed_mib + g->nccl_mib == 2324.0 && g->memory_gib > 140.0 &&
               g->memory_gib < 141.0,
           "h200: 2,324 MiB fixed per process with NCCL's communicators (measured), 140.4 GiB");
    g = g3_plan_gpu_row("h100");
    tap_ok(g && g->fixed_mib == 573.0 && g->nccl_mib == 1763.0,
           "h100: 573 MiB fixed per process (measured), 1,763 MiB of NCCL's communicators");
    g = g3_plan_gpu_row("a100-40gb");
    tap_ok(g && strncmp(g->fixed_how, "not measured", 12) == 0, "a100-40gb: its fixed cost says it is not measured");
    tap_ok(g3_plan_gpu_row("h300") == NULL, "h300 is no --gpu word");

    snprintf(tmpl, sizeof(tmpl), "%s/g3_test_plan_gpu.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    root = mkdtemp(tmpl);
    if (!root)
        tap_skip_all("cannot make a temporary directory under $TMPDIR or /tmp");
    tap_ok(g3_plan_gpu_local(root, name, sizeof(name)) == 0, "an empty driver directory: no local GPU");
    put(root, "0000:3b:00.0", "Model: \t\t NVIDIA H200\nIRQ:   \t\t 42\n");
    put(root, "0000:1a:00.0", "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 41\n");
    tap_ok(g3_plan_gpu_local(root, name, sizeof(name)) == 1 && strcmp(name, "NVIDIA H100 80GB HBM3") == 0,
           "the local GPU: the Model line of the lowest bus id (%s)", name);
    tap_ok(g3_plan_gpu_local("/nonexistent/gpus", name, sizeof(name)) == 0, "no driver directory: no local GPU");
    {
        char p[1024];
        snprintf(p, sizeof(p), "%s/0000:1a:00.0/information", root);
        unlink(p);
        snprintf(p, sizeof(p), "%s/0000:1a:00.0", root);
        rmdir(p);
        snprintf(p, sizeof(p), "%s/0000:3b:00.0/information", root);
        unlink(p);
        snprintf(p, sizeof(p), "%s/0000:3b:00.0", root);
        rmdir(p);
        rmdir(root);
    }

    v = g3_plan_nvml_open(why, sizeof(why));
    if (v) {
        tap_skip("NVML is here: its absence cannot be tested");
        g3_plan_nvml_close(v);
    } else {
        tap_ok(strstr(why, "NVML") != NULL, "without NVML the calibration says why (%s)", why);
    }

    /* cuda (fused): 2 uploads, embedding, 2 x 8, final LayerNorm, one chunk of 4, the losses'
     * download, sync; zeroing, final LayerNorm backward, 2 x 7, embedding backward, sync */
    tap_ok(tiny_ops(G3_BE_KIND_CUDA, -1) == 44, "the tiny GPT on cuda: 44 ops (%g)", tiny_ops(G3_BE_KIND_CUDA, -1));
    /* without the fused ops: 10 forward and 8 backward per layer */
    tap_ok(tiny_ops(G3_BE_KIND_CUDA, 0) == 50, "on cuda without fused ops: 50 (%g)", tiny_ops(G3_BE_KIND_CUDA, 0));
    /* the cpu: its uploads and downloads are copies in host memory, not counted (3 fewer) */
    tap_ok(tiny_ops(G3_BE_KIND_CPU, -1) == 47, "on the cpu: 47 (%g)", tiny_ops(G3_BE_KIND_CPU, -1));
    tap_ok(tiny_ops(G3_BE_KIND_CPU, 1) == 41, "on the cpu with its fused ops: 41 (%g)", tiny_ops(G3_BE_KIND_CPU, 1));
    return tap_exit();
}
