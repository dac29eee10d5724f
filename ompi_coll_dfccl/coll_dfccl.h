/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dfccl coll component for Open MPI 4.1 (coll API 2.0.0, int counts): component and
 * module structures and every prototype of the component.
 *
 * For each collective it takes over, a call runs on one of three paths, decided the
 * same way on every rank (coll_dfccl_check verifies it):
 *   engine    the dfccl engine: device buffers to the GPU daemon (staged through host
 *             memory where the communicator has no GPU part), host buffers only with
 *             coll_dfccl_host_buffers=1
 *   staged    device buffers the engine can't take (user op, derived datatype,
 *             MAXLOC, ...): copied to host, previous module, copied back
 *   previous  host buffers: the previous module, untouched
 */
#ifndef MCA_COLL_DFCCL_H
#define MCA_COLL_DFCCL_H

#include "ompi_config.h"

#include <stdbool.h>
#include <stddef.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/request/request.h"
#include "opal/class/opal_free_list.h"
#include "opal/threads/mutex.h"

#include "dfccl.h"
#include "dfccl_setting.h"

#include "coll_dfccl_debug.h"

BEGIN_C_DECLS

/* ---------------------------------------------------------------- component */

/** @brief One engine setting with an MCA parameter (coll_dfccl_<row->mca>): a row of
 *         the engine's settings table (dfccl_setting.h), passed as its dfcclConfig_t
 *         field when set explicitly. */
typedef struct {
    const dfccl_setting_t *row;
    unsigned long long value; /**< parsed from str; its default is the row's (ULLONG_MAX: "auto") */
    int var_index;            /**< to tell an explicit setting from the default */
    char *str;                /**< MCA storage: the value as given, parsed strictly */
} mca_coll_dfccl_knob_t;

/** @brief Room for the settings table's rows with an MCA parameter (registration
 *         checks that they fit). */
#define MCA_COLL_DFCCL_MAX_KNOBS 40

struct mca_coll_dfccl_module_t;
struct mca_coll_dfccl_req_t;
struct mca_coll_dfccl_sched_t;

/**
 * @brief What the progress callback (coll_dfccl_progress.c) calls in the files above
 *        it, registered once at init_query (coll_dfccl_module.c), so that every call
 *        between the component's files goes one way, down.
 */
typedef struct {
    /** advance the set-up of a module on the waiting list; true once it is over (boot.c) */
    bool (*setup_advance)(struct mca_coll_dfccl_module_t *m);
    /** stop a set-up in flight at finalize (boot.c) */
    void (*setup_abort)(struct mca_coll_dfccl_module_t *m);
    /** advance the queue of a module on the waiting list (call.c) */
    void (*queue_advance)(struct mca_coll_dfccl_module_t *m);
    /** a non-blocking fallback's flags: finished? And its fold, then its memory (nbsched.c) */
    bool (*sched_test)(struct mca_coll_dfccl_sched_t *s);
    int (*sched_finish)(struct mca_coll_dfccl_sched_t *s, int rc);
} mca_coll_dfccl_hooks_t;

