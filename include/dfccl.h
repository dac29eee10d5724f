/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file dfccl.h
 * @brief dfccl: a deadlock-free collective communication library.
 *
 * Every collective runs inside a persistent daemon (a host thread in the CPU
 * backend, a GPU kernel in the GPU backend) that preempts a collective stalled on
 * its peers and resumes it later exactly where it stopped. Ranks may therefore
 * issue collectives on different communicators in different orders without
 * deadlocking.
 *
 * Rules every caller must follow (as in MPI):
 *  - on one communicator, every rank issues the same collectives in the same
 *    order with matching counts, datatypes, ops and roots;
 *  - across communicators any order is allowed;
 *  - buffers are host memory (CPU daemon) or device memory (GPU daemon, which runs on
 *    its own stream), the same kind on every rank: the kind picks the daemon. A rank
 *    that moves nothing in a v-collective should still pass a buffer of that kind; with
 *    NULL buffers it runs on the daemon of its previous collective on the communicator.
 *    Device data must be complete when the collective is submitted.
 *    Synchronize the stream that produced it first (note that a cudaMemcpy from
 *    pageable host memory may return before its copy has landed); results are
 *    complete when dfcclTest/dfcclWait report completion.
 */
#ifndef DFCCL_H
#define DFCCL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DFCCL_MAJOR        0
#define DFCCL_MINOR        1
#define DFCCL_PATCH        0
#define DFCCL_VERSION_CODE (DFCCL_MAJOR * 10000 + DFCCL_MINOR * 100 + DFCCL_PATCH)

/** @brief Result of every dfccl call: 0 success, 1 in progress, negative errors. */
typedef enum {
    dfcclSuccess = 0,
    dfcclInProgress = 1,       /**< not an error: the operation is still running */
    dfcclInvalidArgument = -1, /**< an argument is wrong; the message names it */
    dfcclInvalidUsage = -2,    /**< a call made in the wrong state */
    dfcclSystemError = -3,     /**< a system call failed (errno in the log) */
    dfcclNoMemory = -4,        /**< memory or shared memory could not be allocated */
    dfcclTimeout = -5,         /**< a collective exceeded DFCCL_TIMEOUT */
    dfcclCommAborted = -6,     /**< the communicator was destroyed or aborted */
    dfcclUnsupported = -7,     /**< valid but not supported by this build/backend */
    dfcclInternalError = -8,   /**< a bug in dfccl: please report it */
    dfcclBootstrapError = -9,  /**< the bootstrap all-gather callback failed */
    dfcclMismatch = -10,       /**< ranks passed different kinds, counts, datatypes, ops or
                                    roots to one collective, or a peer's call was refused:
                                    the message names the difference; the communicator is
                                    aborted (docs/usage.md, "Mismatched collectives") */
} dfcclResult_t;

/** @brief Element types. */
typedef enum {
    dfcclInt8 = 0,
    dfcclUint8 = 1,
    dfcclInt32 = 2,
    dfcclUint32 = 3,
    dfcclInt64 = 4,
    dfcclUint64 = 5,
    dfcclFloat16 = 6,
    dfcclBfloat16 = 7,
    dfcclFloat32 = 8,
    dfcclFloat64 = 9,
    dfcclNumTypes = 10
} dfcclDataType_t;

/** @brief Reduction operators. Bitwise ones are valid for integer types only. */
typedef enum {
    dfcclSum = 0,
    dfcclProd = 1,
    dfcclMax = 2,
    dfcclMin = 3,
    dfcclBand = 4,
    dfcclBor = 5,
    dfcclBxor = 6,
    dfcclNumOps = 7
} dfcclRedOp_t;

/** @brief Opaque communicator handle. */
typedef struct dfccl_comm *dfcclComm_t;
/** @brief Opaque request handle, one per submitted collective. */
typedef struct dfccl_request *dfcclRequest_t;

/**
 * @brief Bootstrap all-gather: gather @p bytes from every rank into @p recvbuf
 *        (rank i's contribution at offset i * bytes). Collective over the ranks
 *        that create the communicator.
 * @return 0 on success, anything else fails communicator creation.
 */
typedef int (*dfcclAllgatherFn_t)(const void *sendbuf, void *recvbuf, size_t bytes, void *ctx);

