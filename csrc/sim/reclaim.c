/* The page-reclaim model (pl_reclaim.h). Every policy keeps its resident pages on one or two
 * doubly linked lists over dense page ids (head = newest), so each reference costs O(1) outside
 * reclaim scans; a scan rotates at most every resident page twice.
 *
 * KERNEL follows mm/vmscan.c's shrink_page_list and page_check_references for mapped pages: a
 * fault puts the page at the head of the inactive list with its PTE accessed bit set ("young").
 * Reclaim looks at the inactive tail: young and already PG_referenced -> PAGEREF_ACTIVATE (to the
 * active list); young for the first time -> set PG_referenced, PAGEREF_KEEP (one more trip round
 * the inactive list); not young -> PAGEREF_RECLAIM. The accessed bit is cleared whenever it is
 * looked at. When the active list outgrows the inactive one, its tail is deactivated (as
 * shrink_active_list does for pages that are not executable file pages).
 * NEVER_ACTIVATE is the course lab's kernel change: the PAGEREF_ACTIVATE case does what the
 * PAGEREF_RECLAIM case does. */
#include <errno.h>
#include <stdlib.h>

#include "pl_reclaim.h"

enum { RC_NONE, RC_INACTIVE, RC_ACTIVE }; /* which list a page is on (NONE: not resident) */

struct rc_list {
    int32_t head, tail, size;
};

struct rc_model {
    int32_t *prev, *next;
    uint8_t *where, *young, *referenced;
    struct rc_list list[3]; /* indexed by RC_INACTIVE, RC_ACTIVE; [RC_NONE] unused */
};

static void rc_unlink(struct rc_model *m, int32_t p)
{
    struct rc_list *l = &m->list[m->where[p]];
    if (m->prev[p] >= 0)
        m->next[m->prev[p]] = m->next[p];
    else
        l->head = m->next[p];
    if (m->next[p] >= 0)
        m->prev[m->next[p]] = m->prev[p];
    else
        l->tail = m->prev[p];
    l->size--;
    m->where[p] = RC_NONE;
}

static void rc_push(struct rc_model *m, int32_t p, int which)
{
    struct rc_list *l = &m->list[which];
    m->prev[p] = -1;
    m->next[p] = l->head;
    if (l->head >= 0)
        m->prev[l->head] = p;
    else
        l->tail = p;
    l->head = p;
    l->size++;
    m->where[p] = (uint8_t)which;
}

/* Free one frame; returns the page evicted. The list is never empty here: frames >= 1 are full. */
static int32_t rc_evict(struct rc_model *m, int policy, struct pl_reclaim_stats *s)
{
    struct rc_list *in = &m->list[RC_INACTIVE], *act = &m->list[RC_ACTIVE];
    for (;;) {
        if (act->size > in->size) { /* refill the inactive list from the active tail */
            int32_t p = act->tail;
            rc_unlink(m, p);
            m->young[p] = 0;
            rc_push(m, p, RC_INACTIVE);
            s->deactivations++;
        }
        int32_t p = in->tail;
        rc_unlink(m, p);
        if (policy == PL_RECLAIM_CLOCK && m->young[p]) {
            m->young[p] = 0;
            rc_push(m, p, RC_INACTIVE);
            continue;
        }
        if (policy == PL_RECLAIM_KERNEL || policy == PL_RECLAIM_NEVER_ACTIVATE) {
            int young = m->young[p];
            m->young[p] = 0;
            if (young && !m->referenced[p]) { /* PAGEREF_KEEP */
                m->referenced[p] = 1;
                rc_push(m, p, RC_INACTIVE);
                continue;
            }
            if (young && policy == PL_RECLAIM_KERNEL) { /* PAGEREF_ACTIVATE */
                m->referenced[p] = 0;
                rc_push(m, p, RC_ACTIVE);
                s->activations++;
                continue;
            }
            m->referenced[p] = 0; /* PAGEREF_RECLAIM (and, changed, ACTIVATE) */
        }
        s->evictions++;
        return p;
    }
}

static void rc_reference(struct rc_model *m, int32_t p, int32_t frames, int policy,
                         struct pl_reclaim_stats *s)
{
    if (m->where[p] != RC_NONE) {
        if (policy == PL_RECLAIM_LRU) {
            rc_unlink(m, p);
            rc_push(m, p, RC_INACTIVE);
        }
        m->young[p] = 1; /* the hardware sets the PTE accessed bit */
        return;
    }
    s->faults++;
    if (m->list[RC_INACTIVE].size + m->list[RC_ACTIVE].size == frames)
        rc_evict(m, policy, s);
    m->young[p] = 1;
    m->referenced[p] = 0;
    rc_push(m, p, RC_INACTIVE);
}

int pl_reclaim_run(const int32_t *refs, int64_t n, int32_t npages, int32_t frames, int policy,
                   struct pl_reclaim_stats *out)
{
    if (!refs || n < 0 || npages < 1 || frames < 1 || policy < 0 ||
        policy >= PL_RECLAIM_NPOLICIES || !out)
        return -EINVAL;
    for (int64_t i = 0; i < n; i++)
        if (refs[i] < 0 || refs[i] >= npages)
            return -EINVAL;
    struct rc_model m = {
        .prev = malloc(sizeof(int32_t) * (size_t)npages),
        .next = malloc(sizeof(int32_t) * (size_t)npages),
        .where = calloc((size_t)npages, 1),
        .young = calloc((size_t)npages, 1),
        .referenced = calloc((size_t)npages, 1),
        .list = {{-1, -1, 0}, {-1, -1, 0}, {-1, -1, 0}},
    };
    int rc = -ENOMEM;
    if (m.prev && m.next && m.where && m.young && m.referenced) {
        *out = (struct pl_reclaim_stats){.refs = n};
        for (int64_t i = 0; i < n; i++)
            rc_reference(&m, refs[i], frames, policy, out);
        rc = 0;
    }
    free(m.prev);
    free(m.next);
    free(m.where);
    free(m.young);
    free(m.referenced);
    return rc;
}