typedef struct mca_coll_dfccl_component_t {
    mca_coll_base_component_2_0_0_t super;

    /* MCA parameters */
    int priority;
    int verbose;
    bool enable;
    bool host_buffers;
    bool device_staged; /**< device buffers staged for the previous module (a baseline) */
    bool check;
    int fake_device;  /**< testing: every buffer counts as device memory (2: handed to the engine as
                           the GPU daemon takes it, with host copies for device ones) */
    bool eager;       /**< engine communicator at communicator creation, not first use */
    bool device_sync; /**< synchronize the legacy stream before each device-buffer call */
    mca_coll_dfccl_knob_t knobs[MCA_COLL_DFCCL_MAX_KNOBS];
    int nknobs;
    char *param_str[9];           /**< MCA storage of priority, verbose and the switches (as given) */
    bool bad_params;              /**< a coll_dfccl_* value was refused: the component is off */
    long long xchg_timeout_ms;    /**< coll_dfccl_timeout / DFCCL_TIMEOUT: a private exchange too */
    long long xchg_stall_ms;      /**< coll_dfccl_stall_report / DFCCL_STALL_REPORT: said once */
    mca_coll_dfccl_hooks_t hooks; /**< registered at init_query */
    void (*shutdown)(void);       /**< component close: what the runtime must undo */

    /* state, set up at the first engine communicator (engine_ready) */
    opal_mutex_t lock;                       /**< guards everything below */
    bool engine_ready;                       /**< config, keyval, request list, progress */
    dfcclConfig_t config;                    /**< every engine communicator's (set once) */
    int keyval;                              /**< communicator attribute; its delete destroys */
    opal_free_list_t requests;               /**< mca_coll_dfccl_req_t */
    struct mca_coll_dfccl_req_t *active;     /**< non-blocking calls being progressed */
    struct mca_coll_dfccl_module_t *live;    /**< modules holding an engine communicator */
    struct mca_coll_dfccl_module_t *waiting; /**< modules with a set-up or a queue to advance */
    int32_t advancing;                       /**< a thread is advancing them (atomic) */
} mca_coll_dfccl_component_t;

OMPI_MODULE_DECLSPEC extern mca_coll_dfccl_component_t mca_coll_dfccl_component;

/* ---------------------------------------------------------------- private exchanges */

/* Point-to-point tags of the component's own traffic on a user's communicator, in the
 * gap Open MPI leaves between MPI_ANY_TAG (-1) and its blocking collectives' tags
 * (-10 ... -26): no other collective or user message can match them. */
#define MCA_COLL_DFCCL_TAG_BOOT  -7 /**< the engine communicator's set-up */
#define MCA_COLL_DFCCL_TAG_CHECK -8 /**< coll_dfccl_check records */
#define MCA_COLL_DFCCL_TAG_SCHED -9 /**< non-blocking fallbacks (coll_dfccl_nbsched.c) */

/**
 * @brief A non-blocking all-gather of a few bytes per rank over point-to-point
 *        messages on a private tag (Bruck's dissemination: log2(n) rounds of one send
 *        and one receive). Posted and advanced from any MPI call, matched by tag alone,
 *        so it never waits for a collective that another rank issues in another order.
 */
typedef struct mca_coll_dfccl_watch_t mca_coll_dfccl_watch_t;

typedef struct {
    struct ompi_communicator_t *comm;
    int tag, rank, size;
    size_t bytes;
    char *buf;              /**< size x bytes: block i holds rank (rank + i) % size's */
    int dist;               /**< this round's distance; >= size when finished */
    ompi_request_t *req[2]; /**< receive, send */
    int rc;                 /**< OMPI_SUCCESS or the first failure */
    /* a stalled exchange (set by the caller after xchg_start; NULL: not watched) */
    mca_coll_dfccl_watch_t **watch; /**< the module's watch of its peers (coll_dfccl_watch.c) */
    const char *what;               /**< for messages: "engine set-up", "coll_dfccl_check" */
    long long t_round, t_look;      /**< ns: the last round's start, the last look at the peers */
    bool stall_said;                /**< the stall report was said */
    int lost_rank, lost_pid;        /**< a peer found dead (rank in comm) and its pid, else -1 */
    bool timed_out;                 /**< ended by coll_dfccl_timeout, waiting for rank awaited */
    int awaited;
} mca_coll_dfccl_xchg_t;

/** @brief Post the first round. OMPI_SUCCESS, or an error with nothing left posted. */
int mca_coll_dfccl_xchg_start(mca_coll_dfccl_xchg_t *x, struct ompi_communicator_t *comm, int tag,
                              const void *mine, size_t bytes);
