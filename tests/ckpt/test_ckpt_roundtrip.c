/* Checkpoint save/load: ZeRO range decomposition, save under every
 * TP/PP/DP layout in {1,2}^3 and load under every other one bitwise, bf16
 * tensors and f32 <-> bf16 loads, padded vocabularies, scalars, config checks,
 * keep-last pruning, re-saving an iteration, and the asynchronous writer. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
#include "core/log.h"
#include "synth.h"
#include "tap.h"

static char tmpdir[256];

static synth_cfg_t small_cfg(g3_ckpt_dtype_t dt, int64_t it)
{
    synth_cfg_t c = { 4, 16, 4, 64, 50, 64, 32, dt, 1, it };
    return c;
}

/* add_flat must cut a flat range into at most 2*ndim-1 boxes that are
 * consecutive in row-major order, inside the local box. */
static void test_flat(void)
{
    int ok = 1, maxboxes = 0;
    g3_ckpt_layout_t l = synth_layout(1, 1, 1, 0, 1);
    uint64_t seed = 7;

    for (int trial = 0; trial < 300 && ok; trial++) {
        g3_ckpt_state_t *st;
        g3_ckpt_tensor_t t;
        int64_t lo[4], le[4], start, count, vol = 1;
        float *data;
        int ndim = 1 + trial % 4;

        memset(&t, 0, sizeof(t));
        t.name = "model/x";
        t.dtype = G3_CKPT_F32;
        t.ndim = ndim;
        t.rule = g3_ckpt_rule_replicated(0);
        for (int k = 0; k < ndim; k++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            le[k] = 1 + (int64_t)((seed >> 33) % 5);
            lo[k] = (int64_t)((seed >> 40) % 3);
            t.shape[k] = lo[k] + le[k] + 1;
            vol *= le[k];
        }
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        start = (int64_t)((seed >> 33) % (uint64_t)vol);
        count = (int64_t)((seed >> 45) % (uint64_t)(vol - start + 1));
        data = malloc((size_t)(count + 1) * 4);
        g3_ckpt_state_init(&l, &st);
        if (g3_ckpt_state_add_flat(st, &t, lo, le, start, count, data) != G3_OK) {
            ok = 0;
        } else {
            /* internal view: walk the pieces in order */
            extern g3_ckpt_piece_t *test_pieces(g3_ckpt_state_t *, int *);
            int np;
            g3_ckpt_piece_t *p = test_pieces(st, &np);
            int64_t expect = start;
            if (np > 2 * ndim - 1)
                ok = 0;
            if (np > maxboxes)
                maxboxes = np;
            for (int i = 0; i < np && ok; i++) {
                /* the first element's local flat index must be `expect` */
                int64_t f = 0, v = 1;
                for (int k = 0; k < ndim; k++) {
                    f = f * le[k] + (p[i].offset[k] - lo[k]);
                    if (p[i].offset[k] < lo[k] || p[i].offset[k] + p[i].extent[k] > lo[k] + le[k])
                        ok = 0;
                    v *= p[i].extent[k];
                }
                if (f != expect || (char *)p[i].data != (char *)data + (expect - start) * 4)
                    ok = 0;
                /* contiguity: a box is contiguous if only its leading partial dim is < full */
                for (int k = 0, seen = 0; k < ndim; k++) {
                    if (seen && p[i].extent[k] != le[k])
                        ok = 0;
                    if (p[i].extent[k] > 1)
                        seen = 1;
                }
                expect += v;
            }
            if (expect != start + count)
                ok = 0;
            if (!ok)
                tap_diag("trial %d: ndim %d start %lld count %lld -> %d boxes", trial, ndim,
                         (long long)start, (long long)count, np);
        }
        g3_ckpt_state_free(st);
        free(data);
    }
    tap_ok(ok, "ZeRO flat ranges become at most 2*ndim-1 consecutive boxes (max seen %d)", maxboxes);
}

