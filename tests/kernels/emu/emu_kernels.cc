/* The kernels' device code run on the CPU under tests/kernels/emu/shim.h (no GPU needed),
 * against the references of tests/kernels/ref.c with the tolerances of the GPU tests
 * (test_attention.c, test_layernorm.c, ...; see docs/cuda.md).  The launch configurations
 * below mirror the launchers in kernels/ (which the emulation cannot compile).  Built and run
 * by tests/kernels/test_emulated.sh, which first cuts each kernels/<op>.cu at its
 * "host launcher" marker into <op>_k.h. */
#include "shim.h"
#include "g3cuda_internal.cuh"
#include "attention_fwd_k.h"
#include "attention_bwd_k.h"
#include "layernorm_fwd_k.h"
#include "layernorm_bwd_k.h"
#include "xent_partial_k.h"
#include "xent_finish_k.h"
#include "xent_grad_k.h"
#include "xent_fused_k.h"
#include "bias_bwd_k.h"
#include "sumsq_k.h"
#include "embedding_fwd_k.h"
#include "embedding_bwd_k.h"
#include "gelu_fwd_k.h"
#include "gelu_bwd_k.h"
#include "adamw_k.h"
extern "C" {
#include "kernels/ref.h"
}
#include "tap.h"

#include <cstdio>
#include <numeric>

/* ok when every |got - want| <= rtol |want| + atol (atol < 0: -atol * max|want|) */
static void check(const char *what, const float *g, const double *w, size_t n, double rtol,
                  double atol)
{
    double wm = 0, r = 0;
    size_t wi = 0;
    for (size_t i = 0; i < n; i++)
        wm = fmax(wm, fabs(w[i]));
    if (atol < 0)
        atol = -atol * wm;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(g[i] - w[i]), al = rtol * fabs(w[i]) + atol;
        double q = al > 0 ? d / al : (d > 0 ? INFINITY : 0);
        if (!std::isfinite(g[i]))
            q = INFINITY;
        if (!(q <= r)) {
            r = q;
            wi = i;
        }
    }
    tap_ok(r <= 1, "%s: worst [%zu] got %g want %g (%.2f of its allowance)", what, wi,
           n ? g[wi] : 0.0, n ? w[wi] : 0.0, r);
}

static std::vector<uint16_t> tobf(const std::vector<float> &x)
{
    std::vector<uint16_t> h(x.size());
    ref_to_bf(h.data(), x.data(), x.size());
    return h;
}
static std::vector<float> frombf(const std::vector<uint16_t> &h)
{
    std::vector<float> x(h.size());
    ref_from_bf(x.data(), h.data(), h.size());
    return x;
}
#define BF(v) ((bf16 *)(v).data())

