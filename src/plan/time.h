/* gpt3d plan: time per iteration from measured speeds (docs/plan.md "Time per iteration").
 * A machine is what the model needs to know about the hardware: the rates of GEMMs (by size),
 * of the attention core and of memory-bound ops, and the links within and between nodes as
 * bandwidth and latency.  Built-in machines (DGX A100, DGX H100) come from datasheets; a
 * calibration file (gpt3d plan --calibrate FILE) holds what this machine measured.  Glossary
 * in plan.h. */
#ifndef G3_PLAN_TIME_H
#define G3_PLAN_TIME_H

#include "core/status.h"
#include "plan/count.h"
#include "plan/plan.h"

#define G3_PLAN_GEMM_POINTS 8

/* The precisions of a GEMM's operands, each with its own rates: bf16 (CUDA's products), fp32
 * (the CPU's), fp8 (a slot for the FP8 products to come: no machine fills it yet). */
typedef enum {
    G3_PLAN_PREC_BF16 = 0,
    G3_PLAN_PREC_FP32,
    G3_PLAN_PREC_FP8,
    G3_PLAN_PRECS
} g3_plan_prec_t;

/* GEMM rates of one precision, by the side of the cube of equal intensity (log-linear between
 * the points, the end points beyond). */
typedef struct {
    int    n;                             /* points; 0: no rate of this precision           */
    double size[G3_PLAN_GEMM_POINTS];
    double flops[G3_PLAN_GEMM_POINTS];    /* FLOP/s at each size                            */
} g3_plan_gemm_rates_t;

typedef struct g3_plan_machine {
    char   name[160];             /* "dgx-a100", "dgx-h100", or the file and what measured it */
    int    gpus_per_node;         /* ranks a node's fast link joins                          */
    g3_plan_gemm_rates_t gemm[G3_PLAN_PRECS];   /* GEMM rates per operand precision          */
    g3_plan_prec_t gemm_prec;     /* the precision the passes' products are timed at: what the
                                   * machine's `gemm` rates were measured in (bf16 for the
                                   * DGXs and a GPU's calibration, fp32 for a CPU's)          */
    double attn_flops;            /* attention core forward + backward, FLOP/s of 4 B T^2 C   */
    double mem_bw;                /* bytes/s of memory-bound ops (LayerNorm, GELU, adds, Adam) */
    double intra_bw, intra_lat;   /* within a node, per rank: bus bandwidth B/s, latency s    */
    double inter_bw, inter_lat;   /* between nodes, per rank                                  */
    double op_seconds;            /* the fixed cost of one backend op of the passes (launch,
                                   * host work, the shortest kernel, syncs): what does not
                                   * grow with the work; 0: not known                         */
    double fixed_bytes;           /* a process's fixed device memory (context, cuBLASLt and
                                   * its workspace); 0: not measured (the GPU table's)         */
    double nccl_bytes;            /* the device memory of a rank's four NCCL communicators;
                                   * 0: not measured (the GPU table's)                         */
    char   gpu[32];               /* the --gpu name of its GPU ("h200"), "" for none          */
} g3_plan_machine_t;

/* The calibration file's format (docs/plan.md "Calibration"): 2 added format, gpu, fixed and
 * op (issue 29).  A file of another format is refused. */
#define G3_PLAN_CAL_FORMAT 2

/* The parts of an iteration. */
enum {
    G3_PLAN_T_COMPUTE = 0,   /* GEMMs, attention, memory-bound ops of m micro-batches          */
    G3_PLAN_T_TP,            /* tensor-parallel all-reduces (or reduce-scatter + all-gather)   */
    G3_PLAN_T_P2P,           /* pipeline sends and receives                                     */
    G3_PLAN_T_BUBBLE,        /* (PP - 1) / V micro-batch times of idle pipeline                */
    G3_PLAN_T_DP,            /* the data-parallel reduction (and ZeRO-1 gathers) not overlapped */
    G3_PLAN_T_OPTIM,         /* the Adam step                                                   */
    G3_PLAN_T_PARTS
};

typedef struct {
    int    overlap_grad_reduce;   /* --overlap-grad-reduce                                     */
    int    overlap_param_gather;  /* --overlap-param-gather                                    */
    int    grad_reduce_bf16;      /* gradients reduced in bf16                                 */
    int    ranks_per_node;        /* --gpus-per-node when given (else the machine's)           */
} g3_plan_time_opts_t;

typedef struct {
    double seconds;                      /* per iteration                                  */
    double part[G3_PLAN_T_PARTS];        /* seconds of each part; they add up to seconds   */
    double micro_seconds;                /* one micro-batch of the slowest stage           */
    double tokens_per_s;
    double model_tflops_gpu;             /* model FLOPs (no recompute) / s / rank, TFLOP/s */
    double hw_tflops_gpu;                /* with recompute counted (Megatron's and MT-NLG's
                                          * convention: 96 B s l h^2 (...) with full)       */
    double ops_iter;                     /* backend ops of an iteration on the slowest stage */
    double fixed_seconds;                /* ops_iter x the machine's op_seconds: the fixed
                                          * costs of the ops, hidden or not                */
    double exposed_seconds;              /* what of them the GPU's work does not hide: their
                                          * share of compute and optimizer                */
} g3_plan_time_t;


/* RET: "compute", "tensor-parallel", ... */
const char *g3_plan_time_part_name(int part);

/* The built-in machine `name` ("dgx-a100", "dgx-h100").  RET: G3_ERR_INVALID_ARG (logged,
 * listing the names) for another name. */
g3_status_t g3_plan_machine_builtin(const char *name, g3_plan_machine_t *mc);

/* The machine of a DGX with GPUs of --gpu word `gpu` (h100: dgx-h100; h200: its HBM; the
 * A100s: dgx-a100 with their HBM).  RET: G3_ERR_INVALID_ARG (logged, naming the choices). */
g3_status_t g3_plan_machine_gpu(const char *gpu, g3_plan_machine_t *mc);

/* Read a calibration file (format G3_PLAN_CAL_FORMAT).  RET: G3_ERR_IO, G3_ERR_FORMAT (logged
 * with the file and line; another format: which, and to write it again). */
g3_status_t g3_plan_machine_read(const char *path, g3_plan_machine_t *mc);

/* Set c to the tiny GPT whose passes --calibrate times for the fixed cost of an op: 2 layers,
 * hidden 64 in one head, MLP 256, 64 tokens, a vocabulary of 128. */
void g3_plan_tiny(g3_gpt_config_t *c);

/* Measure this machine with a backend of `kind` (cpu; cuda on a GPU machine) opened with
 * options o (o->nthreads 0: the default, as gpt3d train) and write the calibration to path.
 * Prints what it measured.  RET: errors of the backend, G3_ERR_IO. */
g3_status_t g3_plan_calibrate(g3_be_kind_t kind, const g3_be_opts_t *o, const char *path);

/* The time of one iteration of p on mc.  RET: G3_OK (mc incomplete: G3_ERR_INVALID_ARG). */
g3_status_t g3_plan_time(const g3_plan_input_t *in, const g3_plan_t *p,
                         const g3_plan_machine_t *mc, const g3_plan_time_opts_t *o,
                         g3_plan_time_t *t);

#endif
