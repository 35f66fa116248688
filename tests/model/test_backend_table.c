/* The table of backend kinds and the options given at open (backend.h): the defaults, the
 * --device and --attention-backend words, each row's capabilities and buffer sizes as gpt3d
 * plan reads them without a device, the CPU's refusal of cuDNN attention (the message names
 * the flag and the fix), and the fused_ops option against its GPT3D_FUSED_OPS default. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/log.h"
#include "g3cuda.h"   /* the CUDA kernels' sizes (every build) */
#include "tap.h"

static void test_words(void)
{
    static const char *const att[] = { "auto", "native", "cudnn" };
    g3_be_opts_t o;
    g3_be_att_t a = G3_BE_ATT_AUTO;
    g3_be_kind_t k = G3_BE_KIND_CPU;
    char why[256] = "";
    int ok = 1;

    g3_be_opts_default(&o);
    tap_ok(o.nthreads == 0 && o.device == -1 && o.attention == G3_BE_ATT_AUTO &&
               o.fused_ops == -1 && o.gemm_autotune == -1 && o.deterministic == 0,
           "the default options: OpenMP's threads, the local rank's device, auto attention, the backend's fused ops and autotuning, not deterministic");
    for (int i = 0; i < 3; i++)
        ok &= g3_be_att_parse(att[i], &a) == G3_OK && (int)a == i &&
              strcmp(g3_be_att_name(a), att[i]) == 0;
    tap_ok(ok, "auto, native and cudnn parse and name back");
    tap_ok(g3_be_att_parse("flash", &a) == G3_ERR_INVALID_ARG &&
               g3_be_att_parse(NULL, &a) == G3_ERR_INVALID_ARG,
           "another attention word is refused");
    tap_ok(g3_be_kind_parse("cpu", &k, why, sizeof(why)) == G3_OK && k == G3_BE_KIND_CPU &&
               g3_be_kind_parse("cuda", &k, why, sizeof(why)) == G3_OK && k == G3_BE_KIND_CUDA,
           "--device cpu and cuda name the two rows");
    tap_ok(g3_be_kind_parse("tpu", &k, why, sizeof(why)) == G3_ERR_UNSUPPORTED &&
               strstr(why, "'tpu'") && strstr(why, "--device cpu or cuda"),
           "an unknown --device word is refused, naming the choices: %s", why);
    ok = g3_be_kind(G3_BE_KINDS) == NULL && g3_be_kind((g3_be_kind_t)-1) == NULL;
    for (int i = 0; i < G3_BE_KINDS; i++)
        ok &= g3_be_kind((g3_be_kind_t)i) && g3_be_kind((g3_be_kind_t)i)->kind == i;
    tap_ok(ok, "every row sits at its kind; no row past the table");
}

static void test_rows(void)
{
    g3_backend_t cpu, cuda;
    char why[512] = "";

    g3_be_describe(G3_BE_KIND_CPU, NULL, &cpu);
    g3_be_describe(G3_BE_KIND_CUDA, NULL, &cuda);
    tap_ok(cpu.host_memory && (cpu.caps & G3_BE_CAP_HOST_MEMORY) &&
               !(cpu.caps & G3_BE_CAP_XENT_SHARDED) && cpu.act_dtype == G3_BE_F32 &&
               !strcmp(cpu.name, "cpu") && cpu.ops == NULL,
           "cpu on paper: host memory, fp32, host cross-entropy statistics, no ops");
    tap_ok(!cuda.host_memory && (cuda.caps & G3_BE_CAP_XENT_SHARDED) &&
               cuda.act_dtype == G3_BE_BF16 && !strcmp(cuda.name, "cuda"),
           "cuda on paper: device memory, bf16, sharded cross-entropy statistics");
    tap_ok(g3_be_att_state_bytes(&cpu, 2, 16, 3, 8) == (size_t)2 * 3 * 16 * 16 * 4 &&
               g3_be_att_scratch_bytes(&cpu, 2, 16, 3, 8) == (size_t)2 * 3 * 16 * 16 * 4,
           "cpu keeps the (B,NH,T,T) fp32 probabilities and as much scratch");
    tap_ok(g3_be_att_state_bytes(&cuda, 2, 16, 3, 8) == (size_t)2 * 3 * 16 * 4 &&
               g3_be_att_scratch_bytes(&cuda, 2, 16, 3, 8) == 0,
           "cuda keeps the (B,NH,T) fp32 log-sum-exps and no scratch");
    tap_ok(g3_be_check_sizes(G3_BE_KIND_CPU, NULL, 100, 3, 33, 77, 13, why, sizeof(why)) ==
               G3_OK,
           "cpu runs any size");
    tap_ok(g3_be_check_sizes(G3_BE_KIND_CUDA, NULL, 768, 12, 64, 3072, 50304, why,
                             sizeof(why)) == G3_OK,
           "cuda runs GPT-2 small's sizes");
    tap_ok(g3_be_check_sizes(G3_BE_KIND_CUDA, NULL, 768, 16, 48, 3072, 50304, why,
                             sizeof(why)) == G3_ERR_UNSUPPORTED &&
               strstr(why, "head size 48") && strstr(why, "--device cpu"),
           "cuda refuses a head size its kernels lack, naming it and the fix: %s", why);
    tap_ok(strstr(why, "(32, 64, 80, 96, 128, 160)") != NULL,
           "... and lists the head sizes of G3CUDA_ATT_HEAD_SIZES");
    {
        int all = 1;
#define G3_TEST_HS(n) \
    all &= g3_be_check_sizes(G3_BE_KIND_CUDA, NULL, 8 * (n), 8, (n), 3072, 50304, why, \
                             sizeof(why)) == G3_OK;
        G3CUDA_ATT_HEAD_SIZES(G3_TEST_HS)
#undef G3_TEST_HS
        tap_ok(all, "cuda runs every head size of G3CUDA_ATT_HEAD_SIZES (kernels/g3cuda.h)");
    }
    tap_ok(g3_be_check_sizes(G3_BE_KIND_CUDA, NULL, G3CUDA_LN_MAX_C, G3CUDA_LN_MAX_C / 128, 128,
                             3072, 50304, why, sizeof(why)) == G3_OK,
           "cuda runs the widest LayerNorm, G3CUDA_LN_MAX_C = %d", G3CUDA_LN_MAX_C);
    tap_ok(g3_be_check_sizes(G3_BE_KIND_CUDA, NULL, G3CUDA_LN_MAX_C + 128,
                             G3CUDA_LN_MAX_C / 128 + 1, 128, 3072, 50304, why,
                             sizeof(why)) == G3_ERR_UNSUPPORTED &&
               strstr(why, "more than 24576"),
           "... and refuses one wider, naming the limit: %s", why);
}

