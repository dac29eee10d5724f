/* SPDX-License-Identifier: BSD-3-Clause */
/* The endpoint cache: one endpoint per (worker, peer worker address), shared by the
 * communicators that reach that peer through the worker and counted by them; created
 * with error handling for peers on other hosts, watched by the proxy for peers on this
 * one; closed once retired and unused, outside UCX's progress. A failed endpoint takes
 * its peer away from every communicator using it. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "eng_clock.h"
#include "eng_log.h"
#include "ucx_state.h"

/* Endpoint e failed or its peer's process exited: every live communicator using it loses
 * that peer, and no later one gets it. Called with e's proxy lock held (the list of
 * communicators changes only under every proxy lock); a communicator still in set-up
 * checks its endpoints when it joins the list. The endpoint itself is closed outside
 * UCX's progress, once unused (net_ep_reap). */
static void ep_failed(net_ep_t *e, const char *why)
{
    e->retired = e->failed = 1;
    for (struct eng_net_comm *nc = net_ucx.comms; nc; nc = nc->next)
        if (e->px < nc->npx)
            for (int p = 0; p < nc->nranks; p++)
                if (*ep_of(nc, e->px, p) == e)
                    net_peer_lost(nc, p, why);
}

static void peer_failed(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)ep;
    ep_failed(arg, ucs_status_string(status));
}

/* Same-host peers' endpoints carry no error handling (see ep_create): a peer whose
 * process is gone is found here. Called with P's lock held. */
void net_watch_peers(net_proxy_t *P)
{
    for (net_ep_t *e = P->eps; e; e = e->next)
        if (e->pid && !e->failed && kill(e->pid, 0) != 0 && errno == ESRCH)
            ep_failed(e, "its process exited");
}

/* Wait for an operation (flush, close) to finish, progressing the worker; gives up
 * after `ns` (a peer that stopped answering). Returns 0 when it finished. */
int net_wait_request(ucp_worker_h worker, ucs_status_ptr_t r, uint64_t ns)
{
    if (!UCS_PTR_IS_PTR(r))
        return 0;
    const uint64_t t0 = eng_now_ns();
    while (ucp_request_check_status(r) == UCS_INPROGRESS && eng_now_ns() - t0 < ns)
        ucp_worker_progress(worker);
    const int done = ucp_request_check_status(r) != UCS_INPROGRESS;
    if (!done)
        ucp_request_cancel(worker, r);
    ucp_request_free(r);
    return done ? 0 : -1;
}

/* Closes and frees an endpoint no communicator uses, taken off its list. FORCE is valid
 * only where both ends handle errors (another host's peer: it takes our leaving for a
 * failure of a communicator it has already said goodbye to); a same-host endpoint,
 * created without error handling, is flushed and closed. Called with its proxy's lock
 * held, not from within UCX's progress (it progresses the worker). */
static void ep_close(net_proxy_t *P, net_ep_t *e)
{
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof(prm));
    if (e->peer_mode) {
        prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        prm.flags = UCP_EP_CLOSE_FLAG_FORCE;
    }
    net_wait_request(P->worker, ucp_ep_close_nbx(e->ep, &prm), 1000000000ull);
    free(e);
}

/* Closes P's retired endpoints that no communicator uses any more; `all`: every unused
 * one (the worker is going). Called with P's lock held, outside UCX's progress. */
void net_ep_reap(net_proxy_t *P, int all)
{
    for (net_ep_t **pp = &P->eps; *pp;) {
        net_ep_t *e = *pp;
        if (e->refs == 0 && (e->retired || all)) {
            *pp = e->next;
            ep_close(P, e);
        } else {
            pp = &e->next;
        }
    }
}

/* "Same host" for the endpoint's error mode and the process watch: the host name the
 * rank reports (DFCCL_HOST, else gethostname: ranks that claim different hosts are
 * treated as such), the kernel's boot id (two machines may report one name) and the pid
 * namespace (processes in different containers cannot see each other's pids). */