/** @brief Advance without blocking: true once finished (x->rc says how). */
bool mca_coll_dfccl_xchg_test(mca_coll_dfccl_xchg_t *x);
/** @brief The gathered blocks, in rank order, into @p all (size x bytes). */
void mca_coll_dfccl_xchg_result(const mca_coll_dfccl_xchg_t *x, void *all);
/** @brief Release a finished exchange. */
void mca_coll_dfccl_xchg_fini(mca_coll_dfccl_xchg_t *x);
/** @brief What ended a failed exchange, for an error message: "rank R of it (pid P) is
 *         gone", "... waited N ms" ...; "" when nothing but an MPI error. */
void mca_coll_dfccl_xchg_why(const mca_coll_dfccl_xchg_t *x, char *buf, size_t len);

/* ---------------------------------------------------------------- watch.c */

/** @brief MPI_Init (component open): publish this process's pid, start time and pid
 *         namespace in the modex, for the same-host peers' watch. */
void mca_coll_dfccl_watch_publish(void);
/** @brief Look at the processes of the same-host peers of @p comm (the watch is made
 *         at the first look, into *@p wp): the rank of one that is gone (its pid in
 *         *@p pid), or -1. */
int mca_coll_dfccl_watch_lost(mca_coll_dfccl_watch_t **wp, struct ompi_communicator_t *comm, int *pid);
/** @brief How many peers the watch can't see (other hosts, pid namespaces, no identity). */
int mca_coll_dfccl_watch_unseen(const mca_coll_dfccl_watch_t *w);
void mca_coll_dfccl_watch_free(mca_coll_dfccl_watch_t *w);

/* ---------------------------------------------------------------- module */

typedef enum {
    MCA_COLL_DFCCL_ENGINE_NONE = 0, /**< not created yet: at the first engine call */
    MCA_COLL_DFCCL_ENGINE_SETUP,    /**< being created: engine calls wait in the module's queue */
    MCA_COLL_DFCCL_ENGINE_LIVE,
    MCA_COLL_DFCCL_ENGINE_FAILED,   /**< creation failed: every call falls back */
    MCA_COLL_DFCCL_ENGINE_LOST,     /**< a peer died (or coll_dfccl_timeout passed) during the
                                         set-up: every engine call fails, as it would on a live
                                         communicator (a fallback would wait for the dead rank) */
    MCA_COLL_DFCCL_ENGINE_DESTROYED /**< communicator freed */
} mca_coll_dfccl_engine_state_t;

/* Every collective the component takes, blocking and MPI_I*: X(name) for each. The
 * module's previous-module fields, their release and saving, and the module's function
 * table all come from this one list. */
#define MCA_COLL_DFCCL_COLLS(X)                                                                              \
    X(allreduce)                                                                                             \
    X(iallreduce)                                                                                            \
    X(reduce)                                                                                                \
    X(ireduce)                                                                                               \
    X(bcast)                                                                                                 \
    X(ibcast)                                                                                                \
    X(allgather)                                                                                             \
    X(iallgather)                                                                                            \
    X(reduce_scatter_block)                                                                                  \
    X(ireduce_scatter_block)                                                                                 \
    X(reduce_scatter)                                                                                        \
    X(ireduce_scatter)                                                                                       \
    X(alltoall) X(ialltoall) X(gather) X(igather) X(gatherv) X(igatherv) X(scatter) X(iscatter) X(scatterv)  \
        X(iscatterv) X(allgatherv) X(iallgatherv) X(alltoallv) X(ialltoallv) X(alltoallw) X(ialltoallw)      \
            X(scan) X(iscan) X(exscan) X(iexscan)

#define MCA_COLL_DFCCL_PREV(_api)                                                                            \
    mca_coll_base_module_##_api##_fn_t previous_##_api;                                                      \
    mca_coll_base_module_t *previous_##_api##_module;

struct mca_coll_dfccl_boot_t;
struct mca_coll_dfccl_op_t;

