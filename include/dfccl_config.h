/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file dfccl_config.h
 * @brief dfccl's configuration: dfcclConfig_t for dfcclCommInitConfig, and the queries
 *        that list the variables dfccl reads and how it was built. Included by dfccl.h;
 *        include that one.
 */
#ifndef DFCCL_CONFIG_H
#define DFCCL_CONFIG_H

#ifndef DFCCL_H
#error "include <dfccl.h>, which includes this header"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Transport between the ranks of a communicator (dfcclConfig_t.net, DFCCL_NET). */
typedef enum {
    dfcclNetUnset = -2147483647 - 1, /**< DFCCL_CONFIG_UNSET: DFCCL_NET decides */
    dfcclNetAuto = 0,                /**< same host over shared memory (CUDA IPC), other hosts over UCX */
    dfcclNetUcx = 1,                 /**< every other rank over UCX, even on the same host (testing) */
} dfcclNet_t;

/** @brief Log verbosity on stderr (dfcclConfig_t.logLevel, DFCCL_LOG_LEVEL). */
typedef enum {
    dfcclLogUnset = -2147483647 - 1, /**< DFCCL_CONFIG_UNSET: DFCCL_LOG_LEVEL decides */
    dfcclLogError = 0,
    dfcclLogWarn = 1,
    dfcclLogInfo = 2,
    dfcclLogDebug = 3,
    dfcclLogTrace = 4,
} dfcclLogLevel_t;

/** @brief A field of dfcclConfig_t left to the environment (the DFCCL_* variable, else
 *         its default). */
#define DFCCL_CONFIG_UNSET (-2147483647 - 1)
/** @brief dfcclConfig_t.magic of a configuration made with DFCCL_CONFIG_INITIALIZER. */
#define DFCCL_CONFIG_MAGIC 0xdfcc1c0fu

/**
 * @brief The engine's knobs for dfcclCommInitConfig, one field per DFCCL_* variable of
 *        the same meaning (units and ranges: README.md, "Configuration").
 *
 * Start from DFCCL_CONFIG_INITIALIZER (every field unset) and set what you mean to
 * fix. An unset field takes the environment variable, else its default; a set field
 * wins over the environment. The values are process-wide: the first communicator the
 * process creates fixes them (a failed creation fixes nothing, and the next one reads the
 * environment again), and a later dfcclCommInitConfig whose set fields differ fails
 * with dfcclInvalidUsage. Fields past @c size are unset, so a program built against an
 * older dfccl.h keeps working with a newer library.
 */
typedef struct {
    size_t size;              /**< sizeof(dfcclConfig_t) of the caller's header */
    unsigned int magic;       /**< DFCCL_CONFIG_MAGIC */
    unsigned int version;     /**< DFCCL_VERSION_CODE of the caller's header */
    int32_t preempt;          /**< DFCCL_PREEMPT: 1 preempt stalled collectives, 0 never */
    int64_t thresholdBaseNs;  /**< DFCCL_THRESHOLD_BASE_NS */
    int32_t thresholdGrowth;  /**< DFCCL_THRESHOLD_GROWTH */
    int64_t thresholdMaxNs;   /**< DFCCL_THRESHOLD_MAX_NS */
    int32_t headFactor;       /**< DFCCL_HEAD_FACTOR */
    int32_t slots;            /**< DFCCL_SLOTS */
    int32_t channels;         /**< DFCCL_CHANNELS */
    int32_t cpuThreads;       /**< DFCCL_CPU_THREADS */
    int32_t netThreads;       /**< DFCCL_NET_THREADS (0: from the rank's cores) */
    int64_t netPiece;         /**< DFCCL_NET_PIECE, bytes */
    int64_t chunkSize;        /**< DFCCL_CHUNK_SIZE, bytes */
    int32_t fifoDepth;        /**< DFCCL_FIFO_DEPTH */
    int64_t oneshotMax;       /**< DFCCL_ONESHOT_MAX, bytes */
    int64_t llMax;            /**< DFCCL_LL_MAX, bytes */
    int64_t stallReportMs;    /**< DFCCL_STALL_REPORT, ms */
    int64_t timeoutMs;        /**< DFCCL_TIMEOUT, ms */
    int32_t gpuChannels;      /**< DFCCL_GPU_CHANNELS (0: automatic) */
    int32_t gpuThreads;       /**< DFCCL_GPU_THREADS */
    int64_t gpuChunkSize;     /**< DFCCL_GPU_CHUNK_SIZE, bytes */
    int64_t gpuNetChunkSize;  /**< DFCCL_GPU_NET_CHUNK_SIZE, bytes */
    int64_t gpuIdleQuitUs;    /**< DFCCL_GPU_IDLE_QUIT, us */
    int64_t gpuStallQuitUs;   /**< DFCCL_GPU_STALL_QUIT, us */
    int32_t gpuTrace;         /**< DFCCL_GPU_TRACE: 0 or 1 */
    dfcclNet_t net;           /**< DFCCL_NET */
    dfcclLogLevel_t logLevel; /**< DFCCL_LOG_LEVEL */
    int64_t directMax;        /**< DFCCL_DIRECT_MAX, bytes */
    int32_t oneshotRanks;     /**< DFCCL_ONESHOT_RANKS */
    int32_t directRanks;      /**< DFCCL_DIRECT_RANKS */
    int64_t llWideMax;        /**< DFCCL_LL_WIDE_MAX, bytes */
} dfcclConfig_t;