/** @brief Per-communicator statistics (dfcclCommGetStats). */
typedef struct {
    uint64_t submitted;       /**< collectives submitted on this rank */
    uint64_t completed;       /**< collectives completed (with success or error) */
    uint64_t preemptions;     /**< times a running collective was preempted at a wait */
    uint64_t stalls;          /**< preemptions of a collective that had moved nothing since it last ran */
    uint64_t stall_ns;        /**< time spent waiting at peers before all the preemptions, ns */
    uint64_t shm_bytes;       /**< host shared memory this rank holds for the communicator */
    uint64_t device_bytes;    /**< GPU memory this rank holds for the communicator */
    uint64_t daemon_launches; /**< GPU daemon kernel launches in this process so far */
} dfcclStats_t;

#include "dfccl_config.h" /* dfcclConfig_t, the configuration and build queries */

/**
 * @brief Human-readable text for a result code.
 * @param [in] result  any dfcclResult_t
 * @return the text, never NULL
 */
const char *dfcclGetErrorString(dfcclResult_t result);

/**
 * @brief Text of the last error on the calling thread (names the bad argument).
 * @return the text, never NULL
 */
const char *dfcclGetLastError(void);

/**
 * @brief The library's version.
 * @param [out] version_p  DFCCL_VERSION_CODE of the library
 * @return dfcclSuccess, dfcclInvalidArgument (NULL @p version_p)
 */
dfcclResult_t dfcclGetVersion(int *version_p);

/**
 * @brief Create a communicator of @p nranks ranks; this process is @p rank.
 * @param [out] comm_p     the new communicator
 * @param [in]  nranks     number of ranks (>= 1)
 * @param [in]  rank       this process's rank, 0 <= rank < nranks
 * @param [in]  allgather  bootstrap all-gather over the nranks processes
 * @param [in]  ctx        passed to @p allgather unchanged
 * @return dfcclSuccess, dfcclInvalidArgument, dfcclBootstrapError, dfcclNoMemory,
 *         dfcclSystemError, dfcclUnsupported (a peer on another host)
 * @note Collective: every rank must call it. The configuration comes from the
 *       DFCCL_* environment variables: dfcclCommInitConfig with every field unset.
 * @note An nranks larger than the processes the all-gather spans, ranks that disagree
 *       on nranks, or two processes passing one rank show in the first all-gather:
 *       every rank fails with dfcclInvalidArgument saying which. So does whatever stops
 *       one rank once its arguments are checked (a bad DFCCL_* value or config field, a
 *       knob that differs, the GPU backend on some ranks only, its daemon, memory): that
 *       rank still takes part in the first all-gather, and every rank fails alike with
 *       that rank's code and a message naming it ("rank R of N cannot create the
 *       communicator: ..."), instead of the others waiting for it. Only a NULL @p comm_p
 *       or @p allgather, or an nranks or rank out of range, fail this rank alone.
 */
dfcclResult_t dfcclCommInit(dfcclComm_t *comm_p, int nranks, int rank, dfcclAllgatherFn_t allgather,
                            void *ctx);

/**
 * @brief dfcclCommInit with the engine's knobs given in @p config instead of (or on
 *        top of) the environment.
 * @param [out] comm_p     the new communicator
 * @param [in]  nranks     number of ranks (>= 1)
 * @param [in]  rank       this process's rank, 0 <= rank < nranks
 * @param [in]  allgather  bootstrap all-gather over the nranks processes
 * @param [in]  ctx        passed to @p allgather unchanged
 * @param [in]  config     made from DFCCL_CONFIG_INITIALIZER; NULL: every field unset.
 *                         Read during the call only.
 * @return as dfcclCommInit, and dfcclInvalidArgument for a bad field value or a
 *         @p config not made from DFCCL_CONFIG_INITIALIZER (the message names the
 *         field), dfcclInvalidUsage when a set field differs from the value the
 *         process's first communicator fixed (the message names the field and both values)
 * @note Collective: every rank must call it. The configuration is process-wide: the
 *       first communicator created fixes every knob (a set field, else
 *       its DFCCL_* variable, else the default); later calls may set fields only to
 *       the same values. The knobs that shape a communicator must also be equal on all
 *       its ranks (README.md, "Configuration").
 */
dfcclResult_t dfcclCommInitConfig(dfcclComm_t *comm_p, int nranks, int rank, dfcclAllgatherFn_t allgather,
                                  void *ctx, const dfcclConfig_t *config);