typedef struct mca_coll_dfccl_module_t {
    mca_coll_base_module_t super;
    struct ompi_communicator_t *comm;
    int rank;
    int size;   /**< blocks of a v-call: the group's size, the remote group's on an intercommunicator */
    int lsize;  /**< the local group's size (reduce_scatter's blocks) */
    bool inter; /**< an intercommunicator: device buffers staged for the other components */

    dfcclComm_t ecomm;
    mca_coll_dfccl_engine_state_t engine;
    struct mca_coll_dfccl_boot_t *boot; /**< the set-up in flight (ENGINE_SETUP) */
    mca_coll_dfccl_watch_t *watch;      /**< its peers' processes, while an exchange stalls */
    char lost[256];                     /**< ENGINE_LOST: why */
    int outstanding;                    /**< non-blocking calls not completed yet */
    bool destroy_pending;               /**< communicator freed while calls were outstanding */
    bool attr_set;                      /**< the delete attribute is on the communicator */
    struct mca_coll_dfccl_module_t *live_next;
    /* calls that wait before they can start (the set-up, coll_dfccl_check), in call
     * order; under the component's lock */
    struct mca_coll_dfccl_req_t *queue_head, *queue_tail;
    /* taken at the first engine call: queued in place of a non-blocking call that must
     * wait and gets no request (no memory), to refuse it to the peers at its turn */
    struct mca_coll_dfccl_req_t *spare;
    bool spare_queued; /**< under the component's lock */
    bool waiting;      /**< on the component's list of modules to advance */
    struct mca_coll_dfccl_module_t *wait_next;
    int last_kind; /**< memory kind of the latest call with data (a v-call that moves
                        nothing on this rank, with NULL buffers, follows it) */

    MCA_COLL_DFCCL_COLLS(MCA_COLL_DFCCL_PREV)
} mca_coll_dfccl_module_t;

OBJ_CLASS_DECLARATION(mca_coll_dfccl_module_t);

/* ---------------------------------------------------------------- one call */

typedef enum {
    MCA_COLL_DFCCL_PATH_PREVIOUS = 0, /**< previous module, buffers untouched */
    MCA_COLL_DFCCL_PATH_ENGINE = 1,   /**< the engine (device buffers direct to the GPU daemon) */
    MCA_COLL_DFCCL_PATH_STAGED = 2,   /**< host copies of device buffers, previous module */
} mca_coll_dfccl_path_t;

/** @brief The arguments of one collective call, kept while the call waits. */
typedef struct {
    const void *sbuf;
    void *rbuf;
    int scount, rcount;                      /**< calls with one count: scount */
    const int *scounts, *sdispls;            /**< v-variants (MPI keeps the arrays valid until a */
    const int *rcounts, *rdispls;            /**< non-blocking call completes); rcounts: reduce_scatter too */
    struct ompi_datatype_t *sdtype, *rdtype; /**< calls with one datatype: sdtype */
    struct ompi_datatype_t *const *sdtypes, *const *rdtypes; /**< alltoallw */
    struct ompi_op_t *op;
    int root;
} mca_coll_dfccl_args_t;

/** @brief What a collective decided about a call before starting it. */
typedef struct {
    mca_coll_dfccl_path_t path;
    dfcclComm_t ecomm;
    dfcclDataType_t etype; /**< reductions */
    dfcclRedOp_t eop;
    ptrdiff_t soff, roff; /**< where contiguous bytes start */
    size_t bytes;         /**< bcast: all; allgather, alltoall: per rank */
    size_t total, disp;   /**< reduce_scatter: elements over all ranks, before this rank's */
    bool equal;           /**< reduce_scatter: every recvcount the same */
    int skind, rkind;     /**< mca_coll_dfccl_mem_t of the send and receive buffers,
                               decided once per call (mca_coll_dfccl_kinds) */
} mca_coll_dfccl_plan_t;

/** @brief What coll_dfccl_check compares across ranks before a call. */
typedef struct {
    int32_t coll;        /**< mca_coll_dfccl_coll_t */
    int32_t path;        /**< mca_coll_dfccl_path_t */
    int32_t kind;        /**< mca_coll_dfccl_mem_t */
    int32_t root;        /**< rooted collectives, else 0 */
    int32_t op;          /**< index of a predefined op, 0 for none, -1 user-defined */
    int32_t nonblocking; /**< MPI_I* call */
    int64_t bytes;       /**< payload size each rank must agree on */
    uint64_t types;      /**< basic types the datatype is made of (a bit each) */
    int32_t loose;       /**< staged-only collectives: kind and path may differ between
                              ranks (both paths meet at the previous module) */
    int32_t pad;
    uint64_t counts_hash; /**< reduce_scatter: the recvcounts array */
} mca_coll_dfccl_check_t;