static void test_layouts(void)
{
    static const int lay[8][3] = { { 1, 1, 1 }, { 2, 1, 1 }, { 1, 2, 1 }, { 1, 1, 2 },
                                   { 2, 2, 1 }, { 2, 1, 2 }, { 1, 2, 2 }, { 2, 2, 2 } };
    char dir[300];
    int all_ok = 1;

    for (int s = 0; s < 8; s++) {
        synth_cfg_t c = small_cfg(s == 7 ? G3_CKPT_BF16 : G3_CKPT_F32, 100 + s);
        g3_status_t st;
        int failed = 0;

        snprintf(dir, sizeof(dir), "%s/lay%d", tmpdir, s);
        st = synth_save(dir, &c, lay[s][0], lay[s][1], lay[s][2], NULL);
        if (!tap_ok(st == G3_OK, "save under TP %d x PP %d x DP %d (%s model, ZeRO-1 optimizer)", lay[s][0],
                    lay[s][1], lay[s][2], g3_ckpt_dtype_name(c.mdtype))) {
            all_ok = 0;
            continue;
        }
        for (int d = 0; d < 8; d++) {
            int bad = -1;
            st = synth_check(dir, &c, lay[d][0], lay[d][1], lay[d][2], NULL, &bad);
            if (st != G3_OK || bad != 0) {
                failed++;
                tap_diag("saved %dx%dx%d, loaded %dx%dx%d: %s, %d buffers differ", lay[s][0], lay[s][1],
                         lay[s][2], lay[d][0], lay[d][1], lay[d][2], g3_status_string(st), bad);
            }
        }
        tap_ok(failed == 0, "  ... loads bitwise under all 8 layouts (%d failed)", failed);
        all_ok &= failed == 0;
    }
    {   /* DP 3 (ZeRO ranges that cut rows), TP 4, PP 4 from the 2x2x2 one */
        synth_cfg_t c = small_cfg(G3_CKPT_BF16, 107);
        int bad = -1;
        g3_status_t st;
        snprintf(dir, sizeof(dir), "%s/lay7", tmpdir);
        st = synth_check(dir, &c, 4, 4, 3, NULL, &bad);
        tap_ok(st == G3_OK && bad == 0, "2x2x2 checkpoint loads under TP 4 x PP 4 x DP 3 (%s, %d differ)",
               g3_status_string(st), bad);
    }
    {   /* a bf16 model loaded into f32 buffers */
        synth_cfg_t c = small_cfg(G3_CKPT_BF16, 107);
        g3_ckpt_layout_t l = synth_layout(2, 1, 1, 1, 4);
        synth_params_t *ps = malloc(sizeof(*ps));
        g3_ckpt_state_t *st;
        g3_ckpt_tensor_t t;
        float got[3 * 16 * 16 / 2];
        int ok = 1;

        synth_model_params(&c, ps);
        t = ps->t[4];          /* layers.0.attention.qkv.weight */
        t.dtype = G3_CKPT_F32;
        g3_ckpt_state_init(&l, &st);
        g3_ckpt_state_add_local(st, &t, 1, 2, got);
        snprintf(dir, sizeof(dir), "%s/lay7", tmpdir);
        ok = g3_ckpt_load(dir, st, NULL, NULL, NULL) == G3_OK;
        for (int64_t k = 0; ok && k < 3 * 16 * 8; k++) {
            uint16_t b;
            float want;
            uint32_t u;
            synth_value(t.name, 107, synth_global_index(&t, 1, 2, k), G3_CKPT_BF16, &b);
            u = (uint32_t)b << 16;
            memcpy(&want, &u, 4);
            ok = got[k] == want;
        }
        tap_ok(ok, "a bf16 tensor loads into an f32 buffer (%s)", t.name);
        g3_ckpt_state_free(st);
        free(ps);
    }
    (void)all_ok;
}