/* warp: layernorm_bwd.cu's warp-per-row kernel (C <= 2048, C % 8 == 0) instead of the block one */
static void ln(int N, int C, int fused, int sms, int warp = 0)
{
    size_t NC = (size_t)N * C;
    std::vector<float> a(NC), b(NC), w(C), bias(C), dout(NC), dinp0(NC), dw0(C), db0(C), rres(NC);
    ref_randn_bf(a.data(), NULL, NC, 1.0f, 3, "a");
    for (auto &x : a)
        x = ref_round_bf(x + 0.3f);
    ref_randn_bf(b.data(), NULL, NC, 1.0f, 3, "b");
    ref_randn_bf(w.data(), NULL, C, 0.2f, 3, "w");
    for (auto &x : w)
        x = ref_round_bf(1 + x);
    ref_randn_bf(bias.data(), NULL, C, 0.2f, 3, "bias");
    ref_randn_bf(dout.data(), NULL, NC, 1.0f, 3, "dout");
    ref_randn_bf(dinp0.data(), NULL, NC, 1.0f, 3, "dinp0");
    ref_randn(dw0.data(), C, 1.0f, 3, "dw0");
    ref_randn(db0.data(), C, 1.0f, 3, "db0");
    std::vector<double> rout(NC), rm(N), rr(N), rdinp(dinp0.begin(), dinp0.end()),
        rdw(dw0.begin(), dw0.end()), rdb(db0.begin(), db0.end());
    ref_layernorm_fwd(rres.data(), rout.data(), rm.data(), rr.data(), a.data(),
                      fused ? b.data() : NULL, w.data(), bias.data(), N, C, 1e-5);
    ref_layernorm_bwd(rdinp.data(), rdw.data(), rdb.data(), dout.data(),
                      fused ? rres.data() : a.data(), w.data(), N, C, 1e-5);
    auto ha = tobf(a), hb = tobf(b), hw = tobf(w), hbias = tobf(bias), hdout = tobf(dout),
         hdinp = tobf(dinp0);
    std::vector<uint16_t> hres(NC), hout(NC);
    std::vector<float> mean(N), rstd(N), dw(dw0), db(db0);
    int K = C <= 4096    ? 4
            : C <= 8192  ? 8
            : C <= 16384 ? 16
                         : 24,
        threads = ((C + K - 1) / K + 31) / 32 * 32;
    auto fwd = [&] {
        if (K == 4)
            g3_layernorm_fwd_kernel<4>(fused ? BF(hres) : NULL, BF(hout), mean.data(), rstd.data(),
                                       BF(ha), fused ? BF(hb) : NULL, BF(hw), BF(hbias), C, 1e-5f);
        else if (K == 8)
            g3_layernorm_fwd_kernel<8>(fused ? BF(hres) : NULL, BF(hout), mean.data(), rstd.data(),
                                       BF(ha), fused ? BF(hb) : NULL, BF(hw), BF(hbias), C, 1e-5f);
        else if (K == 16)
            g3_layernorm_fwd_kernel<16>(fused ? BF(hres) : NULL, BF(hout), mean.data(), rstd.data(),
                                        BF(ha), fused ? BF(hb) : NULL, BF(hw), BF(hbias), C, 1e-5f);
        else
            g3_layernorm_fwd_kernel<24>(fused ? BF(hres) : NULL, BF(hout), mean.data(), rstd.data(),
                                        BF(ha), fused ? BF(hb) : NULL, BF(hw), BF(hbias), C, 1e-5f);
    };
    emu_launch({(unsigned)N, 1}, threads, fwd);
    int per_sm = 2048 / threads > 0 ? 2048 / threads : 1, G = std::min(sms * per_sm, N);
    if (warp)
        G = std::min((N + G3_LNB_WARPS - 1) / G3_LNB_WARPS, sms * 2);
    std::vector<float> partial((size_t)2 * G * C);
    bf16 *x = fused ? BF(hres) : BF(ha);
    auto bwd = [&] {
        if (K == 4)
            g3_layernorm_bwd_kernel<4>(BF(hdinp), partial.data(), BF(hdout), x, BF(hw), mean.data(),
                                       rstd.data(), N, C);
        else if (K == 8)
            g3_layernorm_bwd_kernel<8>(BF(hdinp), partial.data(), BF(hdout), x, BF(hw), mean.data(),
                                       rstd.data(), N, C);
        else if (K == 16)
            g3_layernorm_bwd_kernel<16>(BF(hdinp), partial.data(), BF(hdout), x, BF(hw),
                                        mean.data(), rstd.data(), N, C);
        else
            g3_layernorm_bwd_kernel<24>(BF(hdinp), partial.data(), BF(hdout), x, BF(hw),
                                        mean.data(), rstd.data(), N, C);
    };
    auto bwd_warp = [&] {
        switch ((C + 255) / 256) {
#define LNB(n)                                                                                     \
    case n:                                                                                        \
        g3_layernorm_bwd_warp_kernel<n>(BF(hdinp), partial.data(), BF(hdout), x, BF(hw),          \
                                        mean.data(), rstd.data(), N, C);                           \
        break;
            LNB(1) LNB(2) LNB(3) LNB(4) LNB(5) LNB(6) LNB(7) LNB(8)
#undef LNB
        }
    };
    if (warp)
        emu_launch({(unsigned)G, 1}, 32 * G3_LNB_WARPS, bwd_warp);
    else
        emu_launch({(unsigned)G, 1}, threads, bwd);
    emu_launch({(unsigned)((C + 255) / 256), 1}, 256,
               [&] { g3_layernorm_bwd_sum_kernel(dw.data(), db.data(), partial.data(), G, C); });
    char what[128];
    std::vector<double> d(NC);
    if (fused) {
        for (size_t i = 0; i < NC; i++)
            d[i] = rres[i];
        snprintf(what, sizeof what, "ln N=%d C=%d fused: resid", N, C);
        check(what, frombf(hres).data(), d.data(), NC, 0, 0);
    }
    snprintf(what, sizeof what, "ln N=%d C=%d fused=%d G=%d%s: out", N, C, fused, G,
             warp ? " warp" : "");
    check(what, frombf(hout).data(), rout.data(), NC, 1.0 / 128, -1e-4);
    snprintf(what, sizeof what, "ln N=%d C=%d: mean", N, C);
    check(what, mean.data(), rm.data(), N, 1e-4, -1e-4);
    snprintf(what, sizeof what, "ln N=%d C=%d: rstd", N, C);
    check(what, rstd.data(), rr.data(), N, 1e-4, -1e-4);
    snprintf(what, sizeof what, "ln N=%d C=%d%s: dinp", N, C, warp ? " warp" : "");
    check(what, frombf(hdinp).data(), rdinp.data(), NC, 1.0 / 128, -1e-4);
    snprintf(what, sizeof what, "ln N=%d C=%d%s: dw", N, C, warp ? " warp" : "");
    check(what, dw.data(), rdw.data(), C, 1e-4, -1e-4);
    snprintf(what, sizeof what, "ln N=%d C=%d%s: db", N, C, warp ? " warp" : "");
    check(what, db.data(), rdb.data(), C, 1e-4, -1e-4);
}

