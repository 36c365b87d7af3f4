/* maps: the memory map of a fresh process. The worker builds a representative layout (a heap
 * block, a malloc'd block big enough to get its own mapping, an anonymous mmap, a private
 * mapping of a deleted temp file, thread stacks), then records a copy of /proc/self/maps and,
 * as typed facts, the addresses of objects it knows, so Python can check its classification.
 * The temp file goes in the working directory: the scratch directory Python chose
 * (pylib/pagelab/native/scratch.py). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <unistd.h>

#include "pl_workloads.h"

#define SMALL_BLOCK PL_MAPS_SMALL_BLOCK /* from [heap] */
#define LARGE_BLOCK PL_MAPS_LARGE_BLOCK /* a mapping of its own */
#define MAX_THREADS 16
/* room kept in out->text after the maps copy for the other text fact: the exe path */
#define MAPS_MAX (PL_OUT_TEXT_MAX - PATH_MAX)
/* A space in the name on purpose: a maps parser must cope with it (and with " (deleted)"). */
#define FILE_TEMPLATE "pagelab map-XXXXXX"

enum { P_MAPPING_KB, P_THREADS, NPARAMS };

static const struct pl_param params[NPARAMS] = {
    {"mapping_kb", 256, 4, 1 << 20, "KiB", NULL,
     "size of the anonymous mapping and of the private file mapping"},
    {"threads", 1, 0, MAX_THREADS, "threads", NULL,
     "extra threads alive while the map is read: each has a stack mapping with a guard page"},
};

/* Threads stay alive (so their stacks are in the map) until the main thread opens the gate. */
struct gate {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int ready, open;
};

struct holder {
    _Alignas(64) uintptr_t stack_var; /* a cache line each: threads write concurrently */
    struct gate *gate;
};

static void *holder_main(void *arg)
{
    struct holder *h = arg;
    volatile char local = 0;
    h->stack_var = (uintptr_t)&local;
    pthread_mutex_lock(&h->gate->lock);
    h->gate->ready++;
    pthread_cond_broadcast(&h->gate->cond);
    while (!h->gate->open)
        pthread_cond_wait(&h->gate->cond, &h->gate->lock);
    pthread_mutex_unlock(&h->gate->lock);
    return NULL;
}

static void wait_ready(struct gate *g, int n)
{
    pthread_mutex_lock(&g->lock);
    while (g->ready < n)
        pthread_cond_wait(&g->cond, &g->lock);
    pthread_mutex_unlock(&g->lock);
}

static void release(struct gate *g, pthread_t *tid, int n)
{
    pthread_mutex_lock(&g->lock);
    g->open = 1;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
    for (int i = 0; i < n; i++)
        pthread_join(tid[i], NULL);
}

struct layout {
    char *small, *large, *anon, *file;
    char *maps; /* the copy of /proc/self/maps, allocated with the rest so it is in the map */
    size_t len;
};