/**
 * @brief Destroy a communicator. Local: collectives still pending on it complete
 *        with dfcclCommAborted; their requests must still be waited or tested.
 *        Shared memory and the daemon (with the last communicator) are released.
 * @param [in] comm  a communicator from dfcclCommInit(Config)
 * @return dfcclSuccess, dfcclInvalidArgument (NULL or destroyed @p comm)
 */
dfcclResult_t dfcclCommDestroy(dfcclComm_t comm);

/**
 * @brief This process's rank in @p comm.
 * @param [in]  comm    the communicator
 * @param [out] rank_p  its rank
 * @return dfcclSuccess, dfcclInvalidArgument (bad @p comm, NULL @p rank_p)
 */
dfcclResult_t dfcclCommRank(dfcclComm_t comm, int *rank_p);
/**
 * @brief Number of ranks in @p comm.
 * @param [in]  comm    the communicator
 * @param [out] size_p  its size
 * @return dfcclSuccess, dfcclInvalidArgument (bad @p comm, NULL @p size_p)
 */
dfcclResult_t dfcclCommSize(dfcclComm_t comm, int *size_p);
/**
 * @brief Whether device buffers run on the GPU daemon for @p comm (every rank has a
 *        usable GPU and the GPU backend is built and enabled).
 * @param [in]  comm         the communicator
 * @param [out] supported_p  1 when they do, else 0
 * @return dfcclSuccess, dfcclInvalidArgument (bad @p comm, NULL @p supported_p)
 */
dfcclResult_t dfcclCommDeviceBuffers(dfcclComm_t comm, int *supported_p);

/**
 * @brief Say that this rank will not make its part of the collective that its next call
 *        on @p comm would be, because it failed before that call (out of memory for a
 *        temporary of its own, say), so that its peers do not wait for it: a peer stalled
 *        in its part of that collective fails with dfcclMismatch and "rank R refused its
 *        call (@p why)"; the communicator is then aborted on every rank (a peer that calls
 *        only after that gets dfcclCommAborted with the reason; one whose part needed
 *        nothing from this rank completes it and fails at its next call), unless every
 *        rank refused that call. As when the call itself refuses an argument
 *        (docs/usage.md, "Mismatched collectives").
 * @param [in] comm     the communicator
 * @param [in] sendbuf  the buffers the call would have passed (NULL where it passes none):
 * @param [in] recvbuf  they pick the daemon whose collective is refused, as they would have
 *                      picked the call's (device memory, or managed memory on a
 *                      communicator with a GPU part: the GPU daemon's; both NULL: the
 *                      daemon of the latest call). Other buffers would let this rank's
 *                      next call be taken for the refused one.
 * @param [in] why      the reason, for the peers' error messages (a long one is truncated)
 * @return dfcclSuccess (also when @p comm was already aborted: nobody waits on it),
 *         dfcclInvalidArgument (bad @p comm, NULL or empty @p why)
 * @note Local: never waits on a peer. It counts as a call on @p comm: make it where the
 *       call would have been, after every earlier call on @p comm and before any later
 *       one (one thread at a time per communicator, as for every call), once per call
 *       not made.
 */
dfcclResult_t dfcclCommRefuse(dfcclComm_t comm, const void *sendbuf, const void *recvbuf, const char *why);

/**
 * @brief Copy @p comm's statistics into @p stats_p.
 * @param [in]  comm     the communicator
 * @param [out] stats_p  its statistics
 * @return dfcclSuccess, dfcclInvalidArgument (bad @p comm, NULL @p stats_p)
 */
dfcclResult_t dfcclCommGetStats(dfcclComm_t comm, dfcclStats_t *stats_p);

/**
 * @brief Non-blocking all-reduce of @p count elements. In place when
 * @p sendbuf == @p recvbuf.
 * @param [in]      sendbuf    data to send (see above for the in-place form)
 * @param [out]     recvbuf    where the result lands
 * @param [in]      count      elements per rank
 * @param [in]      datatype   element type
 * @param [in]      op         reduction operator
 * @param [in]      comm       the communicator
 * @param [out]     request_p  completed through dfcclTest / dfcclWait
 * @return dfcclSuccess (submitted), dfcclInvalidArgument (a bad argument: the message
 *         names it), dfcclUnsupported (type/op/buffer kind this build cannot run),
 *         dfcclCommAborted, dfcclNoMemory
 * @note Collective on @p comm. Buffers must stay valid until completion.
 */
dfcclResult_t dfcclAllReduce(const void *sendbuf, void *recvbuf, size_t count, dfcclDataType_t datatype,
                             dfcclRedOp_t op, dfcclComm_t comm, dfcclRequest_t *request_p);

