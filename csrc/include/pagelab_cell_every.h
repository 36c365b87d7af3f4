/* pagelab_cell_every.h: the hooks of a %%c cell simulated access by access (pagelab_cell.h
 * includes it in that build, never in the measured one).
 *
 * That build is compiled with the compiler's ThreadSanitizer instrumentation (clang's or GCC's),
 * -fsanitize=thread, but not linked with its runtime, libtsan: the compiler puts a call before
 * every load and store the optimised code still makes (__tsan_read4(addr), __tsan_write8(addr),
 * __tsan_read16 for a vector, ...), and these hooks, in the cell's own object, take the place
 * of libtsan's. Each passes the access on to pagelab
 * (the simulator) with its call site, the return address, which -g maps to a line of the cell:
 * as a record in pl_cell_hooks' buffer, which pagelab simulates when it is full (and at the
 * region's ends), else through pl_cell_hooks.touch. The hooks themselves are not instrumented
 * (no_sanitize_thread).
 *
 * What else the compiler reports: atomics (__tsan_atomicN_*) are done here for real and
 * simulated as a load, a store, or both; function entry and exit, and __tsan_init, are not data
 * accesses and do nothing. The C library's memory functions the cell calls are wrapped
 * (-Wl,--wrap, and -fno-builtin so that the compiler neither expands them inline nor hides a loop
 * in them): their bytes are simulated as the cell's accesses, in PL_CELL_CHUNK-byte pieces. Memory
 * touched by other library calls is not seen; pagelab names those calls beside the results.
 * pthread_create is wrapped too: the real one runs, and a thread pagelab simulates starts in
 * pl_started, which tells pagelab its number before and after the start routine runs. */
#ifndef PAGELAB_CELL_EVERY_H
#define PAGELAB_CELL_EVERY_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* clang instruments atomics even where no_sanitize_thread says not to: the atomic hooks would
 * call themselves */
#if defined(__has_attribute) && __has_attribute(disable_sanitizer_instrumentation)
#define PL_NO_TSAN no_sanitize_thread, disable_sanitizer_instrumentation
#else
#define PL_NO_TSAN no_sanitize_thread
#endif
#define PL_HOOK __attribute__((visibility("hidden"), PL_NO_TSAN, noinline, used))
#define PL_HELPER __attribute__((PL_NO_TSAN)) static
#define PL_HERE __builtin_return_address(0)
#define PL_TOUCH(p, n, w) pl_record((uint64_t)(uintptr_t)(p), (uint64_t)(n), (w), PL_HERE)

/* What does not fit a record in the buffer: a full buffer (simulated, then the record goes in),
 * an access wider than a record or from another thread, or no buffer (straight to touch(); a
 * constructor may run before pagelab has set the hooks: its accesses are not simulated). */
PL_HELPER inline __attribute__((always_inline)) void pl_record(uint64_t a, uint64_t n, int w,
                                                               const void *pc);
PL_HELPER __attribute__((noinline)) void pl_record_slow(uint64_t a, uint64_t n, int w,
                                                        const void *pc)
{
    struct pl_cell_hooks *h = &pl_cell_hooks;
    if (__builtin_thread_pointer() == h->thread && h->flush) {
        h->flush(h->ctx);
        if (n <= PL_CELL_REC_MAX) { /* the buffer has room now */
            pl_record(a, n, w, pc);
            return;
        }
    }
    if (h->touch)
        h->touch(h->ctx, a, n, w, pc);
}

/* n bytes at a, read (w 0) or written (w 1) by the call returning to pc */
PL_HELPER inline __attribute__((always_inline)) void pl_record(uint64_t a, uint64_t n, int w,
                                                               const void *pc)
{
    struct pl_cell_hooks *h = &pl_cell_hooks;
    struct pl_cell_rec *r = h->next;
    if (__builtin_expect(
            r != h->last && n <= PL_CELL_REC_MAX && __builtin_thread_pointer() == h->thread, 1)) {
        r->addr = a;
        r->site = (uint64_t)(uintptr_t)pc << 16 | n << 1 | (uint64_t)w;
        h->next = r + 1;
        return;
    }
    pl_record_slow(a, n, w, pc);
}

/* plain, unaligned and volatile loads and stores of 1 to 16 bytes */
#define PL_ACCESS_HOOK(name, n, w)                                                                 \
    PL_HOOK void name(void *p);                                                                    \
    PL_HOOK void name(void *p)                                                                     \
    {                                                                                              \
        PL_TOUCH(p, n, w);                                                                         \
    }
