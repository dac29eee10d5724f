/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_netstray: a stray or hostile UCX peer sends active messages to a rank's net proxy;
 * the rank must drop them and keep working. Two ranks set up a communicator over UCX
 * (DFCCL_NET=ucx); rank 1 keeps what the bootstrap all-gather carried, finds rank 0's
 * proxy worker address in it (ucx_transport/net_boot.h), connects to it from a UCX
 * context of its own and sends messages under ids dfccl does not use (0..10, 17, 18,
 * 100, 1000, 65535: short, fragmented eager and rendezvous), and under dfccl's own ids
 * (ucx_transport/net_wire.h: steps, credits, goodbyes, asks, descriptions and goodbye
 * answers) with a
 * header of the wrong size or naming no communicator. After each id both
 * ranks run a checked allreduce on the communicator: rank 0 must still be alive and
 * right. Rank 1 prints each case ("case: ... -> ...") and "t_netstray: N messages"; rank
 * 0 prints "OK". Exit 77 with "SKIP: ..." when the library has no UCX transport.
 *
 * usage: mpirun -np 2 t_netstray
 */
#include <ucp/api/ucp.h>

#include "../mpi/test_common.h"
#include "net_boot.h"
#include "net_wire.h"

/* every all-gather the communicator's set-up made, as rank 1 received it */
typedef struct {
    void *buf;
    size_t bytes;
} ag_rec_t;
static ag_rec_t recs[64];
static int nrecs;

static int recording_allgather(const void *sendbuf, void *recvbuf, size_t bytes, void *ctx)
{
    (void)ctx;
    if (MPI_Allgather(sendbuf, (int)bytes, MPI_BYTE, recvbuf, (int)bytes, MPI_BYTE, MPI_COMM_WORLD) !=
        MPI_SUCCESS)
        return -1;
    if (nrecs < 64) {
        recs[nrecs].buf = tc_malloc(bytes * 2);
        memcpy(recs[nrecs].buf, recvbuf, bytes * 2);
        recs[nrecs++].bytes = bytes;
    }
    return 0;
}

/* rank 0's worker 0 address in the net transport's exchange: its block begins with
 * status 0 and a header with rank 0's pid */
static const void *find_addr(int pid0, size_t *len_p)
{
    const void *found = NULL;
    for (int i = 0; i < nrecs; i++) {
        const char *b = recs[i].buf;
        if (recs[i].bytes < sizeof(int32_t) + sizeof(net_boot_hdr_t))
            continue;
        int32_t st;
        net_boot_hdr_t h;
        memcpy(&st, b, sizeof st);
        memcpy(&h, b + sizeof st, sizeof h);
        if (st != 0 || h.pid != pid0 || h.npx < 1 || h.npx > ENG_MAX_NET_THREADS || !h.addr_len[0] ||
            h.addr_len[0] > recs[i].bytes - sizeof st - sizeof h)
            continue;
        found = b + sizeof st + sizeof h;
        *len_p = h.addr_len[0];
    }
    return found;
}

static ucp_context_h ctx;
static ucp_worker_h worker;
static ucp_ep_h ep;
static int ep_failed;

static void ep_err(void *arg, ucp_ep_h e, ucs_status_t st)
{
    (void)arg, (void)e;
    ep_failed = 1;
    fprintf(stderr, "[rank 1] the endpoint to rank 0 failed: %s\n", ucs_status_string(st));
}

static void send_cb(void *req, ucs_status_t st, void *user)
{
    (void)req;
    *(ucs_status_t *)user = st;
}

/* progress until the request completes, at most 5 s; its status, or "cancelled" */
static const char *finish(ucs_status_ptr_t r, ucs_status_t *done)
{
    if (r == NULL)
        return "completed at once";
    if (UCS_PTR_IS_ERR(r))
        return ucs_status_string(UCS_PTR_STATUS(r));
    const double t0 = MPI_Wtime();
    while (*done == UCS_INPROGRESS && MPI_Wtime() - t0 < 5)
        ucp_worker_progress(worker);
    if (*done == UCS_INPROGRESS) {
        ucp_request_cancel(worker, r);
        while (*done == UCS_INPROGRESS)
            ucp_worker_progress(worker);
        ucp_request_free(r);
        return "not completed in 5 s (cancelled)";
    }
    ucp_request_free(r);
    return ucs_status_string(*done);
}

static int nsent;

static void send_one(unsigned id, size_t hlen, size_t dlen, int rndv, const char *what)
{
    static char hdr[256], data[1 << 20];
    memset(hdr, 0xA5, sizeof hdr);
    memset(data, 0x5A, sizeof data);
    ucs_status_t done = UCS_INPROGRESS;
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof prm);
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
    prm.cb.send = send_cb;
    prm.user_data = &done;
    prm.flags = rndv ? UCP_AM_SEND_FLAG_RNDV : UCP_AM_SEND_FLAG_EAGER;
    const char *res = finish(ucp_am_send_nbx(ep, id, hdr, hlen, data, dlen, &prm), &done);
    printf("case: active message id %u, %zu B header, %zu B data, %s%s -> sent: %s\n", id, hlen, dlen,
           rndv ? "rendezvous" : "eager", what, res);
    nsent++;
}

static void flush_ep(void)
{
    ucs_status_t done = UCS_INPROGRESS;
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof prm);
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    prm.cb.send = send_cb;
    prm.user_data = &done;
    (void)finish(ucp_ep_flush_nbx(ep, &prm), &done);
}

