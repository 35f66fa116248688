/* gpt3d ckpt export --format hf-gpt2: model.safetensors + config.json for
 * Hugging Face transformers' GPT2LMHeadModel (docs/checkpoint-format.md,
 * section 10).  Each tensor is loaded whole by global offsets (any layout),
 * transposed where HF's Conv1D wants [in, out], and streamed out. */
#include "ckpt/ckpt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"

typedef struct {
    char    hf[96];          /* Hugging Face name                           */
    char    src[160];        /* gpt3d tensor path                           */
    int     ndim;
    int64_t rows, cols;      /* rows of the source to take (drops padding)  */
    int     transpose;
} g3_ckpt_exp_tensor_t;

static void g3_ckpt_exp_add(g3_ckpt_exp_tensor_t *e, int *n, const char *hf, const char *src,
                            int ndim, int64_t rows, int64_t cols, int transpose)
{
    g3_ckpt_exp_tensor_t *t = &e[(*n)++];
    snprintf(t->hf, sizeof(t->hf), "%s", hf);
    snprintf(t->src, sizeof(t->src), "model/%s", src);
    t->ndim = ndim;
    t->rows = rows;
    t->cols = cols;
    t->transpose = transpose;
}

/* The tensor of layer l: transformer.h.<l>.<hfs> from layers.<l>.<srcs>. */
static void g3_ckpt_exp_layer(g3_ckpt_exp_tensor_t *e, int *n, long long l, const char *hfs,
                              const char *srcs, int ndim, int64_t rows, int64_t cols,
                              int transpose)
{
    char hf[96], src[128];

    snprintf(hf, sizeof(hf), "transformer.h.%lld.%s", l, hfs);
    snprintf(src, sizeof(src), "layers.%lld.%s", l, srcs);
    g3_ckpt_exp_add(e, n, hf, src, ndim, rows, cols, transpose);
}

static int g3_ckpt_config_int(const char *cfg, const char *key, long long *v)
{
    char buf[64], *end;
    if (g3_ckpt_config_get(cfg, key, buf, sizeof(buf)) == NULL)
        return 0;
    *v = strtoll(buf, &end, 10);
    return *end == '\0';
}

/* Load rows [0, rows) of a tensor as float32 (whole columns). */
static g3_status_t g3_ckpt_load_f32(g3_ckpt_reader_t *r, const char *name, int ndim, int64_t rows,
                                    int64_t cols, float *dst)
{
    g3_ckpt_layout_t l = { 1, 1, 1, 0, 0, 0, r->num_layers, NULL, 0 };
    g3_ckpt_state_t *st;
    g3_ckpt_tensor_t t;
    g3_ckpt_piece_t p;
    int ti = g3_ckpt_reader_find(r, name);
    g3_status_t s;

    if (ti < 0) {
        g3_error("export: checkpoint %s has no tensor %s, which GPT-2 needs", r->dir, name);
        return G3_ERR_NOT_FOUND;
    }
    g3_ckpt_reader_tensor(r, ti, &t);
    if (t.ndim != ndim || t.shape[0] < rows || (ndim == 2 && t.shape[1] != cols)) {
        g3_error(
            "export: tensor %s has shape (%lld, %lld) but GPT-2 with this configuration needs (%lld, %lld)",
            name, (long long)t.shape[0], (long long)(t.ndim > 1 ? t.shape[1] : 1), (long long)rows,
            (long long)(ndim > 1 ? cols : 1));
        return G3_ERR_FORMAT;
    }
    if (t.dtype != G3_CKPT_F32 && t.dtype != G3_CKPT_BF16) {
        g3_error("export: tensor %s is %s; only f32 and bf16 models can be exported", name,
                 g3_ckpt_dtype_name(t.dtype));
        return G3_ERR_UNSUPPORTED;
    }
    t.dtype = G3_CKPT_F32;
    t.rule = g3_ckpt_rule_replicated(0);     /* a one-rank state: rules do not matter */
    if (r->tensors[ti].pad_dim >= 0) {
        t.rule.pad_dim = r->tensors[ti].pad_dim;
        t.rule.unpadded = r->tensors[ti].unpadded;
    }
    memset(&p, 0, sizeof(p));
    p.extent[0] = rows;
    p.extent[1] = ndim > 1 ? cols : 1;
    p.extent[2] = p.extent[3] = 1;
    p.data = dst;
    l.num_layers = 1;
    s = g3_ckpt_state_init(&l, &st);
    if (s == G3_OK)
        s = g3_ckpt_state_add(st, &t, &p, 1);
    if (s == G3_OK)
        s = g3_ckpt_reader_load(r, st, NULL);
    g3_ckpt_state_free(st);
    return s;
}