static void xent(int N, int V, int ld, int shards)
{
    std::vector<float> lg((size_t)N * ld);
    std::vector<int32_t> tgt(N);
    ref_randn_bf(lg.data(), NULL, lg.size(), 3.0f, 8, "logits");
    ref_randint(tgt.data(), N, 0, V, 8, "targets");
    for (int i = 3; i < N; i += 5)
        tgt[i] = -1;
    std::vector<double> rl(N), rlse(N), rdl((size_t)N * V), rdl_ld((size_t)N * ld, 0.0);
    ref_xent(rl.data(), rlse.data(), rdl.data(), lg.data(), ld, tgt.data(), 1.0 / N, N, V);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < V; j++)
            rdl_ld[(size_t)i * ld + j] = rdl[(size_t)i * V + j];
    auto h = tobf(lg);
    std::vector<float> loss(N), lse(N);
    char what[128];
    if (shards == 1) {
        bool vec = ld % 8 == 0;
        emu_launch({(unsigned)N, 1}, 512, [&] {
            g3_xent_fused_kernel(loss.data(), lse.data(), BF(h), BF(h), ld, tgt.data(), 1.0f / N, V,
                                 vec);
        });
        snprintf(what, sizeof what, "xent fused N=%d V=%d ld=%d: loss", N, V, ld);
        check(what, loss.data(), rl.data(), N, 1e-5, -1e-5);
        snprintf(what, sizeof what, "xent fused: lse");
        check(what, lse.data(), rlse.data(), N, 1e-5, -1e-5);
        snprintf(what, sizeof what, "xent fused: dlogits");
        check(what, frombf(h).data(), rdl_ld.data(), rdl_ld.size(), 1.0 / 128, -1e-5);
        return;
    }
    // 3 shards of the columns [0,V) with their own strides
    int lo[3] = {0, V / 3, 2 * V / 3 + 1}, hi[3] = {V / 3, 2 * V / 3 + 1, V};
    std::vector<float> stats((size_t)3 * N * 3);
    std::vector<std::vector<uint16_t>> sh(3);
    int lds[3];
    for (int s = 0; s < 3; s++) {
        int w = hi[s] - lo[s];
        lds[s] = (w + 7) / 8 * 8 + 8;
        std::vector<float> part((size_t)N * lds[s], 0.0f);
        for (int i = 0; i < N; i++)
            memcpy(&part[(size_t)i * lds[s]], &lg[(size_t)i * ld + lo[s]], 4 * w);
        sh[s] = tobf(part);
        emu_launch({(unsigned)N, 1}, 512, [&] {
            g3_xent_partial_kernel(stats.data() + (size_t)s * N * 3, BF(sh[s]), lds[s], tgt.data(),
                                   w, lo[s], true);
        });
    }
    emu_launch({(unsigned)((N + 255) / 256), 1}, 256, [&] {
        g3_xent_finish_kernel(loss.data(), lse.data(), stats.data(), 3, tgt.data(), N);
    });
    snprintf(what, sizeof what, "xent 3 shards N=%d V=%d: loss", N, V);
    check(what, loss.data(), rl.data(), N, 1e-5, -1e-5);
    snprintf(what, sizeof what, "xent 3 shards: lse");
    check(what, lse.data(), rlse.data(), N, 1e-5, -1e-5);
    for (int s = 0; s < 3; s++) {
        int w = hi[s] - lo[s];
        emu_launch({(unsigned)N, 1}, 512, [&] {
            g3_xent_grad_kernel(BF(sh[s]), BF(sh[s]), lds[s], lse.data(), tgt.data(), 1.0f / N, w,
                                lo[s], true);
        });
        std::vector<double> r((size_t)N * lds[s], 0.0);
        for (int i = 0; i < N; i++)
            for (int j = 0; j < w; j++)
                r[(size_t)i * lds[s] + j] = rdl[(size_t)i * V + lo[s] + j];
        snprintf(what, sizeof what, "xent shard %d grad", s);
        check(what, frombf(sh[s]).data(), r.data(), r.size(), 1.0 / 128, -1e-5);
    }
}