/** @brief One collective's glue, as the shared driver (coll_dfccl_call.c) uses it. */
typedef struct {
    int coll; /**< mca_coll_dfccl_coll_t */
    /** fill the check record and the plan; true when the engine can run the call */
    bool (*prepare)(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, mca_coll_dfccl_check_t *rec,
                    mca_coll_dfccl_plan_t *p);
    /** engine or staged path: stage, then submit or call the previous module (its
     *  non-blocking variant when @p inner_p is not NULL) */
    int (*start)(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, const mca_coll_dfccl_plan_t *p,
                 struct mca_coll_dfccl_op_t *o, ompi_request_t **inner_p);
    /** previous path: the previous module as is (non-blocking when @p request is not NULL) */
    int (*previous)(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, ompi_request_t **request);
} mca_coll_dfccl_coll_desc_t;

/** @brief A user buffer region staged through a host copy. */
typedef struct {
    void *user;     /**< start of the staged region in user (device) memory */
    char *host;     /**< its host copy */
    size_t out_off; /**< part copied back at the end: offset ... */
    size_t out_len; /**< ... and length (0: nothing) */
} mca_coll_dfccl_stage_t;

/** @brief Everything one collective call holds until it completes. */
typedef struct mca_coll_dfccl_pack_t mca_coll_dfccl_pack_t;

typedef struct mca_coll_dfccl_op_t {
    mca_coll_dfccl_stage_t stage[3]; /**< staged user buffers */
    int nstage;
    void *tmp;      /**< a host temporary of the call itself */
    void *dev_tmp;  /**< a device temporary of the call itself (mca_coll_dfccl_device_alloc) */
    void *move_dst; /**< copy done at completion, before staging out (regions may overlap) */
    const void *move_src;
    size_t move_len;
    bool move_device;                    /**< ... between device addresses (the GPU daemon's buffers) */
    dfcclRequest_t ereq;                 /**< engine request (engine path) */
    ompi_request_t *inner;               /**< previous module's request (non-blocking staged path) */
    int rc;                              /**< result of a blocking previous call (staged path) */
    bool device_direct;                  /**< device buffers go to the engine as they are */
    bool on_gpu;                         /**< ... on a communicator with a GPU part */
    bool device_synced;                  /**< the legacy stream was synchronized for this op */
    bool reached;                        /**< its engine call was made (engine path) */
    struct mca_coll_dfccl_pack_t *packs; /**< packed sides (coll_dfccl_pack.c) */
} mca_coll_dfccl_op_t;

/**
 * @brief Open MPI 4.1's ompi_coll_base_nbc_request_t, declared again: its header
 *        (coll_base_util.h) includes op.h, which does not build out of tree. Every
 *        non-blocking collective request must start with it: the MPI_I* bindings
 *        keep a user op or derived datatype alive by storing it in these fields
 *        and hooking the completion callback (ompi_coll_base_retain_op/_datatypes).
 */
typedef struct {
    ompi_request_t super;
    union {
        ompi_request_complete_fn_t req_complete_cb;
        ompi_request_free_fn_t req_free;
    } cb;
    void *req_complete_cb_data;
    union {
        opal_object_t *objs[2];
    } data;
} mca_coll_dfccl_nbc_request_t;

/* the class behind it, exported by libmpi */
OMPI_DECLSPEC extern opal_class_t ompi_coll_base_nbc_request_t_class;

