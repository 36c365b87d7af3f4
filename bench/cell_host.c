/* Runs a %%c cell's measured build as pagelab does, its main() called in a process of its own:
 * `cell_host CELL.so`. Cachegrind runs this, so that it sees the very machine code %%c measured
 * (the bench's sim.cell_vs_cachegrind figures, tests/cell/test_cell_cachegrind.py). */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    void *so = argc == 2 ? dlopen(argv[1], RTLD_NOW) : NULL;
    int (*cell)(void) = so ? (int (*)(void))dlsym(so, "pl_cell_main") : NULL;
    if (!cell) {
        fprintf(stderr, "usage: cell_host CELL.so (%s)\n", dlerror());
        return 2;
    }
    return cell();
}
