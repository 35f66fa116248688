/* gpt3d core: the knob registry.  Every GPT3D_* environment variable the program reads is
 * declared once, below, with its type, its default and its meaning, and read through one
 * accessor, g3_param_<name>() (NCCL's NCCL_PARAM in src/include/param.h is the model);
 * `gpt3d help env` lists them (g3_param_print).
 *
 * Reading.  An accessor looks the variable up and parses it only when its text differs from
 * the text it parsed last (the value is cached per text: a knob read in a loop costs a
 * getenv, and a bad value is reported once, not at every read; a test that sets the variable
 * again sees the new value).  Unset or empty: the default.  A value that does not parse is
 * reported once as a warning naming the variable and what it takes, and the default applies.
 * Thread-safe.
 *
 * Types and what the accessor returns:
 *   STR   const char *: the environment's text, NULL when unset or empty (the caller
 *         checks the words)
 *   INT   int64_t: a whole decimal number >= the knob's minimum
 *   FLOAT double: a positive finite number
 *   BOOL  int: 0 or 1 (the words "0" and "1")
 *   SET   int: 1 when the variable is set at all (even empty), else 0
 *
 * Adding a knob: one X(...) line in G3_PARAMS; read it with g3_param_<name>(); document it
 * where its module is documented (docs/); `gpt3d help env` lists it by itself.  A variable
 * only tests or debuggers set goes in G3_PARAM_HOOKS instead, and is read through its
 * accessor in core/hook.h, so that what a test can make the program do is listed there.
 * Only this file's param.c calls getenv for a GPT3D_* variable (tests/style checks). */
#ifndef G3_CORE_PARAM_H
#define G3_CORE_PARAM_H

#include <stdint.h>
#include <stdio.h>

/* X(name, VARIABLE, TYPE, default, minimum (INT), default in words, meaning) */
#define G3_PARAMS(X) \
    X(log_level, "GPT3D_LOG_LEVEL", STR, 0, 0, "info", "Log level: error, warn, info, debug or trace (--log-level wins).") \
    X(data_dir, "GPT3D_DATA_DIR", STR, 0, 0, "$HOME/.cache/gpt3d", "Where gpt3d corpus keeps the built-in KJV corpus (DIR/kjv) and gpt3d train looks for it.") \
    X(fused_ops, "GPT3D_FUSED_OPS", BOOL, -1, 0, "the backend's (cuda 1, cpu 0)", "The compute backend's fused ops (the fused_ops option's default): 1 on, 0 off.") \
    X(cpu_peak_gflops, "GPT3D_CPU_PEAK_GFLOPS", FLOAT, 0, 0, "from /proc/cpuinfo", "The CPU's peak GFLOP/s for MFU, instead of threads x clock x FLOPs per cycle.") \
    X(gpu_peak_tflops, "GPT3D_GPU_PEAK_TFLOPS", FLOAT, 0, 0, "the GPU's data sheet", "The GPU's dense bf16 peak TFLOP/s for MFU, instead of the data sheet's by device name.") \
    X(gemm_autotune, "GPT3D_GEMM_AUTOTUNE", BOOL, -1, 0, "1 for one process", "CUDA: time cuBLASLt's candidate algorithms of each GEMM shape at its first use and keep the fastest (the gemm_autotune option's default); 0 off. Off with --deterministic and when the launcher starts several processes.") \
    X(gemm_bgrad, "GPT3D_GEMM_BGRAD", BOOL, 0, 0, "0", "CUDA: 1 fuses the bias gradient into the weight-gradient GEMM (cuBLASLt's BGRADB epilogue) where offered (not with --deterministic).") \
    X(ln_bwd, "GPT3D_LN_BWD", STR, 0, 0, "by width", "block: every LayerNorm backward width on the block-per-row CUDA kernel (to compare kernels; the CUDA backend passes it to kernels/layernorm_bwd.cu when it opens).") \
    X(comm_small_bytes, "GPT3D_COMM_SMALL_BYTES", INT, 65536, 0, "65536", "Collectives up to this many bytes take the small-message algorithms.") \
    X(comm_allreduce, "GPT3D_COMM_ALLREDUCE", STR, 0, 0, "auto", "The UCX all-reduce algorithm: auto, rd, rh, direct or ring.") \
    X(comm_spin, "GPT3D_COMM_SPIN", INT, -1, 0, "64, or 16 when local ranks outnumber cores", "Polling rounds of a waiting UCX rank before it sleeps on its event descriptor.") \
    X(comm_yield, "GPT3D_COMM_YIELD", INT, 1, 0, "1", "1: a polling UCX rank calls sched_yield between rounds; 0: it does not.") \
    X(comm_segment_bytes, "GPT3D_COMM_SEGMENT_BYTES", INT, 262144, 1, "262144 (fits the L2 with room)", "Segment size of the pipelined UCX ring reductions.") \
    X(cpu_env_set, "GPT3D_CPU_ENV_SET", STR, 0, 0, "unset", "Internal, not to be set by hand: gpt3d sets it (1, or 0 when the job's threads outnumber the CPUs) when it re-executes itself with GOMP_SPINCOUNT for the CPU backend, and clears it after reading it.")

