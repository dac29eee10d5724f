/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file dfccl_mpi.h
 * @brief Helper that creates a dfccl communicator over an MPI communicator.
 *
 * Header-only so that libdfccl itself never links MPI: the MPI calls are compiled
 * into the caller, against the caller's MPI.
 */
#ifndef DFCCL_MPI_H
#define DFCCL_MPI_H

#include <mpi.h>

#include "dfccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Bootstrap all-gather on host memory over the MPI communicator in @p ctx.
 * @param [in]  sendbuf  this rank's @p bytes
 * @param [out] recvbuf  every rank's, in rank order
 * @param [in]  bytes    bytes per rank (at most INT32_MAX)
 * @param [in]  ctx      a pointer to the MPI_Comm
 * @return 0 on success, -1 otherwise
 */
static inline int dfcclMpiAllgather(const void *sendbuf, void *recvbuf, size_t bytes, void *ctx)
{
    MPI_Comm mc = *(MPI_Comm *)ctx;
    if (bytes > (size_t)INT32_MAX)
        return -1;
    return MPI_Allgather(sendbuf, (int)bytes, MPI_BYTE, recvbuf, (int)bytes, MPI_BYTE, mc) == MPI_SUCCESS
               ? 0
               : -1;
}

/**
 * @brief Create a dfccl communicator with the ranks and size of @p mpi_comm, configured
 *        by @p config (dfcclCommInitConfig).
 * @param [out] comm_p    the new communicator
 * @param [in]  mpi_comm  the MPI communicator whose ranks take part
 * @param [in]  config    from DFCCL_CONFIG_INITIALIZER; NULL: the environment decides
 * @return as dfcclCommInitConfig; dfcclInvalidArgument when @p mpi_comm is not valid
 * @note Collective over @p mpi_comm.
 */
static inline dfcclResult_t dfcclCommInitMPIConfig(dfcclComm_t *comm_p, MPI_Comm mpi_comm,
                                                   const dfcclConfig_t *config)
{
    int rank, size;
    if (MPI_Comm_rank(mpi_comm, &rank) != MPI_SUCCESS || MPI_Comm_size(mpi_comm, &size) != MPI_SUCCESS)
        return dfcclInvalidArgument;
    return dfcclCommInitConfig(comm_p, size, rank, dfcclMpiAllgather, &mpi_comm, config);
}

/**
 * @brief Create a dfccl communicator with the ranks and size of @p mpi_comm, configured
 *        by the DFCCL_* environment variables.
 * @param [out] comm_p    the new communicator
 * @param [in]  mpi_comm  the MPI communicator whose ranks take part
 * @return as dfcclCommInit; dfcclInvalidArgument when @p mpi_comm is not valid
 * @note Collective over @p mpi_comm.
 */
static inline dfcclResult_t dfcclCommInitMPI(dfcclComm_t *comm_p, MPI_Comm mpi_comm)
{
    return dfcclCommInitMPIConfig(comm_p, mpi_comm, NULL);
}

/**
 * @brief The MPI datatype of a dfccl one, for running the same collective through MPI.
 * @return MPI_DATATYPE_NULL where MPI has none (dfcclFloat16, dfcclBfloat16: Open MPI
 *         4.1 has no 16-bit floating point type), or for a value that is no datatype
 */
static inline MPI_Datatype dfcclMpiDatatype(dfcclDataType_t t)
{
    switch (t) {
    case dfcclInt8: return MPI_INT8_T;
    case dfcclUint8: return MPI_UINT8_T;
    case dfcclInt32: return MPI_INT32_T;
    case dfcclUint32: return MPI_UINT32_T;
    case dfcclInt64: return MPI_INT64_T;
    case dfcclUint64: return MPI_UINT64_T;
    case dfcclFloat32: return MPI_FLOAT;
    case dfcclFloat64: return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL;
    }
}

/**
 * @brief The MPI op of a dfccl one.
 * @return MPI_OP_NULL for a value that is no op
 */
static inline MPI_Op dfcclMpiOp(dfcclRedOp_t op)
{
    switch (op) {
    case dfcclSum: return MPI_SUM;
    case dfcclProd: return MPI_PROD;
    case dfcclMax: return MPI_MAX;
    case dfcclMin: return MPI_MIN;
    case dfcclBand: return MPI_BAND;
    case dfcclBor: return MPI_BOR;
    case dfcclBxor: return MPI_BXOR;
    default: return MPI_OP_NULL;
    }
}

#ifdef __cplusplus
}
#endif

#endif /* DFCCL_MPI_H */