/** @brief A dfcclConfig_t with every field unset: the environment decides everything. */
/* clang-format off: one line per group of fields, in declaration order */
#define DFCCL_CONFIG_INITIALIZER                                                                             \
    {                                                                                                        \
        sizeof(dfcclConfig_t), DFCCL_CONFIG_MAGIC, DFCCL_VERSION_CODE, DFCCL_CONFIG_UNSET,                   \
            DFCCL_CONFIG_UNSET, DFCCL_CONFIG_UNSET, DFCCL_CONFIG_UNSET, DFCCL_CONFIG_UNSET,                  \
            DFCCL_CONFIG_UNSET, DFCCL_CONFIG_UNSET, DFCCL_CONFIG_UNSET, DFCCL_CONFIG_UNSET,                  \
            DFCCL_CONFIG_UNSET, DFCCL_CONFIG_UNSET, DFCCL_CONFIG_UNSET, DFCCL_CONFIG_UNSET,                  \
            DFCCL_CONFIG_UNSET, DFCCL_CONFIG_UNSET, DFCCL_CONFIG_UNSET, DFCCL_CONFIG_UNSET,                  \
            DFCCL_CONFIG_UNSET, DFCCL_CONFIG_UNSET, DFCCL_CONFIG_UNSET, DFCCL_CONFIG_UNSET,                  \
            DFCCL_CONFIG_UNSET, DFCCL_CONFIG_UNSET, dfcclNetUnset, dfcclLogUnset, DFCCL_CONFIG_UNSET,        \
            DFCCL_CONFIG_UNSET, DFCCL_CONFIG_UNSET, DFCCL_CONFIG_UNSET                                       \
    }
/* clang-format on */

/** One variable of dfccl's configuration, as `dfccl-info` lists it. The strings stay
 *  valid until the next call of dfcclGetConfigEntry. */
typedef struct {
    const char *name;         /**< the environment variable, e.g. "DFCCL_SLOTS" */
    const char *field;        /**< its dfcclConfig_t field, or NULL (environment only) */
    const char *defaultValue; /**< the default, as text */
    const char *value;        /**< its value in this process's environment, or NULL if unset */
    const char *unit;         /**< the unit, or the words it takes */
    const char *help;         /**< what it does, one line */
} dfcclConfigEntry_t;

/**
 * @brief Entry @p index (0, 1, ...) of the variables dfccl reads.
 * @param [in]  index  0 up to the count, which is where this returns dfcclInvalidArgument
 * @param [out] entry  the variable's description
 * @return dfcclSuccess, dfcclInvalidArgument (past the last entry, or NULL @p entry)
 */
dfcclResult_t dfcclGetConfigEntry(int index, dfcclConfigEntry_t *entry);

/** How the library was built, and what it sees (dfcclGetBuildInfo). */
typedef struct {
    int version;        /**< DFCCL_VERSION_CODE of the library */
    int gpuBackend;     /**< 1: built with the GPU backend (CUDA) */
    int netTransport;   /**< 1: built with the UCX net transport */
    int gpuDevices;     /**< CUDA devices this process sees; -1: none, or no GPU backend */
    char devices[1024]; /**< one line per device, or why there is none */
} dfcclBuildInfo_t;

/**
 * @brief The library's build options and the CUDA devices it sees (this initializes
 *        CUDA in the calling process when the GPU backend is built in).
 * @param [out] info  filled in
 * @return dfcclSuccess, dfcclInvalidArgument (NULL @p info)
 */
dfcclResult_t dfcclGetBuildInfo(dfcclBuildInfo_t *info);

#ifdef __cplusplus
}
#endif

#endif /* DFCCL_CONFIG_H */
