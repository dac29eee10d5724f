/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Non-blocking collectives with several outstanding at once, on several
 * communicators and several per communicator, completed through every MPI
 * completion call: MPI_Test polling, MPI_Wait (in an order that differs per rank),
 * MPI_Waitall, MPI_Waitany, MPI_Testsome. Each round posts a mix of Iallreduce,
 * Ireduce, Ibcast, Iallgather, Ialltoall, Ireduce_scatter_block, Ireduce_scatter.
 *
 *   t_nb [--rounds N] [--deadline SEC]
 */
#include "ompi_test.h"

enum { NCOMM = 4, PER_COMM = 3, NREQ = NCOMM * PER_COMM };

typedef struct {
    int kind; /* 0 allreduce, 1 reduce, 2 bcast, 3 allgather, 4 alltoall, 5 rsb, 6 reduce_scatter */
    MPI_Comm comm;
    size_t count;
    int root;
    int *s, *r;
    int *cnts;   /* reduce_scatter counts: valid until completion, as MPI asks */
    size_t rlen; /* ints in r */
} job_t;

static long g_checks;

static int val(int rank, size_t i, int salt)
{
    return (int)(ot_hash((uint64_t)salt, (uint64_t)rank, i) % 1000);
}

static void post(job_t *j, int salt, MPI_Request *q)
{
    int n, me;
    MPI_Comm_size(j->comm, &n);
    MPI_Comm_rank(j->comm, &me);
    const size_t c = j->count;
    j->cnts = NULL;
    switch (j->kind) {
    case 0:
    case 1:
        j->rlen = c;
        j->s = malloc(sizeof(int) * c);
        for (size_t i = 0; i < c; i++)
            j->s[i] = val(me, i, salt);
        break;
    case 2:
        j->rlen = c;
        j->s = NULL;
        break;
    case 3:
        j->rlen = c * (size_t)n;
        j->s = malloc(sizeof(int) * c);
        for (size_t i = 0; i < c; i++)
            j->s[i] = val(me, i, salt);
        break;
    default: /* alltoall, reduce-scatters: n blocks in */
        j->rlen = j->kind == 4 ? c * (size_t)n : c;
        j->s = malloc(sizeof(int) * c * (size_t)n);
        for (size_t i = 0; i < c * (size_t)n; i++)
            j->s[i] = val(me, i, salt);
        break;
    }
    j->r = ot_alloc(sizeof(int) * j->rlen);
    switch (j->kind) {
    case 0: OT_MPI(MPI_Iallreduce(j->s, j->r, (int)c, MPI_INT, MPI_SUM, j->comm, q)); break;
    case 1: OT_MPI(MPI_Ireduce(j->s, j->r, (int)c, MPI_INT, MPI_SUM, j->root, j->comm, q)); break;
    case 2:
        if (me == j->root)
            for (size_t i = 0; i < c; i++)
                j->r[i] = val(j->root, i, salt);
        OT_MPI(MPI_Ibcast(j->r, (int)c, MPI_INT, j->root, j->comm, q));
        break;
    case 3: OT_MPI(MPI_Iallgather(j->s, (int)c, MPI_INT, j->r, (int)c, MPI_INT, j->comm, q)); break;
    case 4: OT_MPI(MPI_Ialltoall(j->s, (int)c, MPI_INT, j->r, (int)c, MPI_INT, j->comm, q)); break;
    case 5: OT_MPI(MPI_Ireduce_scatter_block(j->s, j->r, (int)c, MPI_INT, MPI_SUM, j->comm, q)); break;
    case 6: /* equal counts here, so the send side is n * c */
        j->cnts = malloc(sizeof(int) * (size_t)n);
        for (int i = 0; i < n; i++)
            j->cnts[i] = (int)c;
        OT_MPI(MPI_Ireduce_scatter(j->s, j->r, j->cnts, MPI_INT, MPI_SUM, j->comm, q));
        break;
    }
}