/**
 * @brief Non-blocking reduce to @p root; @p recvbuf is used on the root only.
 * @param [in]      sendbuf    data to send (see above for the in-place form)
 * @param [out]     recvbuf    where the result lands
 * @param [in]      count      elements per rank
 * @param [in]      datatype   element type
 * @param [in]      op         reduction operator
 * @param [in]      root       the root rank
 * @param [in]      comm       the communicator
 * @param [out]     request_p  completed through dfcclTest / dfcclWait
 * @return dfcclSuccess (submitted), dfcclInvalidArgument (a bad argument: the message
 *         names it), dfcclUnsupported (type/op/buffer kind this build cannot run),
 *         dfcclCommAborted, dfcclNoMemory
 * @note Collective on @p comm. Buffers must stay valid until completion.
 */
dfcclResult_t dfcclReduce(const void *sendbuf, void *recvbuf, size_t count, dfcclDataType_t datatype,
                          dfcclRedOp_t op, int root, dfcclComm_t comm, dfcclRequest_t *request_p);

/**
 * @brief Non-blocking broadcast of @p count elements from @p root's @p sendbuf into
 *        every rank's @p recvbuf (in place when they are equal).
 * @param [in]      sendbuf    data to send (see above for the in-place form)
 * @param [out]     recvbuf    where the result lands
 * @param [in]      count      elements per rank
 * @param [in]      datatype   element type
 * @param [in]      root       the root rank
 * @param [in]      comm       the communicator
 * @param [out]     request_p  completed through dfcclTest / dfcclWait
 * @return dfcclSuccess (submitted), dfcclInvalidArgument (a bad argument: the message
 *         names it), dfcclUnsupported (type/op/buffer kind this build cannot run),
 *         dfcclCommAborted, dfcclNoMemory
 * @note Collective on @p comm. Buffers must stay valid until completion.
 */
dfcclResult_t dfcclBroadcast(const void *sendbuf, void *recvbuf, size_t count, dfcclDataType_t datatype,
                             int root, dfcclComm_t comm, dfcclRequest_t *request_p);

/**
 * @brief Non-blocking all-gather: @p sendcount elements per rank; recvbuf holds
 *        nranks * sendcount. In place when sendbuf == recvbuf + rank * sendcount.
 * @param [in]      sendbuf    data to send (see above for the in-place form)
 * @param [out]     recvbuf    where the result lands
 * @param [in]      sendcount  elements this rank sends
 * @param [in]      datatype   element type
 * @param [in]      comm       the communicator
 * @param [out]     request_p  completed through dfcclTest / dfcclWait
 * @return dfcclSuccess (submitted), dfcclInvalidArgument (a bad argument: the message
 *         names it), dfcclUnsupported (type/op/buffer kind this build cannot run),
 *         dfcclCommAborted, dfcclNoMemory
 * @note Collective on @p comm. Buffers must stay valid until completion.
 */
dfcclResult_t dfcclAllGather(const void *sendbuf, void *recvbuf, size_t sendcount, dfcclDataType_t datatype,
                             dfcclComm_t comm, dfcclRequest_t *request_p);

/**
 * @brief Non-blocking reduce-scatter: sendbuf holds nranks * recvcount elements,
 *        rank i gets block i reduced. In place when recvbuf == sendbuf + rank *
 *        recvcount.
 * @param [in]      sendbuf    data to send (see above for the in-place form)
 * @param [out]     recvbuf    where the result lands
 * @param [in]      recvcount  elements this rank receives
 * @param [in]      datatype   element type
 * @param [in]      op         reduction operator
 * @param [in]      comm       the communicator
 * @param [out]     request_p  completed through dfcclTest / dfcclWait
 * @return dfcclSuccess (submitted), dfcclInvalidArgument (a bad argument: the message
 *         names it), dfcclUnsupported (type/op/buffer kind this build cannot run),
 *         dfcclCommAborted, dfcclNoMemory
 * @note Collective on @p comm. Buffers must stay valid until completion.
 */
dfcclResult_t dfcclReduceScatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                 dfcclDataType_t datatype, dfcclRedOp_t op, dfcclComm_t comm,
                                 dfcclRequest_t *request_p);