static void bias(int N, int OC, int sms, int vec = 0)
{
    std::vector<float> dout((size_t)N * OC), db0(OC);
    ref_randn_bf(dout.data(), NULL, dout.size(), 1.0f, 5, "dout");
    ref_randn(db0.data(), OC, 1.0f, 5, "db0");
    std::vector<double> r(db0.begin(), db0.end());
    for (int c = 0; c < OC; c++)
        for (int i = 0; i < N; i++)
            r[c] += dout[(size_t)i * OC + c];
    auto h = tobf(dout);
    int gx = vec ? (OC + 255) / 256 : (OC + 31) / 32, R = sms * 8 / gx;
    if (R > (N + 63) / 64)
        R = (N + 63) / 64;
    if (R < 1)
        R = 1;
    int rows = (N + R - 1) / R;
    R = (N + rows - 1) / rows;
    std::vector<float> partial((size_t)R * OC), db(db0);
    emu_launch2({(unsigned)gx, (unsigned)R}, {32, 8}, [&] {
        if (vec)
            g3_bias_bwd_vec_kernel(partial.data(), BF(h), N, OC, rows);
        else
            g3_bias_bwd_kernel(partial.data(), BF(h), N, OC, rows);
    });
    emu_launch({(unsigned)((OC + 255) / 256), 1}, 256,
               [&] { g3_bias_bwd_sum_kernel(db.data(), partial.data(), R, OC); });
    char what[96];
    snprintf(what, sizeof what, "bias_bwd N=%d OC=%d R=%d%s", N, OC, R, vec ? " 16-byte" : "");
    check(what, db.data(), r.data(), OC, 1e-5, -1e-5);
}

static void sumsq(size_t n, int sms)
{
    std::vector<float> x(n);
    ref_randn_bf(x.data(), NULL, n, 2.0f, 12, "sumsq x");
    double want = 1.5;
    for (float v : x)
        want += (double)v * v;
    unsigned G = g3cuda_blocks(n, 256, sms * 4);
    std::vector<double> partial(G);
    double acc = 1.5;
    emu_launch({G, 1}, 256, [&] { g3_sumsq_kernel<float>(partial.data(), x.data(), n); });
    emu_launch({1, 1}, 32, [&] { g3_sumsq_total_kernel(&acc, partial.data(), G); });
    tap_close_f(acc, want, 1e-12, 0.0, "sumsq");
}

