/* pagelab_cell.h: what a %%c cell is compiled with (the magic includes it for you).
 *
 *   PL_REGION_BEGIN();  ...code to measure...  PL_REGION_END();
 *       Counters, the clock and rusage are read around this region (the first one, if there are
 *       several); without it, the whole of main() is measured.
 *   PL_LOAD(p), PL_STORE(p, v)
 *       To simulate only chosen accesses, write them this way: *p, and *p = v. The measured
 *       build runs them as plain loads and stores; the simulated build (-DPL_SIM) also feeds each
 *       one to the simulator. A cell without them is simulated access by access instead: its
 *       simulated build (-DPL_SIM_EVERY) is instrumented by the compiler, and every load and
 *       store goes to the simulator (pagelab_cell_every.h).
 *   PL_KEEP(x)
 *       Keeps a result alive so that -O2 cannot delete the loop that computed it.
 *
 * The cell is built twice with -O2 as a shared object whose main() pagelab calls in a worker
 * process; pagelab fills in pl_cell_hooks before it does. Each access reaches the simulator with
 * its call site (PL_LOAD's through access(), the instrumentation's through the buffer of
 * records, or touch()), which -g maps to the cell's line. */
#ifndef PAGELAB_CELL_H
#define PAGELAB_CELL_H

#include <stdint.h>

/* Bytes per simulated access of a wider range (a wrapped memcpy or memset, an aggregate copy):
 * one SSE register, what every x86-64 memcpy moves at least per instruction. */
#define PL_CELL_CHUNK 16

/* One access of the instrumented build, waiting to be simulated: its address, and its call
 * site's return address << 16 | its size << 1 | is_write. The hooks append these to a buffer
 * that pagelab simulates a bufferful at a time (flush), so an access costs the hook a few
 * stores rather than a call into pagelab. Return addresses of the cell's code lie below 2^48
 * (pagelab installs the buffer only then); wider accesses go to touch() after a flush. */
struct pl_cell_rec {
    uint64_t addr, site;
};
#define PL_CELL_REC_MAX 0x7fff /* the widest access a record holds, in bytes */
/* Threads pagelab numbers at most, main()'s included: the cores of its model (pl_coherence.h). */
#define PL_CELL_THREADS 64

struct pl_cell_hooks {
    void (*begin)(void *ctx);
    void (*end)(void *ctx);
    void (*access)(void *ctx, uint64_t addr, uint32_t size, int is_write);
    void (*touch)(void *ctx, uint64_t addr, uint64_t size, int is_write, const void *site);
    void (*exit)(void *ctx, int status); /* exit() by main()'s thread: main() is over */
    void (*flush)(void *ctx);            /* simulate the buffer's records; next is then its start */
    struct pl_cell_rec *next, *last;     /* the buffer's free part; both NULL without one */
    void *thread;                        /* main()'s thread pointer: only it appends records */
    void *ctx;
    /* Threads (the instrumented build wraps pthread_create): spawned() is called by the
     * creating thread and returns the new thread's number, or 0 when threads are not simulated;
     * a numbered thread calls started() first and finished() when its start routine returns. */
    int (*spawned)(void *ctx);
    void (*started)(void *ctx, int number);
    void (*finished)(void *ctx);
};

#ifndef PL_CELL_RUNNER /* the cell's side; the runner (csrc/cell.c) only needs the layout */

__attribute__((visibility("default"))) struct pl_cell_hooks pl_cell_hooks;

/* exit() ends the cell as a return from main() does (the cell is linked with -Wl,--wrap=exit):
 * pagelab takes the counts and the status, and the worker exits afterwards. */
_Noreturn void __real_exit(int status);
__attribute__((visibility("hidden"), noreturn, used, no_sanitize_thread)) void
__wrap_exit(int status);
void __wrap_exit(int status)
{
    if (pl_cell_hooks.exit)
        pl_cell_hooks.exit(pl_cell_hooks.ctx, status);
    __real_exit(status);
}

#define PL_REGION_BEGIN() pl_cell_hooks.begin(pl_cell_hooks.ctx)
#define PL_REGION_END() pl_cell_hooks.end(pl_cell_hooks.ctx)

#ifdef PL_SIM_EVERY
#include "pagelab_cell_every.h"
#endif

#ifdef PL_SIM
#define PL_LOAD(p)                                                                                 \
    (pl_cell_hooks.access(pl_cell_hooks.ctx, (uint64_t)(uintptr_t)(p), sizeof *(p), 0), *(p))
#define PL_STORE(p, v)                                                                             \
    (pl_cell_hooks.access(pl_cell_hooks.ctx, (uint64_t)(uintptr_t)(p), sizeof *(p), 1), *(p) = (v))
#else
#define PL_LOAD(p) (*(p))
#define PL_STORE(p, v) (*(p) = (v))
#endif

#define PL_KEEP(x)                                                                                 \
    do {                                                                                           \
        __typeof__(x) pl_keep_ = (x);                                                              \
        __asm__ volatile("" : : "g"(&pl_keep_) : "memory");                                        \
    } while (0)

/* the cell's main() is called by pagelab, under this name */
#define main pl_cell_main

#endif
#endif