/**
 * @brief Non-blocking reduce-scatter with a count per rank (MPI_Reduce_scatter): sendbuf
 *        holds the blocks of every rank one after another, recvcounts[i] elements for
 *        rank i; block i of every rank's sendbuf is reduced into rank i's recvbuf
 *        (recvcounts[rank] elements). Every rank passes the same recvcounts (read during
 *        the call). In place: recvbuf is this rank's block of sendbuf (sendbuf plus the
 *        counts before this rank's).
 * @param [in]      sendbuf    data to send (the sum of recvcounts elements)
 * @param [out]     recvbuf    where this rank's block of the result lands
 * @param [in]      recvcounts elements of each rank's block
 * @param [in]      datatype   element type
 * @param [in]      op         reduction operator
 * @param [in]      comm       the communicator
 * @param [out]     request_p  completed through dfcclTest / dfcclWait
 * @return dfcclSuccess (submitted), dfcclInvalidArgument (a bad argument: the message
 *         names it), dfcclUnsupported (type/op/buffer kind this build cannot run),
 *         dfcclCommAborted, dfcclNoMemory
 * @note Collective on @p comm. Buffers must stay valid until completion.
 */
dfcclResult_t dfcclReduceScatterv(const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                                  dfcclDataType_t datatype, dfcclRedOp_t op, dfcclComm_t comm,
                                  dfcclRequest_t *request_p);

/**
 * @brief Non-blocking all-to-all: block i (@p count elements) of sendbuf goes to
 *        rank i. sendbuf and recvbuf must not overlap.
 * @param [in]      sendbuf    data to send (see above for the in-place form)
 * @param [out]     recvbuf    where the result lands
 * @param [in]      count      elements per rank
 * @param [in]      datatype   element type
 * @param [in]      comm       the communicator
 * @param [out]     request_p  completed through dfcclTest / dfcclWait
 * @return dfcclSuccess (submitted), dfcclInvalidArgument (a bad argument: the message
 *         names it), dfcclUnsupported (type/op/buffer kind this build cannot run),
 *         dfcclCommAborted, dfcclNoMemory
 * @note Collective on @p comm. Buffers must stay valid until completion.
 */
dfcclResult_t dfcclAllToAll(const void *sendbuf, void *recvbuf, size_t count, dfcclDataType_t datatype,
                            dfcclComm_t comm, dfcclRequest_t *request_p);

/**
 * @brief Non-blocking gather: every rank's @p sendcount elements land in the root's
 * @p recvbuf at offset rank * sendcount (@p recvbuf is used on the root only). In
 * place at the root when sendbuf == recvbuf + root * sendcount.
 * @param [in]      sendbuf    data to send (see above for the in-place form)
 * @param [out]     recvbuf    where the result lands
 * @param [in]      sendcount  elements this rank sends
 * @param [in]      datatype   element type
 * @param [in]      root       the root rank
 * @param [in]      comm       the communicator
 * @param [out]     request_p  completed through dfcclTest / dfcclWait
 * @return dfcclSuccess (submitted), dfcclInvalidArgument (a bad argument: the message
 *         names it), dfcclUnsupported (type/op/buffer kind this build cannot run),
 *         dfcclCommAborted, dfcclNoMemory
 * @note Collective on @p comm. Buffers must stay valid until completion.
 */
dfcclResult_t dfcclGather(const void *sendbuf, void *recvbuf, size_t sendcount, dfcclDataType_t datatype,
                          int root, dfcclComm_t comm, dfcclRequest_t *request_p);

/**
 * @brief Non-blocking gather with per-rank counts: rank i's @p sendcount elements land
 *        at the root's recvbuf + displs[i] (elements); recvcounts[i] must equal rank i's
 *        sendcount. @p recvcounts and @p displs are read on the root only, during the
 *        call (they may be freed when it returns). In place at the root when
 *        sendbuf == recvbuf + displs[root].
 * @param [in]      sendbuf    data to send (see above for the in-place form)
 * @param [in]      sendcount  elements this rank sends
 * @param [out]     recvbuf    where the result lands
 * @param [in]      recvcounts elements from each rank
 * @param [in]      displs     offset of each rank's block, in elements
 * @param [in]      datatype   element type
 * @param [in]      root       the root rank
 * @param [in]      comm       the communicator
 * @param [out]     request_p  completed through dfcclTest / dfcclWait
 * @return dfcclSuccess (submitted), dfcclInvalidArgument (a bad argument: the message
 *         names it), dfcclUnsupported (type/op/buffer kind this build cannot run),
 *         dfcclCommAborted, dfcclNoMemory
 * @note Collective on @p comm. Buffers must stay valid until completion.
 */
