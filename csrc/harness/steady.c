/* Repeat until steady: the fastest PL_STEADY_K times of a repeated run (see pl_steady.h). */
#include "pl_steady.h"

void pl_fastest_add(struct pl_fastest *f, double t)
{
    f->runs++;
    int i = f->n < PL_STEADY_K ? f->n++ : PL_STEADY_K;
    if (i == PL_STEADY_K && t >= f->t[PL_STEADY_K - 1])
        return;
    if (i == PL_STEADY_K)
        i--;
    for (; i > 0 && f->t[i - 1] > t; i--)
        f->t[i] = f->t[i - 1];
    f->t[i] = t;
}

double pl_fastest_spread(const struct pl_fastest *f)
{
    if (f->n < PL_STEADY_K)
        return -1;
    return f->t[0] > 0 ? (f->t[PL_STEADY_K - 1] - f->t[0]) / f->t[0] : 0;
}

int pl_fastest_steady(const struct pl_fastest *f)
{
    double s = pl_fastest_spread(f);
    return s >= 0 && s <= PL_STEADY_TOL;
}