#define PL_ACCESS_HOOKS(n)                                                                         \
    PL_ACCESS_HOOK(__tsan_read##n, n, 0)                                                           \
    PL_ACCESS_HOOK(__tsan_write##n, n, 1)                                                          \
    PL_ACCESS_HOOK(__tsan_unaligned_read##n, n, 0)                                                 \
    PL_ACCESS_HOOK(__tsan_unaligned_write##n, n, 1)                                                \
    PL_ACCESS_HOOK(__tsan_volatile_read##n, n, 0)                                                  \
    PL_ACCESS_HOOK(__tsan_volatile_write##n, n, 1)
PL_ACCESS_HOOKS(1)
PL_ACCESS_HOOKS(2)
PL_ACCESS_HOOKS(4)
PL_ACCESS_HOOKS(8)
PL_ACCESS_HOOKS(16)

/* Aggregate copies and fills, and accesses of other sizes. The compiler reports a struct
 * copy's bytes here and then, when it is large, calls memcpy (memset for a fill) to move them,
 * which the wrappers below would report again: the last range of each kind is kept, with its
 * call site, so that the wrapper of that very call (the next call in the code, with the same
 * bytes) counts nothing. */
static struct {
    uintptr_t addr, n, pc;
} pl_ranged[2]; /* the last read range, the last write range */

/* bytes of code from a range's call to the copy's call: a few moves and the other range's */
#define PL_RANGE_CALLS 64

PL_HOOK void __tsan_read_range(void *p, long n);
PL_HOOK void __tsan_read_range(void *p, long n)
{
    pl_ranged[0].addr = (uintptr_t)p, pl_ranged[0].n = (uintptr_t)n;
    pl_ranged[0].pc = (uintptr_t)PL_HERE;
    PL_TOUCH(p, n, 0);
}
PL_HOOK void __tsan_write_range(void *p, long n);
PL_HOOK void __tsan_write_range(void *p, long n)
{
    pl_ranged[1].addr = (uintptr_t)p, pl_ranged[1].n = (uintptr_t)n;
    pl_ranged[1].pc = (uintptr_t)PL_HERE;
    PL_TOUCH(p, n, 1);
}

/* not data accesses */
PL_HOOK void __tsan_init(void);
PL_HOOK void __tsan_init(void) {}
PL_HOOK void __tsan_func_entry(void *caller);
PL_HOOK void __tsan_func_entry(void *caller)
{
    (void)caller;
}
PL_HOOK void __tsan_func_exit(void *unused);
PL_HOOK void __tsan_func_exit(void *unused)
{
    (void)unused;
}

/* Atomics, with the types gcc declares them with. The memory order argument is the C11 one;
 * the operation is done sequentially consistent, which is at least as strong. */
#define PL_SC __ATOMIC_SEQ_CST
#define PL_ATOMIC_RMW(bits, T, op)                                                                 \
    PL_HOOK T __tsan_atomic##bits##_##op(volatile void *a, T v, int mo);                           \
    PL_HOOK T __tsan_atomic##bits##_##op(volatile void *a, T v, int mo)                            \
    {                                                                                              \
        (void)mo;                                                                                  \
        PL_TOUCH(a, sizeof(T), 0);                                                                 \
        PL_TOUCH(a, sizeof(T), 1);                                                                 \
        return __atomic_##op((volatile T *)a, v, PL_SC);                                           \
    }
#define PL_ATOMICS(bits, T)                                                                        \
    PL_HOOK T __tsan_atomic##bits##_load(const volatile void *a, int mo);                          \
    PL_HOOK T __tsan_atomic##bits##_load(const volatile void *a, int mo)                           \
    {                                                                                              \
        (void)mo;                                                                                  \
        PL_TOUCH(a, sizeof(T), 0);                                                                 \
        return __atomic_load_n((const volatile T *)a, PL_SC);                                      \
    }                                                                                              \
    PL_HOOK void __tsan_atomic##bits##_store(volatile void *a, T v, int mo);                       \
    PL_HOOK void __tsan_atomic##bits##_store(volatile void *a, T v, int mo)                        \
    {                                                                                              \
        (void)mo;                                                                                  \
        PL_TOUCH(a, sizeof(T), 1);                                                                 \
        __atomic_store_n((volatile T *)a, v, PL_SC);                                               \
    }                                                                                              \
    PL_ATOMIC_RMW(bits, T, exchange_n)                                                             \
    PL_ATOMIC_RMW(bits, T, fetch_add)                                                              \
    PL_ATOMIC_RMW(bits, T, fetch_sub)                                                              \
    PL_ATOMIC_RMW(bits, T, fetch_and)                                                              \
    PL_ATOMIC_RMW(bits, T, fetch_or)                                                               \
    PL_ATOMIC_RMW(bits, T, fetch_xor)                                                              \
    PL_ATOMIC_RMW(bits, T, fetch_nand)                                                             \
    PL_HOOK _Bool __tsan_atomic##bits##_compare_exchange_strong(volatile void *a, void *expected,  \
                                                                T v, int mo, int fail);            \
    PL_HOOK _Bool __tsan_atomic##bits##_compare_exchange_strong(volatile void *a, void *expected,  \
                                                                T v, int mo, int fail)             \
    {                                                                                              \
        (void)mo, (void)fail;                                                                      \
        PL_TOUCH(a, sizeof(T), 0);                                                                 \
        _Bool done =                                                                               \
            __atomic_compare_exchange_n((volatile T *)a, (T *)expected, v, 0, PL_SC, PL_SC);       \
        if (done)                                                                                  \
            PL_TOUCH(a, sizeof(T), 1);                                                             \
        return done;                                                                               \
    }                                                                                              \
    PL_HOOK _Bool __tsan_atomic##bits##_compare_exchange_weak(volatile void *a, void *expected,    \
                                                              T v, int mo, int fail);              \
    PL_HOOK _Bool __tsan_atomic##bits##_compare_exchange_weak(volatile void *a, void *expected,    \
                                                              T v, int mo, int fail)               \
    {                                                                                              \
        (void)mo, (void)fail;                                                                      \
        PL_TOUCH(a, sizeof(T), 0);                                                                 \
        _Bool done =                                                                               \
            __atomic_compare_exchange_n((volatile T *)a, (T *)expected, v, 1, PL_SC, PL_SC);       \
        if (done)                                                                                  \
            PL_TOUCH(a, sizeof(T), 1);                                                             \
        return done;                                                                               \
    }                                                                                              \
    PL_HOOK T __tsan_atomic##bits##_compare_exchange_val(volatile void *a, T expected, T v,        \
                                                         int mo, int fail);                        \
    PL_HOOK T __tsan_atomic##bits##_compare_exchange_val(volatile void *a, T expected, T v,        \
                                                         int mo, int fail)                         \
    {                                                                                              \
        (void)mo, (void)fail;                                                                      \
        PL_TOUCH(a, sizeof(T), 0);                                                                 \
        if (__atomic_compare_exchange_n((volatile T *)a, &expected, v, 0, PL_SC, PL_SC))           \
            PL_TOUCH(a, sizeof(T), 1);                                                             \
        return expected;                                                                           \
    }