/* Test hook: the pieces of the only tensor of a state (white-box). */
#include "ckpt/ckpt_internal.h"
g3_ckpt_piece_t *test_pieces(g3_ckpt_state_t *st, int *n);
g3_ckpt_piece_t *test_pieces(g3_ckpt_state_t *st, int *n)
{
    *n = st->tensors[0].npieces;
    return st->tensors[0].pieces;
}

static void test_scalars_and_config(void)
{
    char dir[300], buf[64];
    synth_cfg_t c = small_cfg(G3_CKPT_F32, 5);
    g3_ckpt_reader_t *r = NULL;
    int64_t rng[2] = { 0, 0 };
    double lr = 0;
    g3_ckpt_load_opts_t o;
    synth_rank_t got;
    g3_ckpt_layout_t l = synth_layout(1, 1, 1, 0, 4);
    g3_status_t st;

    snprintf(dir, sizeof(dir), "%s/scalars", tmpdir);
    synth_save(dir, &c, 1, 1, 1, NULL);
    synth_build(&got, &c, &l, 0);
    memset(&o, 0, sizeof(o));
    st = g3_ckpt_load(dir, got.state, &o, NULL, &r);
    tap_ok(st == G3_OK && r != NULL, "load returns the reader");
    if (r == NULL)
        return;
    tap_ok(g3_ckpt_reader_iteration(r) == 5 && g3_ckpt_reader_consumed_samples(r) == 320 &&
           g3_ckpt_reader_consumed_tokens(r) == 320 * 128, "iteration and consumed samples/tokens");
    tap_ok(g3_ckpt_reader_get_i64(r, "rng", rng, 2) == G3_OK && rng[0] == 1234 && rng[1] == 5, "int64 state");
    tap_ok(g3_ckpt_reader_get_f64(r, "lr", &lr, 1) == G3_OK && lr == 1e-4 / 6, "float64 state");
    tap_ok(g3_ckpt_reader_get_str(r, "note", buf, sizeof(buf)) == G3_OK && strcmp(buf, "synthetic") == 0,
           "string state");
    tap_ok(g3_ckpt_reader_get_i64(r, "nope", rng, 1) == G3_ERR_NOT_FOUND, "a missing key is NOT_FOUND");
    tap_ok(g3_ckpt_reader_get_i64(r, "rng", rng, 3) == G3_ERR_FORMAT, "a count mismatch is FORMAT");
    tap_ok(strstr(g3_ckpt_reader_config(r), "hidden-size = 16") != NULL, "configuration text stored");
    g3_ckpt_reader_close(r);

    o.config_text = "num-layers = 4\nhidden-size = 16\nnum-attention-heads = 4\nffn-hidden-size = 64\nmax-position-embeddings = 32\n";
    tap_ok(g3_ckpt_load(dir, got.state, &o, NULL, NULL) == G3_OK, "an agreeing configuration loads");
    o.config_text = "num-layers = 4\nhidden-size = 32\nnum-attention-heads = 8\nffn-hidden-size = 64\nmax-position-embeddings = 32\n";
    tap_ok(g3_ckpt_load(dir, got.state, &o, NULL, NULL) == G3_ERR_INVALID_ARG,
           "a disagreeing configuration is refused (hidden-size, num-attention-heads)");
    synth_free(&got);

    {   /* shape mismatch and missing tensors */
        synth_cfg_t c2 = c;
        c2.h = 32;
        synth_build(&got, &c2, &l, 0);
        tap_ok(g3_ckpt_load(dir, got.state, NULL, NULL, NULL) == G3_ERR_INVALID_ARG,
               "a tensor shape mismatch is refused");
        synth_free(&got);
        c2 = c;
        c2.L = 5;
        l.num_layers = 5;
        synth_build(&got, &c2, &l, 0);
        tap_ok(g3_ckpt_load(dir, got.state, NULL, NULL, NULL) == G3_ERR_NOT_FOUND,
               "a tensor the checkpoint lacks is NOT_FOUND");
        synth_free(&got);
        l.num_layers = 4;
    }
    {   /* --no-save-optim, then load with and without --no-load-optim */
        g3_ckpt_save_opts_t so = { "t", 0, 1, NULL };
        int bad = -1;
        c.iteration = 6;
        synth_save(dir, &c, 2, 1, 1, &so);
        memset(&o, 0, sizeof(o));
        tap_ok(synth_check(dir, &c, 1, 1, 1, &o, &bad) == G3_ERR_NOT_FOUND,
               "optimizer state missing (saved with --no-save-optim) is refused");
        o.no_load_optim = 1;
        synth_build(&got, &c, &l, 0);
        {
            synth_rank_t want;
            synth_build(&want, &c, &l, 1);
            tap_ok(g3_ckpt_load(dir, got.state, &o, NULL, NULL) == G3_OK &&
                       got.sizes[0] == want.sizes[0] &&
                       memcmp(got.bufs[0], want.bufs[0], got.sizes[0]) == 0,
                   "--no-load-optim loads the model only");
            synth_free(&want);
        }
        synth_free(&got);
    }
}