/** @brief Stage of a request's life (req->stage). */
typedef enum {
    MCA_COLL_DFCCL_REQ_STARTED = 0, /**< running: engine request or previous module's */
    MCA_COLL_DFCCL_REQ_QUEUED,      /**< waits in its module's queue for the set-up or the check */
    MCA_COLL_DFCCL_REQ_CHECKING,    /**< previous path: running, its check record in flight */
} mca_coll_dfccl_req_stage_t;

/** @brief Request of a call that is non-blocking or has to wait before it starts. */
typedef struct mca_coll_dfccl_req_t {
    mca_coll_dfccl_nbc_request_t super;
    struct mca_coll_dfccl_req_t *next;       /**< in the component's active list */
    struct mca_coll_dfccl_req_t *queue_next; /**< in its module's queue */
    mca_coll_dfccl_module_t *module;
    mca_coll_dfccl_op_t op;
    mca_coll_dfccl_req_stage_t stage;
    bool blocking; /**< a blocking call waits on it (staged path blocking when it starts) */
    bool checked;  /**< coll_dfccl_check is done for it */
    bool stand_in; /**< the module's spare, queued for a call that got no request (call.c) */
    const mca_coll_dfccl_coll_desc_t *desc;
    mca_coll_dfccl_args_t args;
    mca_coll_dfccl_plan_t plan;
    mca_coll_dfccl_check_t rec;
    mca_coll_dfccl_xchg_t *check;         /**< its check exchange in flight */
    struct mca_coll_dfccl_sched_t *sched; /**< a non-blocking fallback's messages (nbsched.c) */
} mca_coll_dfccl_req_t;

OBJ_CLASS_DECLARATION(mca_coll_dfccl_req_t);

/* -------------------------------- module.c, progress.c, engine.c, boot.c, request.c */

int mca_coll_dfccl_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_dfccl_comm_query(struct ompi_communicator_t *comm, int *priority);
/** @brief Once per process, before the first engine communicator or request. */
int mca_coll_dfccl_setup(void);
/** @brief The upper files' hooks; also sets the component's shutdown (progress.c). */
void mca_coll_dfccl_hooks_register(const mca_coll_dfccl_hooks_t *hooks);
/** @brief The teardown attribute's callbacks (engine.c). */
int mca_coll_dfccl_attr_delete(MPI_Comm comm, int keyval, void *attr_val, void *extra_state);
int mca_coll_dfccl_attr_copy(MPI_Comm oldcomm, int keyval, void *extra_state, void *attr_in, void *attr_out,
                             int *flag, MPI_Comm newcomm);
/** @brief The engine's configuration from the MCA parameters set explicitly (the others
 *         unset: the engine takes their DFCCL_* variables). */
void mca_coll_dfccl_engine_config(dfcclConfig_t *cfg);
/** @brief Destroy the engine communicator of @p m, if it has a live one. */
void mca_coll_dfccl_engine_destroy(mca_coll_dfccl_module_t *m);

/** @brief Start creating the engine communicator of @p m (non-blocking: the set-up runs
 *         on a thread of its own and exchanges over MCA_COLL_DFCCL_TAG_BOOT). */
void mca_coll_dfccl_engine_begin(mca_coll_dfccl_module_t *m);
/** @brief Advance the set-up of @p m; true once it is no longer in flight. */
bool mca_coll_dfccl_engine_advance(mca_coll_dfccl_module_t *m);
/** @brief Put @p m on the component's list of modules the progress callback advances
 *         (its set-up or queue); the caller holds the component's lock. */
void mca_coll_dfccl_module_wait_locked(mca_coll_dfccl_module_t *m);
/** @brief Stop a set-up in flight (finalize): it fails at its next exchange. */
void mca_coll_dfccl_engine_abort(mca_coll_dfccl_module_t *m);

/** @brief Request for a call; NULL when out of memory. */
mca_coll_dfccl_req_t *mca_coll_dfccl_req_get(mca_coll_dfccl_module_t *m);
/** @brief Return a request that was never started. */
void mca_coll_dfccl_req_put(mca_coll_dfccl_req_t *req);
/** @brief Hand a request to the progress callback (started, queued or checking). */
void mca_coll_dfccl_req_start(mca_coll_dfccl_req_t *req);