void net_where_am_i(char *buf, size_t len)
{
    char boot[40] = {0};
    const char *name = eng_config.host;
    struct stat ns;
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(boot, sizeof(boot), f))
            boot[0] = 0;
        fclose(f);
    }
    boot[strcspn(boot, "\n")] = 0;
    if (stat("/proc/self/ns/pid", &ns) != 0)
        ns.st_ino = 0;
    memset(buf, 0, len);
    snprintf(buf, len, "%s/%s/%llu", name, boot, (unsigned long long)ns.st_ino);
}

/* An endpoint to a peer's worker. UCX admits only transports that can report a peer's
 * failure to an endpoint in UCP_ERR_HANDLING_MODE_PEER; on one host that excludes shared
 * memory and cma, and the traffic then crawls over tcp. So a peer on the same host
 * (reached over UCX when forced for testing) gets an endpoint without error handling,
 * and the proxy watches its process instead (net_watch_peers); a peer on another host gets
 * PEER mode (rc, dc, ud and tcp all support it). Without error handling a transport
 * error is fatal to the process, and a rendezvous (cma) from a peer that just died is
 * one: steps to same-host peers travel eager, through shared-memory buffers only. */
static ucs_status_t ep_create(ucp_worker_h worker, const void *addr, int peer_mode, net_ep_t *e)
{
    ucp_ep_params_t ep;
    memset(&ep, 0, sizeof(ep));
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.address = (const ucp_address_t *)addr;
    ep.err_mode = peer_mode ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
    if (peer_mode) {
        ep.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
        ep.err_handler.cb = peer_failed;
        ep.err_handler.arg = e;
    }
    return ucp_ep_create(worker, &ep, &e->ep);
}

/* At DFCCL_LOG_LEVEL=debug: the UCX transports (lanes) and protocol ranges UCX chose for
 * the endpoint, from ucp_ep_print_info. */
static void ep_describe(ucp_ep_h ep, int peer, uint32_t worker)
{
    if (eng_log_level < DFCCL_LOG_DEBUG)
        return;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return;
    ucp_ep_print_info(ep, f);
    fclose(f);
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        line += strspn(line, "# ");
        if (!strncmp(line, "lane[", 5) || !strncmp(line, "am_send", 7))
            dfccl_debug("peer rank %d, worker %u: %s", peer, worker, line);
    }
    free(text);
}

/* A reference to P's endpoint to the worker at `addr` of the process `pid` on `host`
 * (pid 0: another host), made if the cache has none. An unretired endpoint to another
 * worker of that process is retired: the process made a new worker, so the old one is
 * gone. Called with P's lock held; NULL and *st_p on failure. */
net_ep_t *net_ep_get(net_proxy_t *P, const void *addr, size_t addr_len, const char *host, int32_t pid,
                     int peer_mode, int peer, ucs_status_t *st_p)
{
    for (net_ep_t *e = P->eps; e; e = e->next) {
        if (e->retired)
            continue;
        if (e->addr_len == addr_len && !memcmp(e->addr, addr, addr_len) && e->peer_mode == peer_mode) {
            e->refs++;
            return e;
        }
        if (pid && e->pid == pid && !strncmp(e->host, host, sizeof(e->host)))
            e->retired = 1; /* closed by net_ep_reap once unused */
    }
    net_ep_t *e = calloc(1, sizeof(*e) + addr_len);
    if (!e) {
        *st_p = UCS_ERR_NO_MEMORY;
        return NULL;
    }
    *e = (net_ep_t){.px = P->idx, .peer_mode = peer_mode, .pid = pid, .refs = 1, .addr_len = addr_len};
    snprintf(e->host, sizeof(e->host), "%s", host);
    memcpy(e->addr, addr, addr_len);
    if ((*st_p = ep_create(P->worker, addr, peer_mode, e)) != UCS_OK) {
        free(e);
        return NULL;
    }
    ep_describe(e->ep, peer, P->idx);
    e->next = P->eps;
    P->eps = e;
    return e;
}

/* A communicator lets go of endpoint e; a retired one is closed when unused. Called with
 * e's proxy lock held, outside UCX's progress. */
void net_ep_put(net_ep_t *e)
{
    if (--e->refs == 0 && e->retired)
        net_ep_reap(&net_ucx.px[e->px], 0);
}