/* both ranks: rank 0 must still be alive and give right results */
static void alive(dfcclComm_t comm, const char *after)
{
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    tc_checked_allreduce(comm, after);
    if (tc_rank == 1)
        printf("  rank 0's communicator after it: allreduce right\n");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    tc_init_world();
    if (tc_size != 2)
        TC_FAIL("run with 2 ranks");
    setenv("DFCCL_NET", "ucx", 0);
    int pid0 = (int)getpid();
    MPI_CHECK(MPI_Bcast(&pid0, 1, MPI_INT, 0, MPI_COMM_WORLD));

    dfcclComm_t comm;
    dfcclResult_t r = dfcclCommInit(&comm, 2, tc_rank, recording_allgather, NULL);
    if (r == dfcclUnsupported) {
        if (tc_rank == 0)
            printf("SKIP: no net transport in this build (%s)\n", dfcclGetLastError());
        MPI_Finalize();
        return 0;
    }
    CHECK(r);

    /* ids dfccl does not use; then its own (11 step, 12 credit, 13 goodbye, 14 ask, 15
     * descriptions, 16 a goodbye's answer) with a header of the wrong size and with one
     * naming no communicator */
    static const unsigned stray[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 17, 18, 100, 1000, 65535};
    const int nstray = (int)(sizeof stray / sizeof stray[0]);
    if (tc_rank == 1) {
        size_t alen = 0;
        const void *addr = find_addr(pid0, &alen);
        if (!addr)
            TC_FAIL("rank 0's worker address is not in the %d all-gathers of the set-up", nrecs);
        ucp_params_t p;
        memset(&p, 0, sizeof p);
        p.field_mask = UCP_PARAM_FIELD_FEATURES;
        p.features = UCP_FEATURE_AM;
        ucp_config_t *cfg;
        if (ucp_config_read(NULL, NULL, &cfg) != UCS_OK || ucp_init(&p, cfg, &ctx) != UCS_OK)
            TC_FAIL("ucp_init");
        ucp_config_release(cfg);
        ucp_worker_params_t wp;
        memset(&wp, 0, sizeof wp);
        if (ucp_worker_create(ctx, &wp, &worker) != UCS_OK)
            TC_FAIL("ucp_worker_create");
        ucp_ep_params_t ep_p;
        memset(&ep_p, 0, sizeof ep_p);
        ep_p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                          UCP_EP_PARAM_FIELD_ERR_HANDLER;
        ep_p.address = addr;
        ep_p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
        ep_p.err_handler.cb = ep_err;
        if (ucp_ep_create(worker, &ep_p, &ep) != UCS_OK)
            TC_FAIL("ucp_ep_create to rank 0's worker (%zu B address)", alen);
        printf("rank 1 (pid %d): connected to rank 0's (pid %d) proxy worker (%zu B address) from a context "
               "of its own\n",
               (int)getpid(), pid0, alen);
    }
    char after[96];
    for (int i = 0; i < nstray; i++) {
        if (tc_rank == 1) {
            send_one(stray[i], 8, 16, 0, "");
            send_one(stray[i], 0, 65536, 0, " (fragmented)");
            send_one(stray[i], 16, 1 << 20, 1, "");
            flush_ep();
        }
        snprintf(after, sizeof after, "stray active messages of id %u", stray[i]);
        alive(comm, after);
    }
    const size_t hl = sizeof(net_am_hdr_t);
    for (unsigned id = AM_FIRST; id <= AM_LAST; id++) {
        if (tc_rank == 1) {
            send_one(id, 3, 16, 0, " (dfccl's id, a 3-byte header)");
            send_one(id, 0, 0, 0, " (dfccl's id, no header)");
            send_one(id, hl + 8, 4096, 0, " (dfccl's id, a header 8 bytes too long)");
            send_one(id, hl, 4096, 0, " (dfccl's id, a header naming no communicator)");
            send_one(id, hl, sizeof(net_desc_t), 0, " (dfccl's id, a header naming no communicator)");
            send_one(id, hl, 1 << 20, 1, " (dfccl's id, a header naming no communicator)");
            flush_ep();
        }
        snprintf(after, sizeof after, "malformed active messages of dfccl's id %u", id);
        alive(comm, after);
    }
    if (tc_rank == 1) {
        if (ep_failed)
            printf("rank 1: the endpoint to rank 0 failed on the way (rank 0 may close it)\n");
        ucp_request_param_t prm;
        memset(&prm, 0, sizeof prm);
        prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        prm.flags = UCP_EP_CLOSE_FLAG_FORCE;
        ucs_status_t done = UCS_INPROGRESS;
        ucs_status_ptr_t cr = ucp_ep_close_nbx(ep, &prm);
        if (cr && !UCS_PTR_IS_ERR(cr)) {
            while (ucp_request_check_status(cr) == UCS_INPROGRESS)
                ucp_worker_progress(worker);
            ucp_request_free(cr);
        }
        (void)done;
        ucp_worker_destroy(worker);
        ucp_cleanup(ctx);
        printf("t_netstray: %d messages sent to rank 0's proxy under %d stray and %d own ids\n", nsent,
               nstray, AM_LAST - AM_FIRST + 1);
    }
    CHECK(dfcclCommDestroy(comm));
    for (int i = 0; i < nrecs; i++)
        free(recs[i].buf);
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (tc_rank == 0)
        printf("OK\n");
    MPI_Finalize();
    return 0;
}
