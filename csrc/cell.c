#include "pl_cell.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define PL_CELL_RUNNER
#include "pagelab_cell.h"

static void cell_begin(void *ctx)
{
    struct pl_cell *cell = ctx;
    if (cell->begun++ == 0)
        pl_region_begin(&cell->region);
}

static void cell_end(void *ctx)
{
    struct pl_cell *cell = ctx;
    if (cell->begun > 0 && cell->ended++ == 0)
        pl_region_end(&cell->region);
}

static void cell_access(void *ctx, uint64_t addr, uint32_t size, int is_write)
{
    struct pl_cell *cell = ctx;
    if (cell->region.sim)
        pl_sim_access(cell->region.sim, addr, size, is_write);
}

int pl_cell_run(const char *path, struct pl_cell *cell)
{
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        snprintf(cell->error, sizeof cell->error, "%s", dlerror());
        return -1;
    }
    struct pl_cell_hooks *hooks = dlsym(handle, "pl_cell_hooks");
    int (*cell_main)(int, char **) = (int (*)(int, char **))dlsym(handle, "pl_cell_main");
    if (!hooks || !cell_main) {
        snprintf(cell->error, sizeof cell->error, "the cell defines no main()");
        dlclose(handle);
        return -1;
    }
    hooks->begin = cell_begin;
    hooks->end = cell_end;
    hooks->access = cell_access;
    hooks->ctx = cell;
    cell->whole.group = cell->region.group;
    cell->whole.sim = cell->region.sim;
    char name[] = "cell";
    char *argv[] = {name, NULL};
    pl_region_begin(&cell->whole);
    cell->status = cell_main(1, argv);
    pl_region_end(&cell->whole);
    fflush(stdout);
    /* not dlclose()d: the cell may have registered atexit handlers; the worker exits soon */
    return 0;
}