static g3_status_t g3_ckpt_write_all(int fd, const void *buf, size_t n, const char *path)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            g3_error("export: cannot write %s: %s", path, strerror(errno));
            return G3_ERR_IO;
        }
        p += w;
        n -= (size_t)w;
    }
    return G3_OK;
}

static g3_status_t g3_ckpt_write_text_file(const char *path, const char *text)
{
    char tmp[PATH_MAX + 64];
    int fd;
    g3_status_t st;

    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0) {
        g3_error("export: cannot create %s: %s", tmp, strerror(errno));
        return G3_ERR_IO;
    }
    st = g3_ckpt_write_all(fd, text, strlen(text), tmp);
    if (st == G3_OK && fsync(fd) != 0)
        st = G3_ERR_IO;
    close(fd);
    if (st == G3_OK && rename(tmp, path) != 0) {
        g3_error("export: cannot rename %s to %s: %s", tmp, path, strerror(errno));
        st = G3_ERR_IO;
    }
    return st;
}

/* The GPT-2 model a checkpoint holds: shapes from its tensors, heads and layers from its
 * configuration. */
typedef struct {
    int64_t   h, V, P, f;        /* hidden size, vocabulary (unpadded), positions, ffn size */
    long long L, heads;          /* layers, attention heads                                 */
    char      eps[64];           /* layernorm-epsilon as stored, else 1e-05                 */
} g3_ckpt_exp_model_t;

static g3_status_t g3_ckpt_export_read_model(const g3_ckpt_reader_t *r, g3_ckpt_exp_model_t *m)
{
    int wi = g3_ckpt_reader_find(r, "model/embedding.word_embeddings.weight");
    int pi = g3_ckpt_reader_find(r, "model/embedding.position_embeddings.weight");
    int fi = g3_ckpt_reader_find(r, "model/layers.0.mlp.fc1.weight");

    if (wi < 0 || pi < 0 || fi < 0) {
        g3_error("export: %s is not a gpt3d GPT checkpoint: it lacks model/embedding.word_embeddings.weight, model/embedding.position_embeddings.weight or model/layers.0.mlp.fc1.weight",
                 r->dir);
        return G3_ERR_FORMAT;
    }
    m->h = r->tensors[wi].shape[1];
    m->V = r->tensors[wi].pad_dim == 0 ? r->tensors[wi].unpadded : r->tensors[wi].shape[0];
    m->P = r->tensors[pi].shape[0];
    m->f = r->tensors[fi].shape[0];
    if (!g3_ckpt_config_int(r->config, "num-layers", &m->L))
        m->L = r->num_layers;
    if (!g3_ckpt_config_int(r->config, "num-attention-heads", &m->heads) || m->heads <= 0 ||
        m->h % m->heads != 0) {
        g3_error("export: the configuration stored in %s has no usable num-attention-heads (hidden size %lld): GPT-2's config.json needs it",
                 r->dir, (long long)m->h);
        return G3_ERR_FORMAT;
    }
    if (g3_ckpt_config_get(r->config, "layernorm-epsilon", m->eps, sizeof(m->eps)) == NULL)
        snprintf(m->eps, sizeof(m->eps), "1e-05");
    return G3_OK;
}

/* The table of tensors to export, in safetensors order; each must be in the checkpoint.
 * RET: G3_OK with *e_p (the caller frees it) and *n_p. */
