/* Tests: a small GPT's configuration, g3_gpt_config_defaults with the sizes a test names
 * (the test then sets what else it needs: the padding rule, the seed, recomputation). */
#ifndef G3_TESTS_GPT_SMALL_H
#define G3_TESTS_GPT_SMALL_H

#include "model/gpt.h"

/* OUT: *c, the defaults with L layers, hidden size C, NH heads, sequence length T and a
 * vocabulary of V. */
static inline void g3t_gpt_small(g3_gpt_config_t *c, int L, int C, int NH, int T, int V)
{
    g3_gpt_config_defaults(c);
    c->num_layers = L;
    c->hidden_size = C;
    c->num_attention_heads = NH;
    c->seq_length = T;
    c->vocab_size = V;
}

#endif