static int build(struct pl_ctx *c, struct layout *l)
{
    char path[] = FILE_TEMPLATE;
    l->small = malloc(SMALL_BLOCK);
    l->large = malloc(LARGE_BLOCK);
    l->maps = malloc(MAPS_MAX);
    if (!l->small || !l->large || !l->maps)
        return pl_out_fail(c->out, -ENOMEM, "malloc failed");
    memset(l->small, 1, SMALL_BLOCK); /* really used, as a program would */
    memset(l->large, 1, LARGE_BLOCK);
    l->anon = mmap(NULL, l->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (l->anon == MAP_FAILED)
        return pl_out_fail(c->out, -errno, "anonymous mmap of %zu KiB failed", l->len >> 10);
    l->anon[0] = 1;
    int fd = mkstemp(path);
    if (fd < 0)
        return pl_out_fail(c->out, -errno, "cannot create a temp file in the scratch directory");
    /* removed at once: nothing is left behind even if the worker is killed; the mapping keeps
     * the inode alive and the map shows it as "(deleted)" */
    int rc = unlink(path) == 0 && ftruncate(fd, (off_t)l->len) == 0 ? 0 : -errno;
    /* the one page written below gets its block now: on a full filesystem (a small tmpfs) the
     * write would be SIGBUS; this way it is ENOSPC, said in words. The rest stays sparse. */
    int err = rc ? 0 : posix_fallocate(fd, 0, pl_page_size());
    if (err) {
        close(fd);
        return pl_out_fail(c->out, -err,
                           "cannot reserve a page for a temp file in the scratch directory: %s",
                           strerror(err));
    }
    if (!rc) {
        l->file = mmap(NULL, l->len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        rc = l->file == MAP_FAILED ? -errno : 0;
    }
    close(fd);
    if (rc)
        return pl_out_fail(c->out, rc, "private file mapping of %s failed", path);
    l->file[0] = 1; /* a copy-on-write page of its own, as a program's write would make */
    return 0;
}

static void teardown(struct layout *l)
{
    if (l->file && l->file != MAP_FAILED)
        munmap(l->file, l->len);
    if (l->anon && l->anon != MAP_FAILED)
        munmap(l->anon, l->len);
    free(l->small);
    free(l->large);
    free(l->maps);
}

/* Copy /proc/self/maps into buf (MAPS_MAX bytes), whole lines only; returns bytes copied or
 * -errno. */
static long copy_maps(char *buf, int *truncated)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t cap = MAPS_MAX - 1, n = 0;
    ssize_t got = 0;
    while (n < cap && (got = read(fd, buf + n, cap - n)) > 0)
        n += (size_t)got;
    int err = got < 0 ? -errno : 0;
    *truncated = n == cap;
    close(fd);
    if (err)
        return err;
    if (*truncated) /* cut back to the last whole line */
        while (n > 0 && buf[n - 1] != '\n')
            n--;
    buf[n] = '\0';
    return (long)n;
}

static int run(struct pl_ctx *c)
{
    int nthreads = (int)c->param[P_THREADS];
    struct layout l = {.len = (size_t)c->param[P_MAPPING_KB] << 10};
    struct holder h[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    struct gate gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    volatile char stack_var = 0;

    int rc = build(c, &l);
    if (rc) {
        teardown(&l);
        return rc;
    }
    int started = 0;
    for (; started < nthreads; started++) {
        h[started] = (struct holder){.gate = &gate};
        rc = -pthread_create(&tid[started], NULL, holder_main, &h[started]);
        if (rc)
            break;
    }
    long n = 0;
    int truncated = 0;
    if (!rc) {
        wait_ready(&gate, started); /* every thread has recorded its stack address */
        n = copy_maps(l.maps, &truncated);
    }
    release(&gate, tid, started);
    if (rc) {
        teardown(&l);
        return pl_out_fail(c->out, rc, "pthread_create failed after %d threads", started);
    }
    if (n < 0) {
        teardown(&l);
        return pl_out_fail(c->out, (int)n, "cannot read /proc/self/maps");
    }

    /* The map, then the objects (label "object": name and address) and facts about this
     * process. */
    struct pl_out *o = c->out;
    pl_out_text(o, "process", "maps", "%s", l.maps);
    const struct {
        const char *name;
        const void *addr;
    } objects[] = {
        {"stack variable", (const void *)&stack_var},
        {"small malloc block", l.small},
        {"large malloc block", l.large},
        {"anonymous mmap", l.anon},
        {"file mapping", l.file},
        {"program entry point", (const void *)getauxval(AT_ENTRY)},
        {"C library function", (const void *)(uintptr_t)&malloc},
        {"extension function", (const void *)(uintptr_t)&run},
        {"vdso", (const void *)getauxval(AT_SYSINFO_EHDR)},
    };
    for (size_t i = 0; i < sizeof objects / sizeof objects[0]; i++)
        if (objects[i].addr) /* no vdso: nothing to place */
            pl_out_number(o, "object", objects[i].name, (uintptr_t)objects[i].addr);
    for (int i = 0; i < started; i++) {
        char name[PL_NAME_MAX];
        snprintf(name, sizeof name, "thread %d stack variable", i + 1);
        pl_out_number(o, "object", name, h[i].stack_var);
    }
    char exe[PATH_MAX] = "";
    ssize_t elen = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[elen > 0 ? elen : 0] = '\0';
    pl_out_text(o, "process", "exe", "%s", exe);
    /* 0xffffffff queries without changing; ADDR_NO_RANDOMIZE here means `setarch -R` */
    pl_out_number(o, "process", "personality", (unsigned)personality(0xffffffff));
    pl_out_number(o, "process", "truncated", (uint64_t)truncated);
    teardown(&l);
    return 0;
}

const struct pl_workload pl_wl_maps = {
    "maps", "the memory map of a fresh process: heap, stacks, mappings, libraries, vdso",
    params, NPARAMS,
    run,    NULL,
};
