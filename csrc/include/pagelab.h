/* Everything the cffi module exposes. All C in csrc/ is compiled with -D_GNU_SOURCE. */
#ifndef PAGELAB_H
#define PAGELAB_H

#include <linux/capability.h>
#include <linux/perf_event.h>
#include <sys/personality.h>

#include "cell/pl_cell.h"
#include "harness/pl_region.h"
#include "perf/pl_counters.h"
#include "perf/pl_events.h"
#include "perf/pl_sampling.h"
#include "proc/pl_spawn.h"
#include "proc/pl_worker.h"
#include "sim/pl_coherence.h"
#include "sim/pl_cpuid.h"
#include "sim/pl_reclaim.h"
#include "sim/pl_sim.h"
#include "sim/pl_trace.h"
#include "workloads/pl_workloads.h"

#endif