static void check(job_t *j, int salt)
{
    int n, me;
    MPI_Comm_size(j->comm, &n);
    MPI_Comm_rank(j->comm, &me);
    const size_t c = j->count;
    for (size_t i = 0; i < j->rlen; i++) {
        long want = 0;
        switch (j->kind) {
        case 0:
        case 1:
            if (j->kind == 1 && me != j->root)
                goto done;
            for (int k = 0; k < n; k++)
                want += val(k, i, salt);
            break;
        case 2: want = val(j->root, i, salt); break;
        case 3: want = val((int)(i / c), i % c, salt); break;
        case 4: /* block b came from rank b, which sent its block me */
            want = val((int)(i / c), (size_t)me * c + i % c, salt);
            break;
        default:
            for (int k = 0; k < n; k++)
                want += val(k, (size_t)me * c + i, salt);
            break;
        }
        if (j->r[i] != (int)want)
            OT_FAIL("kind %d count %zu: element %zu got %d want %ld", j->kind, c, i, j->r[i], want);
    }
done:
    ot_check_guard("nb", j->r, sizeof(int) * j->rlen);
    free(j->s);
    free(j->r);
    free(j->cnts);
    g_checks++;
}

int main(int argc, char **argv)
{
    ot_init(&argc, &argv);
    const int rounds = atoi(ot_opt(argc, argv, "--rounds", "10"));
    const double deadline = atof(ot_opt(argc, argv, "--deadline", "120"));
    MPI_Comm comms[NCOMM];
    comms[0] = MPI_COMM_WORLD;
    for (int k = 1; k < NCOMM; k++)
        OT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[k]));

    static const size_t sizes[] = {1, 17, 1000, 40000, 300000};
    for (int round = 0; round < rounds; round++) {
        job_t jobs[NREQ];
        MPI_Request q[NREQ];
        /* the same posting order on every rank, as MPI requires per communicator */
        for (int i = 0; i < NREQ; i++) {
            jobs[i].kind = (i + round) % 7;
            jobs[i].comm = comms[i % NCOMM];
            jobs[i].count = sizes[(i * 7 + round) % 5];
            jobs[i].root = (i + round) % ot_size;
            post(&jobs[i], round * 100 + i, &q[i]);
        }
        const int mode = round % 5;
        if (mode == 0) { /* MPI_Test polling, per-rank start point */
            int left = NREQ;
            double t0 = MPI_Wtime();
            while (left) {
                for (int k = 0; k < NREQ; k++) {
                    int i = (k + ot_rank) % NREQ, flag = 0;
                    if (q[i] == MPI_REQUEST_NULL)
                        continue;
                    OT_MPI(MPI_Test(&q[i], &flag, MPI_STATUS_IGNORE));
                    if (flag)
                        left--;
                }
                if (MPI_Wtime() - t0 > deadline) {
                    printf("HANG: rank %d: %d requests pending\n", ot_rank, left);
                    _exit(3);
                }
            }
        } else if (mode == 1) { /* MPI_Wait, reverse order on odd ranks */
            for (int k = 0; k < NREQ; k++)
                OT_MPI(MPI_Wait(&q[ot_rank & 1 ? NREQ - 1 - k : k], MPI_STATUS_IGNORE));
        } else if (mode == 2) {
            OT_MPI(MPI_Waitall(NREQ, q, MPI_STATUSES_IGNORE));
        } else if (mode == 3) {
            for (int k = 0; k < NREQ; k++) {
                int idx;
                OT_MPI(MPI_Waitany(NREQ, q, &idx, MPI_STATUS_IGNORE));
                if (idx == MPI_UNDEFINED)
                    OT_FAIL("MPI_Waitany: no active request left after %d", k);
            }
        } else { /* MPI_Testsome */
            int left = NREQ, idx[NREQ], outc;
            while (left) {
                OT_MPI(MPI_Testsome(NREQ, q, &outc, idx, MPI_STATUSES_IGNORE));
                if (outc != MPI_UNDEFINED)
                    left -= outc;
            }
        }
        for (int i = 0; i < NREQ; i++) {
            if (q[i] != MPI_REQUEST_NULL)
                OT_FAIL("request %d not freed", i);
            check(&jobs[i], round * 100 + i);
        }
    }
    for (int k = 1; k < NCOMM; k++)
        OT_MPI(MPI_Comm_free(&comms[k]));
    long total = 0;
    MPI_Reduce(&g_checks, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (ot_rank == 0)
        printf("OK t_nb: %ld checks on %d ranks (%d rounds of %d outstanding)\n", total, ot_size, rounds,
               NREQ);
    MPI_Finalize();
    return 0;
}