static g3_status_t g3_ckpt_export_table(const g3_ckpt_reader_t *r, const g3_ckpt_exp_model_t *m,
                                        g3_ckpt_exp_tensor_t **e_p, int *n_p)
{
    int64_t h = m->h, f = m->f;
    g3_ckpt_exp_tensor_t *e = calloc((size_t)(4 + 12 * m->L), sizeof(*e));
    int n = 0;

    if (e == NULL)
        return G3_ERR_NO_MEMORY;
    g3_ckpt_exp_add(e, &n, "transformer.wte.weight", "embedding.word_embeddings.weight", 2, m->V,
                    h, 0);
    g3_ckpt_exp_add(e, &n, "transformer.wpe.weight", "embedding.position_embeddings.weight", 2,
                    m->P, h, 0);
    for (long long l = 0; l < m->L; l++) {
        g3_ckpt_exp_layer(e, &n, l, "ln_1.weight", "input_layernorm.weight", 1, h, 1, 0);
        g3_ckpt_exp_layer(e, &n, l, "ln_1.bias", "input_layernorm.bias", 1, h, 1, 0);
        g3_ckpt_exp_layer(e, &n, l, "attn.c_attn.weight", "attention.qkv.weight", 2, 3 * h, h, 1);
        g3_ckpt_exp_layer(e, &n, l, "attn.c_attn.bias", "attention.qkv.bias", 1, 3 * h, 1, 0);
        g3_ckpt_exp_layer(e, &n, l, "attn.c_proj.weight", "attention.dense.weight", 2, h, h, 1);
        g3_ckpt_exp_layer(e, &n, l, "attn.c_proj.bias", "attention.dense.bias", 1, h, 1, 0);
        g3_ckpt_exp_layer(e, &n, l, "ln_2.weight", "post_attention_layernorm.weight", 1, h, 1, 0);
        g3_ckpt_exp_layer(e, &n, l, "ln_2.bias", "post_attention_layernorm.bias", 1, h, 1, 0);
        g3_ckpt_exp_layer(e, &n, l, "mlp.c_fc.weight", "mlp.fc1.weight", 2, f, h, 1);
        g3_ckpt_exp_layer(e, &n, l, "mlp.c_fc.bias", "mlp.fc1.bias", 1, f, 1, 0);
        g3_ckpt_exp_layer(e, &n, l, "mlp.c_proj.weight", "mlp.fc2.weight", 2, h, f, 1);
        g3_ckpt_exp_layer(e, &n, l, "mlp.c_proj.bias", "mlp.fc2.bias", 1, h, 1, 0);
    }
    g3_ckpt_exp_add(e, &n, "transformer.ln_f.weight", "final_layernorm.weight", 1, h, 1, 0);
    g3_ckpt_exp_add(e, &n, "transformer.ln_f.bias", "final_layernorm.bias", 1, h, 1, 0);
    for (int i = 0; i < n; i++)
        if (g3_ckpt_reader_find(r, e[i].src) < 0) {
            g3_error("export: checkpoint %s has no tensor %s (for %s)", r->dir, e[i].src, e[i].hf);
            free(e);
            return G3_ERR_NOT_FOUND;
        }
    *e_p = e;
    *n_p = n;
    return G3_OK;
}

/* The safetensors JSON header: names, dtypes, shapes (HF's), byte ranges; padded with
 * spaces to a multiple of 8 so that the data is 8-byte aligned.  RET: G3_OK with
 * *header_p (the caller frees it), *hlen_p and *data_bytes_p (the data after it). */
