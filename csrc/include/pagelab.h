/* Everything the cffi module exposes. All C in csrc/ is compiled with -D_GNU_SOURCE. */
#ifndef PAGELAB_H
#define PAGELAB_H

#include <linux/capability.h>
#include <linux/perf_event.h>
#include <sys/personality.h>

#include "cell/pl_cell.h"
#include "pl_counters.h"
#include "pl_cpuid.h"
#include "pl_events.h"
#include "pl_reclaim.h"
#include "pl_region.h"
#include "pl_sampling.h"
#include "pl_sim.h"
#include "pl_spawn.h"
#include "pl_trace.h"
#include "pl_worker.h"
#include "pl_workloads.h"

#endif
