/* Running a %%c cell: the student's C, built as a shared object with pagelab_cell.h, is loaded
 * here and its main() called with the region hooks pointing at a pl_region (and, in the
 * simulated build, every PL_LOAD/PL_STORE at the simulator). */
#ifndef PL_CELL_H
#define PL_CELL_H

#include "pl_region.h"

#define PL_CELL_ERROR_LEN 512 /* room for dlerror()'s message with a long path */

struct pl_cell {
    struct pl_region region; /* the first PL_REGION_BEGIN..END */
    struct pl_region whole;  /* all of main(): what is measured when the cell has no region */
    int begun, ended;        /* how often PL_REGION_BEGIN and PL_REGION_END ran */
    int status;              /* main()'s return value */
    char error[PL_CELL_ERROR_LEN];
};

/* Load the cell at `path` and run its main() once. cell->region.group and .sim are set by the
 * caller (either may be NULL). Returns 0, or -1 with cell->error set when it cannot load. */
int pl_cell_run(const char *path, struct pl_cell *cell);

#endif