static g3_status_t g3_ckpt_export_header(const g3_ckpt_exp_tensor_t *e, int n, int bf16,
                                         char **header_p, size_t *hlen_p, uint64_t *data_bytes_p)
{
    size_t hlen = 0, hcap = 256 + (size_t)n * 256, esz = bf16 ? 2 : 4;
    char *header = malloc(hcap);
    uint64_t off = 0;

    if (header == NULL)
        return G3_ERR_NO_MEMORY;
    hlen += (size_t)snprintf(header + hlen, hcap - hlen, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (int i = 0; i < n; i++) {
        uint64_t bytes = (uint64_t)(e[i].rows * (e[i].ndim > 1 ? e[i].cols : 1)) * esz;
        int64_t d0 = e[i].transpose ? e[i].cols : e[i].rows,
                d1 = e[i].transpose ? e[i].rows : e[i].cols;
        if (e[i].ndim == 2)
            hlen += (size_t)snprintf(header + hlen, hcap - hlen,
                                     ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%lld,%lld],\"data_offsets\":[%llu,%llu]}",
                                     e[i].hf, bf16 ? "BF16" : "F32", (long long)d0, (long long)d1,
                                     (unsigned long long)off, (unsigned long long)(off + bytes));
        else
            hlen += (size_t)snprintf(header + hlen, hcap - hlen,
                                     ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%lld],\"data_offsets\":[%llu,%llu]}",
                                     e[i].hf, bf16 ? "BF16" : "F32", (long long)d0, (unsigned long long)off,
                                     (unsigned long long)(off + bytes));
        off += bytes;
    }
    hlen += (size_t)snprintf(header + hlen, hcap - hlen, "}");
    while (hlen % 8 != 0)
        header[hlen++] = ' ';
    *header_p = header;
    *hlen_p = hlen;
    *data_bytes_p = off;
    return G3_OK;
}

/* One tensor: loaded as f32, transposed where HF's Conv1D wants [in, out], converted to
 * bf16 if asked, appended to fd (the file tmp). */
static g3_status_t g3_ckpt_export_tensor(g3_ckpt_reader_t *r, const g3_ckpt_exp_tensor_t *e,
                                         int bf16, int fd, const char *tmp)
{
    int64_t cnt = e->rows * (e->ndim > 1 ? e->cols : 1);
    float *buf = malloc((size_t)cnt * 4), *tbuf = malloc((size_t)cnt * 4);
    const float *src;
    g3_status_t st;

    if (buf == NULL || tbuf == NULL) {
        g3_error("export: out of memory for %s", e->src);
        st = G3_ERR_NO_MEMORY;
        goto free_buffers;
    }
    st = g3_ckpt_load_f32(r, e->src, e->ndim, e->rows, e->cols, buf);
    if (st != G3_OK)
        goto free_buffers;
    src = buf;
    if (e->transpose) {                /* (rows, cols) -> (cols, rows) */
        for (int64_t a = 0; a < e->rows; a++)
            for (int64_t b = 0; b < e->cols; b++)
                tbuf[b * e->rows + a] = buf[a * e->cols + b];
        src = tbuf;
    }
    if (bf16) {
        uint16_t *o = (uint16_t *)(e->transpose ? buf : tbuf);
        g3_ckpt_convert_elems(o, G3_CKPT_BF16, src, G3_CKPT_F32, (size_t)cnt);
        st = g3_ckpt_write_all(fd, o, (size_t)cnt * 2, tmp);
    } else {
        st = g3_ckpt_write_all(fd, src, (size_t)cnt * 4, tmp);
    }

free_buffers:
    free(buf);
    free(tbuf);
    return st;
}

/* out/model.safetensors: the 8-byte little-endian header size, the header, the tensors;
 * written to a temporary name, synced and renamed (removed on failure). */
static g3_status_t g3_ckpt_export_safetensors(g3_ckpt_reader_t *r, const char *out,
                                              const g3_ckpt_exp_tensor_t *e, int n, int bf16,
                                              const char *header, size_t hlen)
{
    char path[PATH_MAX + 32], tmp[PATH_MAX + 48];
    unsigned char le[8];
    g3_status_t st;
    int fd;

    snprintf(path, sizeof(path), "%s/model.safetensors", out);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0) {
        g3_error("export: cannot create %s: %s", tmp, strerror(errno));
        return G3_ERR_IO;
    }
    for (int k = 0; k < 8; k++)
        le[k] = (unsigned char)((uint64_t)hlen >> (8 * k));
    st = g3_ckpt_write_all(fd, le, 8, tmp);
    if (st == G3_OK)
        st = g3_ckpt_write_all(fd, header, hlen, tmp);
    for (int i = 0; st == G3_OK && i < n; i++)
        st = g3_ckpt_export_tensor(r, &e[i], bf16, fd, tmp);
    if (st == G3_OK && fsync(fd) != 0) {
        g3_error("export: fsync %s: %s", tmp, strerror(errno));
        st = G3_ERR_IO;
    }
    close(fd);
    if (st == G3_OK && rename(tmp, path) != 0) {
        g3_error("export: cannot rename %s to %s: %s", tmp, path, strerror(errno));
        st = G3_ERR_IO;
    }
    if (st != G3_OK)
        unlink(tmp);
    return st;
}