static void test_cudnn_on_cpu(void)
{
    g3_be_opts_t o;
    g3_backend_t *be = NULL;
    char why[512] = "";
    int ok = 1;

    g3_be_opts_default(&o);
    o.attention = G3_BE_ATT_CUDNN;
    tap_ok(g3_be_probe(G3_BE_KIND_CPU, &o, why, sizeof(why)) == G3_ERR_UNSUPPORTED &&
               strstr(why, "--attention-backend cudnn") && strstr(why, "--device cuda") &&
               strstr(why, "--attention-backend auto or native"),
           "cpu refuses --attention-backend cudnn, naming the flag and the fix: %s", why);
    tap_ok(g3_be_check_sizes(G3_BE_KIND_CPU, &o, 64, 4, 16, 256, 128, why, sizeof(why)) ==
               G3_ERR_UNSUPPORTED,
           "... and so does its context-free check (gpt3d plan)");
    tap_ok(g3_be_open(G3_BE_KIND_CPU, &o, &be) == G3_ERR_UNSUPPORTED && be == NULL,
           "... and its open");
    for (int a = G3_BE_ATT_AUTO; a <= G3_BE_ATT_NATIVE; a++) {
        o.attention = (g3_be_att_t)a;
        be = NULL;
        ok &= g3_be_open(G3_BE_KIND_CPU, &o, &be) == G3_OK && be->opts.attention == a &&
              be->kind == g3_be_kind(G3_BE_KIND_CPU) && be->host_memory;
        g3_be_close(be);
    }
    tap_ok(ok, "cpu opens with auto and native attention and keeps the option");
}

/* GPT3D_FUSED_OPS=1 is set before anything reads it: the fused_ops option's default. */
static void test_fused_option(void)
{
    g3_be_opts_t o;
    g3_backend_t *be = NULL;
    int ok;

    g3_be_opts_default(&o);
    ok = g3_be_open(G3_BE_KIND_CPU, &o, &be) == G3_OK;
    tap_ok(ok && be->ops->matmul_gelu_fwd && be->ops->adamw_scaled,
           "fused_ops -1 takes GPT3D_FUSED_OPS=1: the fused ops are filled");
    if (ok)
        g3_be_close(be);
    o.fused_ops = 0;
    ok = g3_be_open(G3_BE_KIND_CPU, &o, &be) == G3_OK;
    tap_ok(ok && !be->ops->matmul_gelu_fwd && !be->ops->adamw_scaled,
           "fused_ops 0 wins over GPT3D_FUSED_OPS=1");
    if (ok)
        g3_be_close(be);
}

int main(void)
{
    setenv("GPT3D_FUSED_OPS", "1", 1);
    g3_log_set_level(G3_LOG_ERROR);
    test_words();
    test_rows();
    test_cudnn_on_cpu();
    test_fused_option();
    return tap_exit();
}
