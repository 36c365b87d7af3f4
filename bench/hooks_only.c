/* The calls GCC's ThreadSanitizer instrumentation (-fsanitize=thread) puts before each load and
 * store and around each function, doing nothing: linked in place of libtsan (and of pagelab's
 * hooks), they leave what instrumentation itself costs a program, with nothing recorded or
 * simulated. sim.cell_vs_cachegrind.ceiling times bench/transpose.c built this way. */
#define PL_NOTHING(name)                                                                           \
    void name(void *p);                                                                            \
    void name(void *p)                                                                             \
    {                                                                                              \
        (void)p;                                                                                   \
    }
#define PL_NOTHING_SIZE(n)                                                                         \
    PL_NOTHING(__tsan_read##n)                                                                     \
    PL_NOTHING(__tsan_write##n)                                                                    \
    PL_NOTHING(__tsan_unaligned_read##n)                                                           \
    PL_NOTHING(__tsan_unaligned_write##n)                                                          \
    PL_NOTHING(__tsan_volatile_read##n)                                                            \
    PL_NOTHING(__tsan_volatile_write##n)
PL_NOTHING_SIZE(1)
PL_NOTHING_SIZE(2)
PL_NOTHING_SIZE(4)
PL_NOTHING_SIZE(8)
PL_NOTHING_SIZE(16)
PL_NOTHING(__tsan_func_entry)
PL_NOTHING(__tsan_func_exit)

void __tsan_init(void);
void __tsan_init(void) {}
void __tsan_read_range(void *p, long n);
void __tsan_read_range(void *p, long n)
{
    (void)p, (void)n;
}
void __tsan_write_range(void *p, long n);
void __tsan_write_range(void *p, long n)
{
    (void)p, (void)n;
}
