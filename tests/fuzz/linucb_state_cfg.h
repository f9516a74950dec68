/* The configurations fuzz_linucb_state restores into (byte 0 of an input picks one), shared with
 * gen_linucb_corpus, which writes a valid state of each as seeds. Small d and n keep states short
 * while covering both trees, both grid releases and the Wishart variant. */
#ifndef LDPB_FUZZ_LINUCB_STATE_CFG_H
#define LDPB_FUZZ_LINUCB_STATE_CFG_H

#include "linucb.h"

#define FUZZ_LINUCB_CONFIGS 5u
#define FUZZ_LINUCB_D       2u

static inline void fuzz_linucb_config(unsigned which, agg_linucb_config *c)
{
    agg_linucb_config_init(c);
    c->d = FUZZ_LINUCB_D;
    c->horizon = 40;
    switch (which % FUZZ_LINUCB_CONFIGS) {
    case 0: /* the served Gaussian release: binary tree, grid, exact noise */
        c->variant = AGG_LINUCB_GAUSSIAN;
        c->exact = 1;
        break;
    case 1: /* the simulator's Gaussian: binary tree, floating point */
        c->variant = AGG_LINUCB_GAUSSIAN;
        break;
    case 2: /* Gaussian on the padded tree */
        c->variant = AGG_LINUCB_GAUSSIAN;
        c->tree = AGG_LINUCB_TREE_PADDED;
        break;
    case 3: /* the simulator's Wishart (padded), floating point */
        c->variant = AGG_LINUCB_WISHART;
        break;
    default: /* the served Wishart release: padded tree, integer node sums, grid */
        c->variant = AGG_LINUCB_WISHART;
        c->exact = 1;
        break;
    }
}

#endif