static void test_padding(void)
{
    char dir[300];
    synth_cfg_t c = small_cfg(G3_CKPT_F32, 9);
    synth_cfg_t c2 = c;
    g3_ckpt_layout_t l = synth_layout(1, 1, 1, 0, 4);
    synth_rank_t got;
    const float *emb;
    int ok = 1;

    snprintf(dir, sizeof(dir), "%s/pad", tmpdir);
    synth_save(dir, &c, 2, 1, 1, NULL);         /* Vp = 64 */
    c2.Vp = 56;                                 /* a run that pads less */
    synth_build(&got, &c2, &l, 0);
    ok = g3_ckpt_load(dir, got.state, NULL, NULL, NULL) == G3_OK;
    emb = got.bufs[0];                          /* (56, 16) */
    for (int64_t i = 0; ok && i < 56 * 16; i++) {
        float want;
        synth_value("model/embedding.word_embeddings.weight", 9, i, G3_CKPT_F32, &want);
        ok = memcmp(&emb[i], &want, 4) == 0;
    }
    tap_ok(ok, "vocabulary padding: a run with Vp 56 loads the first 56 rows of a Vp 64 checkpoint");
    synth_free(&got);
    c2.Vp = 72;
    synth_build(&got, &c2, &l, 0);
    ok = g3_ckpt_load(dir, got.state, NULL, NULL, NULL) == G3_OK;
    emb = got.bufs[0];
    for (int64_t i = 0; ok && i < 72 * 16; i++) {
        float want;
        unsigned char pat[4] = { 0xAB, 0xAB, 0xAB, 0xAB };
        synth_value("model/embedding.word_embeddings.weight", 9, i, G3_CKPT_F32, &want);
        ok = i < 64 * 16 ? memcmp(&emb[i], &want, 4) == 0 : memcmp(&emb[i], pat, 4) == 0;
    }
    tap_ok(ok, "vocabulary padding: a run with Vp 72 loads 64 rows and keeps its own 8 extra rows");
    synth_free(&got);
}

static int count_entries(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)) != NULL)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d)
        closedir(d);
    return n;
}