PL_ATOMICS(8, unsigned char)
PL_ATOMICS(16, unsigned short)
PL_ATOMICS(32, unsigned int)
PL_ATOMICS(64, unsigned long)

PL_HOOK void __tsan_atomic_thread_fence(int mo);
PL_HOOK void __tsan_atomic_thread_fence(int mo)
{
    (void)mo;
    __atomic_thread_fence(PL_SC);
}
PL_HOOK void __tsan_atomic_signal_fence(int mo);
PL_HOOK void __tsan_atomic_signal_fence(int mo)
{
    (void)mo;
    __atomic_signal_fence(PL_SC);
}

/* The C library's memory functions: the bytes they read and write, then the real call. */
void *__real_memcpy(void *d, const void *s, size_t n);
void *__real_memmove(void *d, const void *s, size_t n);
void *__real_memset(void *d, int c, size_t n);
int __real_memcmp(const void *a, const void *b, size_t n);
size_t __real_strlen(const char *s);
char *__real_strcpy(char *d, const char *s);
int __real_strcmp(const char *a, const char *b);

/* n bytes read from s (if any) and written to d (if any), piece by piece as a copy goes */
PL_HELPER void pl_pieces(const void *pc, const void *s, void *d, size_t n)
{
    for (size_t i = 0; i < n; i += PL_CELL_CHUNK) {
        size_t k = n - i < PL_CELL_CHUNK ? n - i : PL_CELL_CHUNK;
        if (s)
            pl_record((uintptr_t)s + i, k, 0, pc);
        if (d)
            pl_record((uintptr_t)d + i, k, 1, pc);
    }
}
/* how many bytes a comparison of a and b reads: up to the first difference */
PL_HELPER size_t pl_compared(const void *a, const void *b, size_t n, int strings)
{
    const unsigned char *x = a, *y = b;
    size_t i = 0;
    while (i < n && x[i] == y[i] && !(strings && x[i] == 0))
        i++;
    return i < n ? i + 1 : n;
}

