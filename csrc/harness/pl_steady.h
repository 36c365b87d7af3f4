/* Repeat until steady. Noise on a shared machine (preemption, interrupts, another process in the
 * caches) only ever adds time, so the fastest runs estimate what the code costs. Once the
 * PL_STEADY_K fastest agree within PL_STEADY_TOL the floor has been found and more runs would not
 * move it; a loop stops there, or at its caller's cap, whichever comes first. */
#ifndef PL_STEADY_H
#define PL_STEADY_H

#define PL_STEADY_K 3
#define PL_STEADY_TOL 0.03

struct pl_fastest {
    double t[PL_STEADY_K]; /* the fastest times so far, ascending */
    int n;                 /* how many of t[] are filled */
    int runs;              /* every time added */
};

void pl_fastest_add(struct pl_fastest *f, double t);
/* (k-th fastest - fastest) / fastest, or -1 while fewer than PL_STEADY_K runs were timed */
double pl_fastest_spread(const struct pl_fastest *f);
int pl_fastest_steady(const struct pl_fastest *f);

#endif