static void test_keep_last_and_resave(void)
{
    char dir[300];
    g3_ckpt_save_opts_t so = { "job7", 2, 0, NULL };
    int64_t *iters = NULL, latest = -1;
    int n = 0, bad = -1;

    snprintf(dir, sizeof(dir), "%s/keep", tmpdir);
    for (int it = 1; it <= 5; it++) {
        synth_cfg_t c = small_cfg(G3_CKPT_F32, it * 10);
        synth_save(dir, &c, 1, 2, 2, &so);
    }
    g3_ckpt_list(dir, &iters, &n);
    tap_ok(n == 2 && iters[0] == 40 && iters[1] == 50, "--keep-last 2 keeps iterations 40 and 50 (%d left)", n);
    free(iters);
    tap_ok(g3_ckpt_latest(dir, &latest) == G3_OK && latest == 50, "latest names iteration 50");
    tap_ok(count_entries(dir, "iter_") == 2 && count_entries(dir, "latest") == 1, "no debris left behind");
    {   /* saving iteration 50 again replaces it atomically */
        synth_cfg_t c = small_cfg(G3_CKPT_F32, 50);
        c.optim = 0;
        tap_ok(synth_save(dir, &c, 2, 1, 1, &so) == G3_OK, "re-saving an existing iteration succeeds");
        tap_ok(synth_check(dir, &c, 1, 1, 1, NULL, &bad) == G3_OK && bad == 0,
               "... and the new content (another layout, no optimizer) is what loads");
        tap_ok(count_entries(dir, "iter_") == 2, "... and the old copy is gone");
    }
    { /* keep-last never removes the checkpoint `latest` names, even if older ones have higher
       * numbers */
        synth_cfg_t c = small_cfg(G3_CKPT_F32, 45);
        c.optim = 0;
        synth_save(dir, &c, 1, 1, 1, &so);
        g3_ckpt_latest(dir, &latest);
        g3_ckpt_list(dir, &iters, &n);
        tap_ok(latest == 45 && n == 2 && (iters[0] == 45 || iters[1] == 45),
               "keep-last keeps a lower-numbered latest checkpoint");
        free(iters);
    }
}

static void test_async(void)
{
    char dir[300];
    synth_cfg_t c = small_cfg(G3_CKPT_F32, 77);
    g3_ckpt_layout_t l[2] = { synth_layout(2, 1, 1, 0, 4), synth_layout(2, 1, 1, 1, 4) };
    synth_rank_t r[2];
    g3_ckpt_async_t *a[2];
    g3_ckpt_save_opts_t so = { "async", 0, 0, NULL };
    const g3_ckpt_state_t *snap0 = NULL, *snap1 = NULL;
    int ok = 1, bad = -1;

    snprintf(dir, sizeof(dir), "%s/async", tmpdir);
    ok = g3_ckpt_save_prepare(dir, 77, &so) == G3_OK;
    for (int i = 0; i < 2; i++) {
        g3_ckpt_state_t *snap;
        synth_build(&r[i], &c, &l[i], 1);
        ok = ok && g3_ckpt_state_snapshot(r[i].state, &snap) == G3_OK;
        ok = ok && g3_ckpt_async_start(dir, snap, &so, &a[i]) == G3_OK;
        /* training goes on and changes the live buffers */
        for (int b = 0; b < r[i].nbufs; b++)
            memset(r[i].bufs[b], 0x11, r[i].sizes[b]);
    }
    tap_ok(ok, "snapshots taken and two writer threads started");
    ok = g3_ckpt_async_wait(a[0], &snap0) == G3_OK && g3_ckpt_async_wait(a[1], &snap1) == G3_OK &&
         g3_ckpt_async_done(a[0]) && g3_ckpt_async_done(a[1]);
    tap_ok(ok, "writer threads finished");
    tap_ok(g3_ckpt_commit(dir, snap0, &so) == G3_OK, "rank 0 commits the snapshot");
    g3_ckpt_async_free(a[0]);
    g3_ckpt_async_free(a[1]);
    synth_free(&r[0]);
    synth_free(&r[1]);
    tap_ok(synth_check(dir, &c, 1, 1, 2, NULL, &bad) == G3_OK && bad == 0,
           "the asynchronously saved checkpoint holds the values at snapshot time");
}

int main(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(tmpdir, sizeof(tmpdir), "%s/gpt3d-ckpt-rt.XXXXXX", t ? t : "/tmp");
    tap_mkdtemp(tmpdir);
    g3_log_set_level(G3_LOG_ERROR);
    test_flat();
    test_layouts();
    test_scalars_and_config();
    test_padding();
    test_keep_last_and_resave();
    test_async();
    tap_rmtree(tmpdir);
    return tap_exit();
}