/** @brief Wait for a blocking call (driving opal_progress), then finish it. */
int mca_coll_dfccl_op_wait(mca_coll_dfccl_op_t *op);

/** @brief The result of the engine call @p what of op @p o: OMPI_SUCCESS, or the MPI
 *         error code of its failure (the engine's message logged). Marks @p o as having
 *         reached the engine (a failure before that is refused to the peers, call.c). */
int mca_coll_dfccl_engine_result(mca_coll_dfccl_op_t *o, const char *what, dfcclResult_t res);
/** @brief MPI error code for an engine result. */
int mca_coll_dfccl_result_to_mpi(dfcclResult_t res);

/* ---------------------------------------------------------------- call.c */

/** @brief Run one call of a collective: blocking when @p request is NULL. */
int mca_coll_dfccl_call(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_coll_desc_t *desc,
                        const mca_coll_dfccl_args_t *a, ompi_request_t **request);
/** @brief Advance the queue of @p m (progress callback, under no lock of ours): start what
 *         may start, fail what its check refused. */
void mca_coll_dfccl_queue_advance(mca_coll_dfccl_module_t *m);
/** @brief "Allreduce", "Iallreduce", ...: the MPI name of a call after MPI_. */
void mca_coll_dfccl_call_name(char *buf, size_t len, int32_t coll, bool nonblocking);

/* ---------------------------------------------------------------- check.c */

/** @brief Compare the check records of every rank; OMPI_SUCCESS or MPI_ERR_ARG (logged once). */
int mca_coll_dfccl_check_compare(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_check_t *all);

/* ---------------------------------------------------------------- collectives */

/* The entry points of one collective: blocking, MPI_I* and the persistent *_init
 * (Open MPI 4.1's pcollreq), all made from its descriptor (MCA_COLL_DFCCL_ENTRIES). */
#define MCA_COLL_DFCCL_DECLARE(_name, ...)                                                                   \
    int mca_coll_dfccl_##_name(__VA_ARGS__, struct ompi_communicator_t *comm,                                \
                               mca_coll_base_module_t *module);                                              \
    int mca_coll_dfccl_i##_name(__VA_ARGS__, struct ompi_communicator_t *comm, ompi_request_t **request,     \
                                mca_coll_base_module_t *module);                                             \
    int mca_coll_dfccl_##_name##_init(__VA_ARGS__, struct ompi_communicator_t *comm,                         \
                                      struct ompi_info_t *info, ompi_request_t **request,                    \
                                      mca_coll_base_module_t *module)
MCA_COLL_DFCCL_DECLARE(allreduce, const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                       struct ompi_op_t *op);
MCA_COLL_DFCCL_DECLARE(reduce, const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                       struct ompi_op_t *op, int root);
MCA_COLL_DFCCL_DECLARE(bcast, void *buf, int count, struct ompi_datatype_t *dtype, int root);
MCA_COLL_DFCCL_DECLARE(allgather, const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                       int rcount, struct ompi_datatype_t *rdtype);
MCA_COLL_DFCCL_DECLARE(reduce_scatter_block, const void *sbuf, void *rbuf, int rcount,
                       struct ompi_datatype_t *dtype, struct ompi_op_t *op);
MCA_COLL_DFCCL_DECLARE(reduce_scatter, const void *sbuf, void *rbuf, const int *rcounts,
                       struct ompi_datatype_t *dtype, struct ompi_op_t *op);
MCA_COLL_DFCCL_DECLARE(alltoall, const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                       int rcount, struct ompi_datatype_t *rdtype);
/* staged collectives (coll_dfccl_gather.c, _scatter.c, _allgatherv.c, _alltoallv.c, _scan.c) */
MCA_COLL_DFCCL_DECLARE(gather, const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                       int rcount, struct ompi_datatype_t *rdtype, int root);
MCA_COLL_DFCCL_DECLARE(gatherv, const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                       const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype, int root);
MCA_COLL_DFCCL_DECLARE(scatter, const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                       int rcount, struct ompi_datatype_t *rdtype, int root);
MCA_COLL_DFCCL_DECLARE(scatterv, const void *sbuf, const int *scounts, const int *displs,
                       struct ompi_datatype_t *sdtype, void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                       int root);
