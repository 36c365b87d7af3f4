#include <errno.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "pl_cpuid.h"
#include "pl_sim.h"

#define AMD_L1_LEAF 0x80000005u
#define AMD_L2_LEAF 0x80000006u
#define INTEL_TLB_LEAF 0x18u
#define EAX 0
#define EBX 1
#define ECX 2
#define EDX 3

/* AMD's 4-bit associativity code of the L2 TLB fields (APM vol. 3, CPUID Fn8000_0006):
 * ways, 0 for "disabled" and reserved codes, UINT32_MAX for fully associative. */
static uint32_t amd_l2_ways(uint32_t code)
{
    static const uint32_t ways[16] = {0,  1, 2,  3,  4,  6,  8,   0,
                                      16, 0, 32, 48, 64, 96, 128, UINT32_MAX};
    return ways[code & 0xf];
}

static void set_tlb(struct pl_cpuid_tlb *t, uint32_t entries, uint32_t ways, uint32_t leaf)
{
    if (entries == 0 || ways == 0)
        return;
    t->entries = entries;
    t->ways = ways > entries ? entries : ways; /* fully associative: one set */
    t->leaf = leaf;
}

int pl_cpuid_decode_amd(uint32_t page_size, const uint32_t regs5[4], const uint32_t regs6[4],
                        struct pl_cpuid_tlb *dtlb, struct pl_cpuid_tlb *stlb)
{
    memset(dtlb, 0, sizeof *dtlb);
    memset(stlb, 0, sizeof *stlb);
    if (page_size != PL_SIM_PAGE_4K && page_size != PL_HUGE_PAGE)
        return -EINVAL;
    int r =
        page_size == PL_SIM_PAGE_4K ? EBX : EAX; /* EBX: 4 KiB pages, EAX: 2 MiB / 4 MiB pages */
    if (regs5) {
        /* bits 31:24 data TLB associativity (0xff = fully), 23:16 data TLB entries */
        uint32_t assoc = regs5[r] >> 24, entries = (regs5[r] >> 16) & 0xff;
        set_tlb(dtlb, entries, assoc == 0xff ? entries : assoc, AMD_L1_LEAF);
    }
    if (regs6) {
        /* bits 31:28 L2 data TLB associativity code, 27:16 entries */
        uint32_t ways = amd_l2_ways(regs6[r] >> 28), entries = (regs6[r] >> 16) & 0xfff;
        set_tlb(stlb, entries, ways, AMD_L2_LEAF);
    }
    return (dtlb->entries ? 1 : 0) | (stlb->entries ? 2 : 0);
}

int pl_cpuid_decode_intel(uint32_t page_size, const uint32_t *regs, int n,
                          struct pl_cpuid_tlb *dtlb, struct pl_cpuid_tlb *stlb)
{
    memset(dtlb, 0, sizeof *dtlb);
    memset(stlb, 0, sizeof *stlb);
    if (page_size != PL_SIM_PAGE_4K && page_size != PL_HUGE_PAGE)
        return -EINVAL;
    uint32_t page_bit = page_size == PL_SIM_PAGE_4K ? 1u : 2u; /* EBX bit 0: 4K, bit 1: 2M */
    struct pl_cpuid_tlb load_only = {0, 0, 0};
    for (int i = 0; i < n; i++) {
        const uint32_t *q = regs + 4 * i;
        /* EDX 4:0 type (1 data, 2 instruction, 3 unified, 4 load-only, 5 store-only),
         * 7:5 level, 8 fully associative; EBX 31:16 ways; ECX sets */
        uint32_t type = q[EDX] & 0x1f, level = (q[EDX] >> 5) & 7;
        if (!type || !(q[EBX] & page_bit))
            continue;
        uint32_t ways = q[EBX] >> 16, sets = q[ECX];
        uint32_t entries = ways * sets;
        if (q[EDX] & 0x100)
            ways = entries;
        if (level == 1 && type == 1 && !dtlb->entries)
            set_tlb(dtlb, entries, ways, INTEL_TLB_LEAF);
        else if (level == 1 && type == 4 && !load_only.entries)
            set_tlb(&load_only, entries, ways, INTEL_TLB_LEAF);
        else if (level == 2 && (type == 3 || type == 1) && !stlb->entries)
            set_tlb(stlb, entries, ways, INTEL_TLB_LEAF);
    }
    /* hybrid cores split the L1 DTLB into load-only and store-only: loads are the model's DTLB */
    if (!dtlb->entries)
        *dtlb = load_only;
    return (dtlb->entries ? 1 : 0) | (stlb->entries ? 2 : 0);
}

#if defined(__x86_64__) || defined(__i386__)

int pl_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t regs[4])
{
    memset(regs, 0, 4 * sizeof *regs);
    /* a leaf past the highest of its range reads as zeros, as a described machine's missing
     * one does (Intel CPUs would answer with the highest basic leaf's data instead) */
    if (leaf > __get_cpuid_max(leaf & 0x80000000u, NULL))
        return 0;
    __cpuid_count(leaf, subleaf, regs[0], regs[1], regs[2], regs[3]);
    return 0;
}

#else

int pl_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t regs[4])
{
    (void)leaf;
    (void)subleaf;
    memset(regs, 0, 4 * sizeof *regs);
    return -ENOSYS;
}

#endif
