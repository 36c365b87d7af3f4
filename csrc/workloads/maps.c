/* maps: the memory map of a fresh process. The worker builds a representative layout (a heap
 * block, a malloc'd block big enough to get its own mapping, an anonymous mmap, a private
 * mapping of a deleted temp file, thread stacks), then copies /proc/self/maps into out->text
 * followed by the addresses of objects it knows, so Python can check its classification. */
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

#define SMALL_BLOCK 4096u      /* far below glibc's 128 KiB mmap threshold: comes from [heap] */
#define LARGE_BLOCK (1u << 20) /* above that threshold: malloc gives it a mapping of its own */
#define MAX_THREADS 16
/* room kept after the maps copy for the trailer: the exe path (up to PATH_MAX) and a few
 * dozen short object lines */
#define TRAILER_RESERVE (PATH_MAX + 4096)
/* The trailer starts with this line; _maps.py splits the text there. */
#define TRAILER_MARK "#pagelab-objects\n"
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
    size_t len;
};

static int build(struct pl_ctx *c, struct layout *l)
{
    const char *dir = getenv("PAGELAB_SCRATCH");
    if (!dir || !*dir)
        dir = getenv("TMPDIR");
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : "/tmp", FILE_TEMPLATE);
    l->small = malloc(SMALL_BLOCK);
    l->large = malloc(LARGE_BLOCK);
    if (!l->small || !l->large)
        return pl_out_fail(c->out, -ENOMEM, "malloc failed");
    memset(l->small, 1, SMALL_BLOCK); /* really used, as a program would */
    memset(l->large, 1, LARGE_BLOCK);
    l->anon = mmap(NULL, l->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (l->anon == MAP_FAILED)
        return pl_out_fail(c->out, -errno, "anonymous mmap of %zu KiB failed", l->len >> 10);
    l->anon[0] = 1;
    int fd = mkstemp(path);
    if (fd < 0)
        return pl_out_fail(c->out, -errno, "cannot create a temp file in %s", path);
    /* removed at once: nothing is left behind even if the worker is killed; the mapping keeps
     * the inode alive and the map shows it as "(deleted)" */
    int rc = unlink(path) == 0 && ftruncate(fd, (off_t)l->len) == 0 ? 0 : -errno;
    /* the one page written below gets its block now: on a full filesystem (a small tmpfs) the
     * write would be SIGBUS; this way it is ENOSPC, said in words. The rest stays sparse. */
    int err = rc ? 0 : posix_fallocate(fd, 0, sysconf(_SC_PAGESIZE));
    if (err) {
        close(fd);
        return pl_out_fail(c->out, -err,
                           "cannot reserve a page for a temp file in %s: %s (set PAGELAB_SCRATCH "
                           "to a directory with room)",
                           dir && *dir ? dir : "/tmp", strerror(err));
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
}

/* Copy /proc/self/maps into out->text, whole lines only; returns bytes copied or -errno. */
static long copy_maps(struct pl_out *o, int *truncated)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t cap = sizeof o->text - TRAILER_RESERVE, n = 0;
    ssize_t got = 0;
    while (n < cap && (got = read(fd, o->text + n, cap - n)) > 0)
        n += (size_t)got;
    int err = got < 0 ? -errno : 0;
    *truncated = n == cap;
    close(fd);
    if (err)
        return err;
    if (*truncated) /* cut back to the last whole line */
        while (n > 0 && o->text[n - 1] != '\n')
            n--;
    o->text[n] = '\0';
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
        n = copy_maps(c->out, &truncated);
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

    /* The objects: "object ADDRESS NAME", then facts about this process. */
    struct pl_out *o = c->out;
    char exe[PATH_MAX] = "";
    ssize_t elen = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[elen > 0 ? elen : 0] = '\0';
    pl_out_printf(o, TRAILER_MARK);
    pl_out_printf(o, "object %lx stack variable\n", (unsigned long)(uintptr_t)&stack_var);
    pl_out_printf(o, "object %lx small malloc block\n", (unsigned long)(uintptr_t)l.small);
    pl_out_printf(o, "object %lx large malloc block\n", (unsigned long)(uintptr_t)l.large);
    pl_out_printf(o, "object %lx anonymous mmap\n", (unsigned long)(uintptr_t)l.anon);
    pl_out_printf(o, "object %lx file mapping\n", (unsigned long)(uintptr_t)l.file);
    pl_out_printf(o, "object %lx program entry point\n", getauxval(AT_ENTRY));
    pl_out_printf(o, "object %lx C library function\n", (unsigned long)(uintptr_t)&malloc);
    pl_out_printf(o, "object %lx extension function\n", (unsigned long)(uintptr_t)&run);
    if (getauxval(AT_SYSINFO_EHDR))
        pl_out_printf(o, "object %lx vdso\n", getauxval(AT_SYSINFO_EHDR));
    for (int i = 0; i < started; i++)
        pl_out_printf(o, "object %lx thread %d stack variable\n", (unsigned long)h[i].stack_var,
                      i + 1);
    pl_out_printf(o, "exe %s\n", exe);
    /* 0xffffffff queries without changing; ADDR_NO_RANDOMIZE here means `setarch -R` */
    pl_out_printf(o, "personality %x\n", (unsigned)personality(0xffffffff));
    pl_out_printf(o, "truncated %d\n", truncated);
    teardown(&l);
    return 0;
}

const struct pl_workload pl_wl_maps = {
    "maps", "the memory map of a fresh process: heap, stacks, mappings, libraries, vdso",
    params, NPARAMS,
    run,    NULL,
};
