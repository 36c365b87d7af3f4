"""The student's own C, measured and simulated: the engine behind ``%%c``, ``pagelab sim c``,
``run_c`` and ``simulate_c``.

The cell is compiled twice with -O2 as a shared object including pagelab_cell.h (build.py): once
as is (the measured build), and once for the cache/TLB simulator. The simulated build feeds it
either every load and store of the cell ("every": the compiler's ThreadSanitizer instrumentation,
with pagelab_cell_every.h's hooks in place of libtsan) or only the cell's PL_LOAD/PL_STORE
("marked", -DPL_SIM); by default, "marked" when the cell uses them. Each build's main() then runs
in a fresh worker (execute.py; csrc/cell/cell.c loads it), so a crash, an endless loop or a
memory hog ends that worker, never the kernel. Both answers come back as labelled readings of the
cell's region (PL_REGION_BEGIN..END, else all of main()) in a CellResult (result.py), and the
simulated accesses also line by line (pagelab.sim.lines), their call sites mapped to the cell's
lines with -g and addr2line. run.py checks the arguments and the simulator's configuration in
the parent, before any worker starts.
"""