/* The test and debugger hooks (core/hook.h reads them; `gpt3d help env` lists them apart):
 * the same columns. */
#define G3_PARAM_HOOKS(X) \
    X(staged_host, "GPT3D_STAGED_HOST", BOOL, 0, 0, "0", "Tests: 1 gives the CPU backend the staged (device through host) groups of --distributed-backend ucx.") \
    X(ckpt_timing, "GPT3D_CKPT_TIMING", SET, 0, 0, "unset", "Set: tests/ckpt/bench_ckpt prints the phases of every save and load on stderr (gpt3d train always logs them, docs/checkpoints.md).") \
    X(debug_stop_after_iteration, "GPT3D_DEBUG_STOP_AFTER_ITERATION", INT, -1, 0, "unset", "Tests and debuggers: after iteration N each trainer rank stops itself (SIGSTOP) until SIGCONT.") \
    X(debug_corpus_heartbeat_s, "GPT3D_DEBUG_CORPUS_HEARTBEAT_S", INT, 15, 1, "15", "Tests: seconds between the lines gpt3d corpus prints while a quiet tool (apt-get, npm) runs.")

typedef enum {
    G3_PARAM_STR,
    G3_PARAM_INT,
    G3_PARAM_FLOAT,
    G3_PARAM_BOOL,
    G3_PARAM_SET
} g3_param_type_t;

/* The knobs' ids: G3_PARAM_ID_log_level, ... */
#define G3_PARAM_ID(name, var, type, dflt, min, words, meaning) G3_PARAM_ID_##name,
typedef enum {
    G3_PARAMS(G3_PARAM_ID)
    G3_PARAM_HOOKS(G3_PARAM_ID)
    G3_PARAM_COUNT
} g3_param_id_t;
#undef G3_PARAM_ID

/* One row of the registry. */
typedef struct {
    const char     *var;       /* "GPT3D_LOG_LEVEL"                                 */
    g3_param_type_t type;
    double          dflt;      /* the value when unset or bad (INT, FLOAT, BOOL)    */
    double          min;       /* the smallest value an INT takes                   */
    const char     *words;     /* the default as `gpt3d help env` says it           */
    const char     *meaning;
    int             hook;      /* 1: a test or debugger hook (G3_PARAM_HOOKS)     */
} g3_param_info_t;

/* RET: the row of id (NULL out of range). */
const g3_param_info_t *g3_param_info(g3_param_id_t id);

/* The typed read of a STR knob (see the top); param.c's accessors are made of it and of its
 * numeric siblings (file-local there). */
const char *g3_param_str(g3_param_id_t id);

/* The accessors, one per knob: g3_param_log_level(), g3_param_fused_ops(), ... */
#define G3_PARAM_RET_STR   const char *
#define G3_PARAM_RET_INT   int64_t
#define G3_PARAM_RET_FLOAT double
#define G3_PARAM_RET_BOOL  int
#define G3_PARAM_RET_SET   int
#define G3_PARAM_DECLARE(name, var, type, dflt, min, words, meaning) \
    G3_PARAM_RET_##type g3_param_##name(void);
G3_PARAMS(G3_PARAM_DECLARE)
G3_PARAM_HOOKS(G3_PARAM_DECLARE)
#undef G3_PARAM_DECLARE

/* `gpt3d help env`: every knob, its default and its meaning (and its value when set), then
 * the test and debugger hooks the same way, to out. */
void g3_param_print(FILE *out);

#endif