MCA_COLL_DFCCL_DECLARE(allgatherv, const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                       const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype);
MCA_COLL_DFCCL_DECLARE(alltoallv, const void *sbuf, const int *scounts, const int *sdispls,
                       struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, const int *rdispls,
                       struct ompi_datatype_t *rdtype);
MCA_COLL_DFCCL_DECLARE(alltoallw, const void *sbuf, const int *scounts, const int *sdispls,
                       struct ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
                       const int *rdispls, struct ompi_datatype_t *const *rdtypes);
MCA_COLL_DFCCL_DECLARE(scan, const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                       struct ompi_op_t *op);
MCA_COLL_DFCCL_DECLARE(exscan, const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                       struct ompi_op_t *op);

/* ---------------------------------------------------------------- dfccl alone */

/*
 * Where the communicator has no previous module for a collective (dfccl the only coll
 * component, --mca coll dfccl), the component's own fallbacks take its place: the
 * previous_<coll> fields point at mca_coll_dfccl_fb_<coll> with the dfccl module itself
 * as the module, so every path above (staging included) runs unchanged.
 *   blocking      Open MPI's base algorithms (coll_dfccl_fallback.c); gatherv, scatterv
 *                 and alltoallw, which libmpi has none of, run their non-blocking
 *                 schedule and wait for it
 *   non-blocking  linear schedules of point-to-point messages on MCA_COLL_DFCCL_TAG_SCHED
 *                 (coll_dfccl_nbsched.c), advanced by the progress callback
 *   persistent    requests whose start runs the component's MPI_I* entry point
 *                 (coll_dfccl_persist.c)
 */
#define MCA_COLL_DFCCL_FB_DECLARE(_api)                                                                      \
    extern const mca_coll_base_module_##_api##_fn_t mca_coll_dfccl_fb_##_api;
MCA_COLL_DFCCL_COLLS(MCA_COLL_DFCCL_FB_DECLARE)
MCA_COLL_DFCCL_FB_DECLARE(barrier)
MCA_COLL_DFCCL_FB_DECLARE(ibarrier)
MCA_COLL_DFCCL_FB_DECLARE(reduce_local)

/** @brief At module enable: fill every slot the communicator has no module for (barrier,
 *         ibarrier, reduce_local, the persistent *_init) with the component's own. Returns
 *         how many were filled. */
int mca_coll_dfccl_fallback_slots(mca_coll_dfccl_module_t *m, struct ompi_communicator_t *comm);
/** @brief A persistent request for @p desc's collective with arguments @p a (NULL
 *         @p desc: a barrier, the communicator's); each MPI_Start runs it as its MPI_I*
 *         call would (coll_dfccl_persist.c). */
int mca_coll_dfccl_persist_new(mca_coll_base_module_t *module, const mca_coll_dfccl_coll_desc_t *desc,
                               const mca_coll_dfccl_args_t *a, ompi_request_t **request);
int mca_coll_dfccl_barrier_init(struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                ompi_request_t **request, mca_coll_base_module_t *module);
/** @brief Open MPI's base algorithms keep their state in the module's base_data. */
int mca_coll_dfccl_fallback_base_data(mca_coll_dfccl_module_t *m);

/** @brief Non-blocking fallback: all messages done (under the component's lock: reads flags only). */
bool mca_coll_dfccl_sched_test(struct mca_coll_dfccl_sched_t *s);
/** @brief Finish a completed schedule (the fold of a reduction), free it; an MPI error code. */
int mca_coll_dfccl_sched_finish(struct mca_coll_dfccl_sched_t *s, int rc);

END_C_DECLS

#endif /* MCA_COLL_DFCCL_H */
