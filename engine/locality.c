/* SPDX-License-Identifier: BSD-3-Clause */
/* The locality decision: which transport carries each pair of ranks. Every rank makes it
 * from the same all-gathered cards, so every rank gets the same answer (and the same
 * error); a pure function of the table and the cards, unit-tested in
 * test/unit/check_engine.c. */
#include "eng_log.h"
#include "transport.h"

static const eng_tp_card_t *card_of(const eng_tp_card_t *cards, size_t stride, int r)
{
    return (const eng_tp_card_t *)((const char *)cards + (size_t)r * stride);
}

dfcclResult_t eng_tp_pick(const eng_transport_t *const table[ENG_TP_NUM], const eng_tp_card_t *cards,
                          size_t stride, int nranks, int me, uint8_t *tp, uint32_t *used_p)
{
    uint32_t used = 1u << ENG_TP_SHM; /* every rank's own segment */
    for (int p = 0; p < nranks; p++)
        for (int q = 0; q < nranks; q++) {
            if (p == q) {
                if (p == me)
                    tp[q] = ENG_TP_SHM;
                continue;
            }
            const eng_tp_card_t *a = card_of(cards, stride, p), *b = card_of(cards, stride, q);
            int pick = -1;
            /* the first transport, in the table's order, that both ends have and that
             * reaches the pair. Each rank's card says what its build has, so the
             * decision is the cards' alone: one this build lacks (so this rank is not an
             * end of the pair) reaches what the ends' builds reach with it, which for the
             * net is every pair */
            for (int t = 0; t < ENG_TP_NUM && pick < 0; t++)
                if (((a->built & b->built) >> t & 1) && (!table[t] || table[t]->reaches(a, b)))
                    pick = t;
            if (pick < 0) {
                /* shm reaches every pair on one host: what is left needs the net */
                const int lacking = a->built >> ENG_TP_UCX & 1 ? q : p;
                return eng_set_error(dfcclUnsupported, "dfcclCommInit",
                                     "rank %d (host '%.64s') must be reached over the net, but its dfccl (or "
                                     "this one) has no UCX transport (configure --with-ucx)",
                                     lacking, card_of(cards, stride, lacking)->host);
            }
            used |= 1u << pick;
            if (p == me)
                tp[q] = (uint8_t)pick;
        }
    *used_p = used;
    return dfcclSuccess;
}