/* out/config.json for GPT2LMHeadModel. */
static g3_status_t g3_ckpt_export_config(const char *out, const g3_ckpt_exp_model_t *m, int bf16)
{
    char path[PATH_MAX + 32], cfg[2048];

    snprintf(cfg, sizeof(cfg),
             "{\n"
             "  \"architectures\": [\"GPT2LMHeadModel\"],\n"
             "  \"model_type\": \"gpt2\",\n"
             "  \"vocab_size\": %lld,\n"
             "  \"n_positions\": %lld,\n"
             "  \"n_ctx\": %lld,\n"
             "  \"n_embd\": %lld,\n"
             "  \"n_layer\": %lld,\n"
             "  \"n_head\": %lld,\n"
             "  \"n_inner\": %lld,\n"
             "  \"activation_function\": \"gelu_new\",\n"
             "  \"layer_norm_epsilon\": %s,\n"
             "  \"initializer_range\": 0.02,\n"
             "  \"resid_pdrop\": 0.0,\n"
             "  \"embd_pdrop\": 0.0,\n"
             "  \"attn_pdrop\": 0.0,\n"
             "  \"scale_attn_weights\": true,\n"
             "  \"tie_word_embeddings\": true,\n"
             "  \"use_cache\": true,\n"
             "  \"bos_token_id\": %lld,\n"
             "  \"eos_token_id\": %lld,\n"
             "  \"torch_dtype\": \"%s\"\n"
             "}\n",
             (long long)m->V, (long long)m->P, (long long)m->P, (long long)m->h, m->L, m->heads,
             (long long)m->f, m->eps, (long long)(m->V > 50256 ? 50256 : m->V - 1),
             (long long)(m->V > 50256 ? 50256 : m->V - 1), bf16 ? "bfloat16" : "float32");
    snprintf(path, sizeof(path), "%s/config.json", out);
    return g3_ckpt_write_text_file(path, cfg);
}

g3_status_t g3_ckpt_export_hf_gpt2(const char *in, const char *out,
                                   const g3_ckpt_export_opts_t *opts)
{
    g3_ckpt_reader_t *r = NULL;
    g3_ckpt_exp_tensor_t *e = NULL;
    g3_ckpt_exp_model_t m;
    int n = 0, bf16 = opts && opts->dtype == G3_CKPT_BF16;
    char *header = NULL;
    size_t hlen = 0;
    uint64_t data_bytes = 0;
    g3_status_t st = g3_ckpt_reader_open(in, &r);

    if (st != G3_OK)
        return st;
    memset(&m, 0, sizeof(m));
    st = g3_ckpt_export_read_model(r, &m);
    if (st != G3_OK)
        goto err_close_reader;
    st = g3_ckpt_export_table(r, &m, &e, &n);
    if (st != G3_OK)
        goto err_close_reader;
    st = g3_ckpt_export_header(e, n, bf16, &header, &hlen, &data_bytes);
    if (st != G3_OK)
        goto err_free_table;
    if (mkdir(out, 0777) != 0 && errno != EEXIST) {
        g3_error("export: cannot create %s: %s", out, strerror(errno));
        st = G3_ERR_IO;
        goto err_free_header;
    }
    st = g3_ckpt_export_safetensors(r, out, e, n, bf16, header, hlen);
    if (st == G3_OK)
        st = g3_ckpt_export_config(out, &m, bf16);
    if (st == G3_OK)
        g3_info("export: wrote %s/model.safetensors (%d tensors, %.1f MB, %s) and %s/config.json from %s",
                out, n, (double)data_bytes / 1e6, bf16 ? "bf16" : "f32", out, r->dir);

err_free_header:
    free(header);
err_free_table:
    free(e);
err_close_reader:
    g3_ckpt_reader_close(r);
    return st;
}