static void emb(int B, int T, int C, int V, int v0, int lo, int hi)
{
    int BT = B * T;
    std::vector<float> wte((size_t)V * C), wpe((size_t)T * C), dout((size_t)BT * C),
        dwte0((size_t)V * C), dwpe0((size_t)T * C);
    std::vector<int32_t> tok(BT);
    ref_randn_bf(wte.data(), NULL, wte.size(), 1, 2, "wte");
    ref_randn_bf(wpe.data(), NULL, wpe.size(), 1, 2, "wpe");
    ref_randn_bf(dout.data(), NULL, dout.size(), 1, 2, "dout");
    ref_randn(dwte0.data(), dwte0.size(), 1, 2, "dwte0");
    ref_randn(dwpe0.data(), dwpe0.size(), 1, 2, "dwpe0");
    ref_randint(tok.data(), BT, lo, hi, 2, "tokens");
    std::vector<double> rout((size_t)BT * C), rdwte(dwte0.begin(), dwte0.end()),
        rdwpe(dwpe0.begin(), dwpe0.end());
    ref_embedding_fwd(rout.data(), tok.data(), wte.data(), wpe.data(), B, T, C, v0, V);
    ref_embedding_bwd(rdwte.data(), rdwpe.data(), dout.data(), tok.data(), B, T, C, v0, V);
    auto hwte = tobf(wte), hwpe = tobf(wpe), hdout = tobf(dout);
    std::vector<uint16_t> hout((size_t)BT * C);
    bool vec = C % 8 == 0;
    size_t work = (size_t)BT * (vec ? C / 8 : C);
    unsigned blocks = g3cuda_blocks(work, 256, 8);
    emu_launch({blocks, 1}, 256, [&] {
        if (vec)
            g3_embedding_fwd_kernel<8>(BF(hout), tok.data(), BF(hwte), BF(hwpe), BT, T, C, v0, V);
        else
            g3_embedding_fwd_kernel<1>(BF(hout), tok.data(), BF(hwte), BF(hwpe), BT, T, C, v0, V);
    });
    std::vector<int32_t> keys_in(BT), pos_in(BT), keys(BT), pos(BT);
    emu_launch({(unsigned)((BT + 255) / 256), 1}, 256, [&] {
        g3_embedding_keys_kernel(keys_in.data(), pos_in.data(), tok.data(), BT, v0, V);
    });
    std::vector<int> idx(BT);
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](int p, int q) { return keys_in[p] < keys_in[q]; });
    for (int i = 0; i < BT; i++) {
        keys[i] = keys_in[idx[i]];
        pos[i] = pos_in[idx[i]];
    }
    std::vector<float> dwte(dwte0), dwpe(dwpe0);
    emu_launch({(unsigned)BT, (unsigned)((C + 127) / 128)}, 128, [&] {
        g3_embedding_dwte_kernel(dwte.data(), BF(hdout), keys.data(), pos.data(), BT, C, V);
    });
    size_t n = (size_t)T * C;
    emu_launch({(unsigned)((n + 255) / 256), 1}, 256,
               [&] { g3_embedding_dwpe_kernel(dwpe.data(), BF(hdout), B, T, C); });
    char what[96];
    snprintf(what, sizeof what, "embedding B=%d T=%d C=%d V=%d v0=%d: out", B, T, C, V, v0);
    check(what, frombf(hout).data(), rout.data(), rout.size(), 4e-3, -1e-6);
    snprintf(what, sizeof what, "embedding: dwte");
    check(what, dwte.data(), rdwte.data(), rdwte.size(), 1e-5, -1e-5);
    snprintf(what, sizeof what, "embedding: dwpe");
    check(what, dwpe.data(), rdwpe.data(), rdwpe.size(), 1e-5, -1e-5);
}

static void gelu(size_t n)
{
    std::vector<float> x(n), d(n);
    ref_randn_bf(x.data(), NULL, n, 2.0f, 4, "x");
    ref_randn_bf(d.data(), NULL, n, 1.0f, 4, "dout");
    std::vector<double> ry(n), rd(n);
    for (size_t i = 0; i < n; i++) {
        ry[i] = ref_gelu(x[i]);
        rd[i] = ref_gelu_grad(x[i]) * d[i];
    }
    auto hx = tobf(x), hd = tobf(d);
    std::vector<uint16_t> hy(n);
    bool vec = n % 8 == 0;
    unsigned blocks = g3cuda_blocks(vec ? n / 8 : n, 256, 4);
    emu_launch({blocks, 1}, 256, [&] {
        if (vec)
            g3_gelu_fwd_kernel<8>(BF(hy), BF(hx), n);
        else
            g3_gelu_fwd_kernel<1>(BF(hy), BF(hx), n);
    });
    emu_launch({blocks, 1}, 256, [&] {
        if (vec)
            g3_gelu_bwd_kernel<8>(BF(hd), BF(hx), BF(hd), n);
        else
            g3_gelu_bwd_kernel<1>(BF(hd), BF(hx), BF(hd), n);
    });
    char what[64];
    snprintf(what, sizeof what, "gelu n=%zu fwd", n);
    check(what, frombf(hy).data(), ry.data(), n, 1.0 / 128, -1e-4);
    snprintf(what, sizeof what, "gelu n=%zu bwd", n);
    check(what, frombf(hd).data(), rd.data(), n, 1.0 / 128, -1e-4);
}