dfcclResult_t dfcclGatherv(const void *sendbuf, size_t sendcount, void *recvbuf, const size_t *recvcounts,
                           const size_t *displs, dfcclDataType_t datatype, int root, dfcclComm_t comm,
                           dfcclRequest_t *request_p);

/**
 * @brief Non-blocking scatter: block i (@p recvcount elements) of the root's @p sendbuf
 *        goes to rank i's @p recvbuf. In place at the root when
 *        recvbuf == sendbuf + root * recvcount.
 * @param [in]      sendbuf    data to send (see above for the in-place form)
 * @param [out]     recvbuf    where the result lands
 * @param [in]      recvcount  elements this rank receives
 * @param [in]      datatype   element type
 * @param [in]      root       the root rank
 * @param [in]      comm       the communicator
 * @param [out]     request_p  completed through dfcclTest / dfcclWait
 * @return dfcclSuccess (submitted), dfcclInvalidArgument (a bad argument: the message
 *         names it), dfcclUnsupported (type/op/buffer kind this build cannot run),
 *         dfcclCommAborted, dfcclNoMemory
 * @note Collective on @p comm. Buffers must stay valid until completion.
 */
dfcclResult_t dfcclScatter(const void *sendbuf, void *recvbuf, size_t recvcount, dfcclDataType_t datatype,
                           int root, dfcclComm_t comm, dfcclRequest_t *request_p);

/**
 * @brief Non-blocking scatter with per-rank counts: sendcounts[i] elements at the root's
 *        sendbuf + displs[i] go to rank i (whose @p recvcount must match). The arrays are
 *        read on the root only, during the call. In place at the root when
 *        recvbuf == sendbuf + displs[root].
 * @param [in]      sendbuf    data to send (see above for the in-place form)
 * @param [in]      sendcounts elements to each rank
 * @param [in]      displs     offset of each rank's block, in elements
 * @param [out]     recvbuf    where the result lands
 * @param [in]      recvcount  elements this rank receives
 * @param [in]      datatype   element type
 * @param [in]      root       the root rank
 * @param [in]      comm       the communicator
 * @param [out]     request_p  completed through dfcclTest / dfcclWait
 * @return dfcclSuccess (submitted), dfcclInvalidArgument (a bad argument: the message
 *         names it), dfcclUnsupported (type/op/buffer kind this build cannot run),
 *         dfcclCommAborted, dfcclNoMemory
 * @note Collective on @p comm. Buffers must stay valid until completion.
 */
dfcclResult_t dfcclScatterv(const void *sendbuf, const size_t *sendcounts, const size_t *displs,
                            void *recvbuf, size_t recvcount, dfcclDataType_t datatype, int root,
                            dfcclComm_t comm, dfcclRequest_t *request_p);

/**
 * @brief Non-blocking all-gather with per-rank counts: rank i's @p sendcount elements
 *        land at every rank's recvbuf + displs[i]; recvcounts[i] must equal rank i's
 *        sendcount. In place when sendbuf == recvbuf + displs[rank].
 * @param [in]      sendbuf    data to send (see above for the in-place form)
 * @param [in]      sendcount  elements this rank sends
 * @param [out]     recvbuf    where the result lands
 * @param [in]      recvcounts elements from each rank
 * @param [in]      displs     offset of each rank's block, in elements
 * @param [in]      datatype   element type
 * @param [in]      comm       the communicator
 * @param [out]     request_p  completed through dfcclTest / dfcclWait
 * @return dfcclSuccess (submitted), dfcclInvalidArgument (a bad argument: the message
 *         names it), dfcclUnsupported (type/op/buffer kind this build cannot run),
 *         dfcclCommAborted, dfcclNoMemory
 * @note Collective on @p comm. Buffers must stay valid until completion.
 */
dfcclResult_t dfcclAllGatherv(const void *sendbuf, size_t sendcount, void *recvbuf, const size_t *recvcounts,
                              const size_t *displs, dfcclDataType_t datatype, dfcclComm_t comm,
                              dfcclRequest_t *request_p);

