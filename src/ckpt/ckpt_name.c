/* Checkpoint names: shard files, piece datasets, iteration directories and save ids, and
 * the hash of tensor names the writer's and reader's name maps use. */
#include "ckpt/ckpt_internal.h"

#include <stdio.h>
#include <string.h>

void g3_ckpt_shard_name(g3_ckpt_kind_t kind, int tp, int pp, int dp, char *buf, size_t size)
{
    if (kind == G3_CKPT_MODEL)
        snprintf(buf, size, "model_tp%02d_pp%03d.h5", tp, pp);
    else
        snprintf(buf, size, "optim_tp%02d_pp%03d_dp%03d.h5", tp, pp, dp);
}

void g3_ckpt_piece_dataset(const char *tensor, int k, char *buf, size_t size)
{
    snprintf(buf, size, "%s#%d", tensor, k);
}

void g3_ckpt_iter_path(const char *dir, int64_t iteration, char *buf, size_t size)
{
    snprintf(buf, size, "%s/iter_%07lld", dir, (long long)iteration);
}

void g3_ckpt_tmp_path(const char *dir, int64_t iteration, const char *save_id, char *buf,
                      size_t size)
{
    snprintf(buf, size, "%s/iter_%07lld.tmp-%s", dir, (long long)iteration, save_id);
}

const char *g3_ckpt_save_id(const g3_ckpt_save_opts_t *opts)
{
    return opts != NULL && opts->save_id != NULL && opts->save_id[0] != '\0' ? opts->save_id : "0";
}

int g3_ckpt_parse_iter_name(const char *name, int64_t *iteration_p)
{
    const char *p;
    int64_t v = 0;

    if (strncmp(name, "iter_", 5) != 0)
        return 0;
    p = name + 5;
    if (strlen(p) < 7 || strlen(p) > 18)
        return 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return 0;
        v = v * 10 + (*p - '0');
    }
    *iteration_p = v;
    return 1;
}

uint64_t g3_ckpt_name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}
