/* TLB geometry as the CPU reports it through CPUID, for the simulator's defaults.
 *   AMD:   leaf 0x80000005 (L1 DTLB: EBX for 4 KiB pages, EAX for 2 MiB) and 0x80000006
 *          (L2 DTLB: EBX for 4 KiB, EAX for 2 MiB; associativity as a 4-bit code).
 *   Intel: leaf 0x18, deterministic address translation parameters (one subleaf per TLB).
 * Other CPUs (and x86 CPUs without these leaves, or whose hypervisor zeroes them) report
 * nothing; the caller falls back to the PL_SIM_DEFAULT_* values of pl_sim.h. The decoders take
 * register values, from this CPU or a described one. */
#ifndef PL_CPUID_H
#define PL_CPUID_H

#include <stdint.h>

struct pl_cpuid_tlb {
    uint32_t entries; /* 0: not reported */
    uint32_t ways;    /* == entries when fully associative */
    uint32_t leaf;    /* the CPUID leaf it came from */
};

/* One CPUID leaf and subleaf of the running CPU into EAX, EBX, ECX, EDX; a leaf past the CPU's
 * highest reads as zeros. 0, or -ENOSYS where there is no CPUID (not x86). pagelab reads CPUID
 * through pagelab.machine.cpuid only, which can read a described machine's leaves instead. */
int pl_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t regs[4]);

/* AMD: regs5 and regs6 are EAX, EBX, ECX, EDX of leaves 0x80000005 and 0x80000006. */
int pl_cpuid_decode_amd(uint32_t page_size, const uint32_t regs5[4], const uint32_t regs6[4],
                        struct pl_cpuid_tlb *dtlb, struct pl_cpuid_tlb *stlb);
/* Intel: regs holds EAX, EBX, ECX, EDX of leaf 0x18 subleaves 0 .. n-1. */
int pl_cpuid_decode_intel(uint32_t page_size, const uint32_t *regs, int n,
                          struct pl_cpuid_tlb *dtlb, struct pl_cpuid_tlb *stlb);

#endif
