/* SPDX-License-Identifier: BSD-3-Clause */
/* The MPI datatype and op of a dfccl one, for the clients that run the same collective
 * through MPI (dfccl-bench -A mpi, the deadlock fuzzer's MPI build). MPI_DATATYPE_NULL /
 * MPI_OP_NULL where MPI has none (Open MPI 4.1 has no 16-bit floating point type). */
#ifndef DFCCL_MPI_MAP_H
#define DFCCL_MPI_MAP_H

#include <mpi.h>

#include "dfccl.h"

static inline MPI_Datatype dfccl_mpi_type(dfcclDataType_t t)
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

static inline MPI_Op dfccl_mpi_op(dfcclRedOp_t op)
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

#endif