static void adamw(size_t n)
{
    std::vector<float> p(n), g(n), m(n), v(n);
    ref_randn(p.data(), n, 1, 11, "p");
    ref_randn(g.data(), n, 1e-2f, 11, "g");
    ref_randn(m.data(), n, 1e-3f, 11, "m");
    ref_randn(v.data(), n, 1e-4f, 11, "v");
    for (auto &e : v)
        e = fabsf(e);
    auto P = p, M = m, Vv = v;
    std::vector<uint16_t> bf(n);
    float scale = 0.37f;
    for (int step = 1; step <= 2; step++) {
        ref_adamw(p.data(), g.data(), m.data(), v.data(), n, 3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, step,
                  scale);
        double bc1 = 1.0 - pow(0.9f, (double)step), bc2 = 1.0 - pow(0.95f, (double)step);
        emu_launch({2, 1}, 256, [&] {
            g3_adamw_kernel(P.data(), BF(bf), g.data(), M.data(), Vv.data(), n, 1.0f - 3e-4f * 0.1f,
                            0.9f, 0.95f, (float)(3e-4f / bc1), (float)sqrt(bc2), 1e-8f, &scale);
        });
    }
    std::vector<double> w(p.begin(), p.end());
    check("adamw master", P.data(), w.data(), n, 1e-6, -1e-6);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += bf[i] != ref_f2bf(P[i]);
    tap_ok(bad == 0, "adamw bf16 params = RNE(master) (%zu differ)", bad);
}

template <int HS> static void attention(int B, int T, int NH)
{
    int C = NH * HS;
    size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C, nl = (size_t)B * NH * T;
    std::vector<float> qkv(nq), dout(no), fo(no), fl(nl), fdq(nq);
    std::vector<double> ro(no), rl(nl), rdq(nq);
    std::vector<uint16_t> hq(nq), hd(no), ho(no), hdq(nq, 0x7fc0);
    ref_randn_bf(qkv.data(), hq.data(), nq, 1.0f, 6, "qkv");
    ref_randn_bf(dout.data(), hd.data(), no, 1.0f, 6, "dout");
    ref_attention_fwd(ro.data(), rl.data(), qkv.data(), B, T, NH, HS);
    ref_attention_bwd(rdq.data(), dout.data(), qkv.data(), B, T, NH, HS);
    std::vector<float> lse(nl), dvec(nl);
    bf16 *Q = (bf16 *)hq.data(), *O = (bf16 *)ho.data(), *DO = (bf16 *)hd.data(),
         *DQ = (bf16 *)hdq.data();
    int nT = (T + 63) / 64;
    emu_launch({(unsigned)nT, (unsigned)(B * NH)}, 128,
               [&] { g3_attention_fwd_kernel<HS>(O, lse.data(), Q, T, NH); });
    size_t rows = (size_t)B * T * NH;
    emu_launch({(unsigned)((rows * 32 + 255) / 256), 1}, 256,
               [&] { g3_att_dvec_kernel(dvec.data(), DO, O, B, T, NH, HS); });
    emu_launch({(unsigned)nT, (unsigned)(B * NH)}, 128,
               [&] { g3_att_dkv_kernel<HS>(DQ, DO, Q, lse.data(), dvec.data(), T, NH); });
    emu_launch({(unsigned)nT, (unsigned)(B * NH)}, 128,
               [&] { g3_att_dq_kernel<HS>(DQ, DO, Q, lse.data(), dvec.data(), T, NH); });
    ref_from_bf(fo.data(), ho.data(), no);
    ref_from_bf(fdq.data(), hdq.data(), nq);
    char what[96], w2[160];
    snprintf(what, sizeof what, "B=%d T=%d NH=%d HS=%d", B, T, NH, HS);
    snprintf(w2, sizeof w2, "attention_fwd out %s", what);
    check(w2, fo.data(), ro.data(), no, 1.0 / 128, -4e-3);
    snprintf(w2, sizeof w2, "attention_fwd lse %s", what);
    check(w2, lse.data(), rl.data(), nl, 1e-5, -1e-5);
    double all = 0;
    for (double v : rdq)
        all = fmax(all, fabs(v));
    const char *nm[3] = {"dq", "dk", "dv"};
    for (int p = 0; p < 3; p++) {
        std::vector<float> g(no);
        std::vector<double> r(no);
        double part = 0;
        for (size_t row = 0; row < (size_t)B * T; row++)
            for (int c = 0; c < C; c++) {
                g[row * C + c] = fdq[row * 3 * C + p * C + c];
                r[row * C + c] = rdq[row * 3 * C + p * C + c];
                part = fmax(part, fabs(r[row * C + c]));
            }
        snprintf(w2, sizeof w2, "attention_bwd %s %s", nm[p], what);
        check(w2, g.data(), r.data(), no, 1.0 / 64, 1e-2 * fmax(part, 1e-3 * all));
    }
}