/* Whether range k (0 read, 1 write) was just reported for these n bytes at p by the code right
 * before pc: the compiler's own copy or fill, already simulated. It is forgotten once matched. */
PL_HELPER int pl_reported(int k, const void *p, size_t n, const void *pc)
{
    int same = pl_ranged[k].addr == (uintptr_t)p && pl_ranged[k].n == n &&
               (uintptr_t)pc - pl_ranged[k].pc < PL_RANGE_CALLS;
    if (same)
        pl_ranged[k].n = 0, pl_ranged[k].addr = 0;
    return same;
}

PL_HOOK void *__wrap_memcpy(void *d, const void *s, size_t n);
PL_HOOK void *__wrap_memcpy(void *d, const void *s, size_t n)
{
    if (!(pl_reported(0, s, n, PL_HERE) && pl_reported(1, d, n, PL_HERE)))
        pl_pieces(PL_HERE, s, d, n);
    return __real_memcpy(d, s, n);
}
PL_HOOK void *__wrap_memmove(void *d, const void *s, size_t n);
PL_HOOK void *__wrap_memmove(void *d, const void *s, size_t n)
{
    pl_pieces(PL_HERE, s, d, n);
    return __real_memmove(d, s, n);
}
PL_HOOK void *__wrap_memset(void *d, int c, size_t n);
PL_HOOK void *__wrap_memset(void *d, int c, size_t n)
{
    if (!pl_reported(1, d, n, PL_HERE))
        pl_pieces(PL_HERE, NULL, d, n);
    return __real_memset(d, c, n);
}
PL_HOOK int __wrap_memcmp(const void *a, const void *b, size_t n);
PL_HOOK int __wrap_memcmp(const void *a, const void *b, size_t n)
{
    size_t k = pl_compared(a, b, n, 0);
    pl_pieces(PL_HERE, a, NULL, k);
    pl_pieces(PL_HERE, b, NULL, k);
    return __real_memcmp(a, b, n);
}
PL_HOOK size_t __wrap_strlen(const char *s);
PL_HOOK size_t __wrap_strlen(const char *s)
{
    size_t n = __real_strlen(s);
    pl_pieces(PL_HERE, s, NULL, n + 1);
    return n;
}
PL_HOOK char *__wrap_strcpy(char *d, const char *s);
PL_HOOK char *__wrap_strcpy(char *d, const char *s)
{
    pl_pieces(PL_HERE, s, d, __real_strlen(s) + 1);
    return __real_strcpy(d, s);
}
PL_HOOK int __wrap_strcmp(const char *a, const char *b);
PL_HOOK int __wrap_strcmp(const char *a, const char *b)
{
    size_t k = pl_compared(a, b, SIZE_MAX, 1);
    pl_pieces(PL_HERE, a, NULL, k);
    pl_pieces(PL_HERE, b, NULL, k);
    return __real_strcmp(a, b);
}

/* Threads: the real pthread_create, with a start routine that numbers the thread first. */
int __real_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
struct pl_start {
    void *(*fn)(void *);
    void *arg;
};
/* per thread number, written before the real pthread_create, read by the thread it starts */
static struct pl_start pl_starts[PL_CELL_THREADS];
PL_HELPER void *pl_started(void *p)
{
    int number = (int)(intptr_t)p;
    pl_cell_hooks.started(pl_cell_hooks.ctx, number);
    void *r = pl_starts[number].fn(pl_starts[number].arg);
    pl_cell_hooks.finished(pl_cell_hooks.ctx);
    return r;
}
PL_HOOK int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
                                  void *arg);
PL_HOOK int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
                                  void *arg)
{
    int number = pl_cell_hooks.spawned ? pl_cell_hooks.spawned(pl_cell_hooks.ctx) : 0;
    if (number <= 0 || number >= PL_CELL_THREADS)
        return __real_pthread_create(t, attr, fn, arg);
    pl_starts[number] = (struct pl_start){fn, arg};
    return __real_pthread_create(t, attr, pl_started, (void *)(intptr_t)number);
}

#endif