/**
 * @brief Non-blocking all-to-all with per-peer counts and displacements (elements):
 *        sendcounts[i] elements at sendbuf + sdispls[i] go to rank i, and
 *        recvcounts[i] elements from rank i land at recvbuf + rdispls[i]. The arrays are
 *        read during the call. The send and receive regions must not overlap.
 * @param [in]      sendbuf    data to send (see above for the in-place form)
 * @param [in]      sendcounts elements to each rank
 * @param [in]      sdispls    offset of each block sent, in elements (bytes for dfcclAllToAllw)
 * @param [out]     recvbuf    where the result lands
 * @param [in]      recvcounts elements from each rank
 * @param [in]      rdispls    offset of each block received, in elements (bytes for dfcclAllToAllw)
 * @param [in]      datatype   element type
 * @param [in]      comm       the communicator
 * @param [out]     request_p  completed through dfcclTest / dfcclWait
 * @return dfcclSuccess (submitted), dfcclInvalidArgument (a bad argument: the message
 *         names it), dfcclUnsupported (type/op/buffer kind this build cannot run),
 *         dfcclCommAborted, dfcclNoMemory
 * @note Collective on @p comm. Buffers must stay valid until completion.
 */
dfcclResult_t dfcclAllToAllv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                             void *recvbuf, const size_t *recvcounts, const size_t *rdispls,
                             dfcclDataType_t datatype, dfcclComm_t comm, dfcclRequest_t *request_p);

/**
 * @brief Non-blocking all-to-all with a type per peer (MPI_Alltoallw): sendcounts[i]
 *        elements of sendtypes[i] at sendbuf + sdispls[i] *bytes* go to rank i, and so on
 *        for the receive side. Data moves as bytes: the byte counts must match pairwise.
 * @param [in]      sendbuf    data to send (see above for the in-place form)
 * @param [in]      sendcounts elements to each rank
 * @param [in]      sdispls    offset of each block sent, in elements (bytes for dfcclAllToAllw)
 * @param [in]      sendtypes  element type of each block sent
 * @param [out]     recvbuf    where the result lands
 * @param [in]      recvcounts elements from each rank
 * @param [in]      rdispls    offset of each block received, in elements (bytes for dfcclAllToAllw)
 * @param [in]      recvtypes  element type of each block received
 * @param [in]      comm       the communicator
 * @param [out]     request_p  completed through dfcclTest / dfcclWait
 * @return dfcclSuccess (submitted), dfcclInvalidArgument (a bad argument: the message
 *         names it), dfcclUnsupported (type/op/buffer kind this build cannot run),
 *         dfcclCommAborted, dfcclNoMemory
 * @note Collective on @p comm. Buffers must stay valid until completion.
 */
dfcclResult_t dfcclAllToAllw(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                             const dfcclDataType_t *sendtypes, void *recvbuf, const size_t *recvcounts,
                             const size_t *rdispls, const dfcclDataType_t *recvtypes, dfcclComm_t comm,
                             dfcclRequest_t *request_p);

/**
 * @brief Non-blocking inclusive prefix reduction: rank i gets the reduction of ranks
 *        0..i's @p sendbuf, folded in rank order. In place when sendbuf == recvbuf.
 * @param [in]      sendbuf    data to send (see above for the in-place form)
 * @param [out]     recvbuf    where the result lands
 * @param [in]      count      elements per rank
 * @param [in]      datatype   element type
 * @param [in]      op         reduction operator
 * @param [in]      comm       the communicator
 * @param [out]     request_p  completed through dfcclTest / dfcclWait
 * @return dfcclSuccess (submitted), dfcclInvalidArgument (a bad argument: the message
 *         names it), dfcclUnsupported (type/op/buffer kind this build cannot run),
 *         dfcclCommAborted, dfcclNoMemory
 * @note Collective on @p comm. Buffers must stay valid until completion.
 */
dfcclResult_t dfcclScan(const void *sendbuf, void *recvbuf, size_t count, dfcclDataType_t datatype,
                        dfcclRedOp_t op, dfcclComm_t comm, dfcclRequest_t *request_p);

/**
 * @brief Non-blocking exclusive prefix reduction: rank i > 0 gets the reduction of ranks
 *        0..i-1; rank 0's @p recvbuf is left untouched. In place when sendbuf == recvbuf.
 * @param [in]      sendbuf    data to send (see above for the in-place form)
 * @param [out]     recvbuf    where the result lands
 * @param [in]      count      elements per rank
 * @param [in]      datatype   element type
 * @param [in]      op         reduction operator
 * @param [in]      comm       the communicator
 * @param [out]     request_p  completed through dfcclTest / dfcclWait
 * @return dfcclSuccess (submitted), dfcclInvalidArgument (a bad argument: the message
 *         names it), dfcclUnsupported (type/op/buffer kind this build cannot run),
 *         dfcclCommAborted, dfcclNoMemory
 * @note Collective on @p comm. Buffers must stay valid until completion.
 */