int main()
{
    attention<64>(1, 1, 1);
    attention<32>(2, 7, 3);
    attention<64>(1, 64, 2);
    attention<64>(2, 65, 2);
    attention<64>(1, 200, 2);
    attention<128>(1, 130, 2);
    attention<80>(1, 100, 2);
    attention<96>(1, 70, 1);
    attention<160>(1, 90, 2);   /* MT-NLG's head size */
    /* layer norm: rows, columns, fused residual, SMs, the warp-per-row backward */
    static const int lns[][5] = {
        { 1, 5, 0, 2, 0 }, { 7, 64, 1, 2, 0 }, { 64, 768, 1, 2, 0 }, { 33, 1600, 0, 1, 0 },
        { 5, 4100, 1, 2, 0 }, { 3, 9000, 1, 132, 0 },
        { 2, 20480, 1, 2, 0 },    /* MT-NLG's hidden size: 24 columns per thread */
        { 1, 8, 0, 2, 1 },        /* the warp-per-row backward: one chunk, partial lanes */
        { 9, 768, 1, 2, 1 },      /* GPT-2 124M: 3 chunks per lane, 3 blocks, a ragged last one */
        { 13, 1600, 0, 1, 1 },    /* GPT-2 1.5B: 7 chunks, the last partly outside the row */
        { 5, 2048, 1, 3, 1 },     /* 8 chunks, the widest the warp kernel takes */
    };
    for (const auto &c : lns)
        ln(c[0], c[1], c[2], c[3], c[4]);
    /* cross-entropy: rows, vocabulary, row stride, vocabulary shards */
    static const int xents[][4] = { { 1, 5, 5, 1 },       { 7, 100, 104, 1 },
                                    { 33, 1000, 1003, 1 }, { 4, 50257, 50304, 1 },
                                    { 9, 300, 300, 3 },    { 3, 50257, 50304, 3 } };
    for (const auto &c : xents)
        xent(c[0], c[1], c[2], c[3]);
    /* bias gradient: rows, columns, SMs, the 16-byte variant */
    static const int biases[][4] = {
        { 5, 7, 2, 0 }, { 100, 768, 2, 0 }, { 300, 70, 1, 0 },
        { 5, 8, 2, 1 },         /* the 16-byte variant: one chunk */
        { 100, 768, 2, 1 },     /* 3 blocks of 256 columns */
        { 300, 2312, 3, 1 },    /* a partial last block, several row chunks */
    };
    for (const auto &c : biases)
        bias(c[0], c[1], c[2], c[3]);
    sumsq(1, 2);
    sumsq(100003, 2);
    emb(1, 1, 5, 3, 0, 0, 3);
    emb(2, 7, 64, 50, 0, 0, 50);
    emb(3, 33, 100, 17, 10, 0, 40);
    emb(2, 30, 96, 8, 0, 5, 6);
    gelu(1);
    gelu(7);
    gelu(1000);
    gelu(12345);
    adamw(1);
    adamw(1003);
    return tap_exit();
}