dfcclResult_t dfcclExscan(const void *sendbuf, void *recvbuf, size_t count, dfcclDataType_t datatype,
                          dfcclRedOp_t op, dfcclComm_t comm, dfcclRequest_t *request_p);

/**
 * @brief Non-blocking barrier.
 * @param [in]      comm       the communicator
 * @param [out]     request_p  completed through dfcclTest / dfcclWait
 * @return dfcclSuccess (submitted), dfcclInvalidArgument (a bad argument: the message
 *         names it), dfcclUnsupported (type/op/buffer kind this build cannot run),
 *         dfcclCommAborted, dfcclNoMemory
 * @note Collective on @p comm. Buffers must stay valid until completion.
 */
dfcclResult_t dfcclBarrier(dfcclComm_t comm, dfcclRequest_t *request_p);

/**
 * @brief Test a request. When it has completed, *@p done_p is 1, the request is
 *        freed, *@p request_p becomes NULL and the collective's result is returned.
 *        Otherwise *@p done_p is 0 and dfcclSuccess is returned.
 * @param [in,out] request_p  the request; NULL once completed
 * @param [out]    done_p     1 when it has completed, else 0
 * @return dfcclSuccess while running, else the collective's result (dfcclTimeout,
 *         dfcclCommAborted, ...); dfcclInvalidArgument for a bad request
 * @note A request is a handle with a generation, not an address: a copy of a request
 *       that already completed (freed by the dfcclTest or dfcclWait that completed it),
 *       or a word that was never a request, gives dfcclInvalidArgument naming
 *       `*request_p` and leaves it as it was.
 */
dfcclResult_t dfcclTest(dfcclRequest_t *request_p, int *done_p);

/**
 * @brief Wait for a request; frees it and sets *@p request_p to NULL. A NULL
 *        request completes at once.
 * @param [in,out] request_p  the request; NULL on return
 * @return the collective's result; dfcclInvalidArgument for a bad request (a copy of a
 *         request already completed, as dfcclTest says)
 */
dfcclResult_t dfcclWait(dfcclRequest_t *request_p);

/**
 * @brief Wait for @p n requests; all are freed.
 * @param [in]     n         number of requests
 * @param [in,out] requests  the requests; each becomes NULL (NULL entries are skipped)
 * @return dfcclSuccess, or the first error met; dfcclInvalidArgument, with nothing
 *         waited on and @p requests unchanged, when an entry is not a pending request
 *         or one request appears twice (the message names the entries)
 */
dfcclResult_t dfcclWaitAll(int n, dfcclRequest_t *requests);

/** Where a buffer lives (dfcclPointerGetKind). */
typedef enum {
    dfcclMemHost = 0,    /**< host memory (pageable or pinned), or unknown to CUDA */
    dfcclMemDevice = 1,  /**< device memory: the GPU daemon runs collectives on it */
    dfcclMemManaged = 2, /**< CUDA managed memory: the GPU daemon runs it where the
                              communicator has a GPU part, else the CPU daemon */
} dfcclMemKind_t;

/**
 * @brief The kind of memory @p ptr points to, as dfccl sees it: the one test the library
 *        (which daemon runs a collective) and the Open MPI component (which path a call
 *        takes) both use. It asks the CUDA driver (opened on first use, never
 *        initialised by dfccl, so a process that has not used CUDA gets dfcclMemHost and
 *        no CUDA context); without a driver every pointer is host memory. Device memory
 *        gets the driver's SYNC_MEMOPS attribute the first time it is seen, so that a
 *        synchronous cudaMemcpy into it has landed when it returns.
 * @param [in]  ptr     any address (NULL: dfcclMemHost)
 * @param [out] kind_p  its kind
 * @return dfcclSuccess, dfcclInvalidArgument (NULL @p kind_p)
 */
dfcclResult_t dfcclPointerGetKind(const void *ptr, dfcclMemKind_t *kind_p);

/**
 * @brief Size of one element of @p datatype.
 * @param [in] datatype  an element type
 * @return its size in bytes, 0 for an unknown type
 */
size_t dfcclTypeSize(dfcclDataType_t datatype);

#ifdef __cplusplus
}
#endif

#endif /* DFCCL_H */
