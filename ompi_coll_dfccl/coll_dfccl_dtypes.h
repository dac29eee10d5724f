/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI datatypes and ops mapped to the engine's. Handles are compared with the
 * predefined ones from mpi.h (Open MPI's op.h is not usable out of tree).
 *
 * Reductions: predefined integer and floating types the engine has an element type
 * for, with SUM, PROD, MAX, MIN (all of them) and BAND, BOR, BXOR (integers and
 * MPI_BYTE). MPI_C_BOOL holds only 0 and 1, so LAND/LOR/LXOR on it are BAND/BOR/
 * BXOR on uint8. No 16-bit integers, long double, complex, pair types (MAXLOC/
 * MINLOC) or logical ops on integers: those fall back.
 * Data movement (bcast, allgather, alltoall): any datatype whose data is one
 * contiguous run of bytes, moved as uint8.
 */
#ifndef MCA_COLL_DFCCL_DTYPES_H
#define MCA_COLL_DFCCL_DTYPES_H

#include "ompi_config.h"

#include <stdbool.h>
#include <stddef.h>

#include "mpi.h"
#include "ompi/datatype/ompi_datatype.h"

#include "dfccl.h"

typedef enum {
    MCA_COLL_DFCCL_TC_INT,   /**< C integer: arithmetic and bitwise ops */
    MCA_COLL_DFCCL_TC_FLOAT, /**< floating point: arithmetic ops */
    MCA_COLL_DFCCL_TC_BYTE,  /**< MPI_BYTE: bitwise ops */
    MCA_COLL_DFCCL_TC_BOOL,  /**< MPI_C_BOOL: logical ops */
} mca_coll_dfccl_type_class_t;

#define MCA_COLL_DFCCL_TC_BIT(_c) (1u << (_c))

/* signed/unsigned engine type of a C integer type of _size bytes */
#define MCA_COLL_DFCCL_SINT(_size) ((_size) == 8 ? dfcclInt64 : (_size) == 4 ? dfcclInt32 : dfcclInt8)
#define MCA_COLL_DFCCL_UINT(_size) ((_size) == 8 ? dfcclUint64 : (_size) == 4 ? dfcclUint32 : dfcclUint8)

/** @brief Engine element type and class of a predefined datatype; false if none. */
static inline bool mca_coll_dfccl_type_map(struct ompi_datatype_t *dt, dfcclDataType_t *type_p,
                                           mca_coll_dfccl_type_class_t *class_p)
{
    /* the handles are addresses of Open MPI's predefined objects: constants */
    static const struct {
        MPI_Datatype handle;
        dfcclDataType_t type;
        mca_coll_dfccl_type_class_t cls;
    } table[] = {
        {MPI_INT, MCA_COLL_DFCCL_SINT(sizeof(int)), MCA_COLL_DFCCL_TC_INT},
        {MPI_FLOAT, dfcclFloat32, MCA_COLL_DFCCL_TC_FLOAT},
        {MPI_DOUBLE, dfcclFloat64, MCA_COLL_DFCCL_TC_FLOAT},
        {MPI_INT32_T, dfcclInt32, MCA_COLL_DFCCL_TC_INT},
        {MPI_INT64_T, dfcclInt64, MCA_COLL_DFCCL_TC_INT},
        {MPI_UINT32_T, dfcclUint32, MCA_COLL_DFCCL_TC_INT},
        {MPI_UINT64_T, dfcclUint64, MCA_COLL_DFCCL_TC_INT},
        {MPI_UNSIGNED, MCA_COLL_DFCCL_UINT(sizeof(unsigned)), MCA_COLL_DFCCL_TC_INT},
        {MPI_LONG, MCA_COLL_DFCCL_SINT(sizeof(long)), MCA_COLL_DFCCL_TC_INT},
        {MPI_UNSIGNED_LONG, MCA_COLL_DFCCL_UINT(sizeof(unsigned long)), MCA_COLL_DFCCL_TC_INT},
        {MPI_LONG_LONG_INT, MCA_COLL_DFCCL_SINT(sizeof(long long)), MCA_COLL_DFCCL_TC_INT},
        {MPI_LONG_LONG, MCA_COLL_DFCCL_SINT(sizeof(long long)), MCA_COLL_DFCCL_TC_INT},
        {MPI_UNSIGNED_LONG_LONG, MCA_COLL_DFCCL_UINT(sizeof(unsigned long long)), MCA_COLL_DFCCL_TC_INT},
        {MPI_INT8_T, dfcclInt8, MCA_COLL_DFCCL_TC_INT},
        {MPI_UINT8_T, dfcclUint8, MCA_COLL_DFCCL_TC_INT},
        {MPI_SIGNED_CHAR, dfcclInt8, MCA_COLL_DFCCL_TC_INT},
        {MPI_UNSIGNED_CHAR, dfcclUint8, MCA_COLL_DFCCL_TC_INT},
        {MPI_CHAR, dfcclInt8, MCA_COLL_DFCCL_TC_INT},
        {MPI_BYTE, dfcclUint8, MCA_COLL_DFCCL_TC_BYTE},
        {MPI_C_BOOL, dfcclUint8, MCA_COLL_DFCCL_TC_BOOL},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (table[i].handle == dt) {
            *type_p = table[i].type;
            *class_p = table[i].cls;
            return true;
        }
    return false;
}

/** @brief Engine op for a predefined op on a type class; false if the engine has none. */
static inline bool mca_coll_dfccl_op_map(struct ompi_op_t *op, mca_coll_dfccl_type_class_t cls,
                                         dfcclRedOp_t *op_p)
{
    enum {
        arith = MCA_COLL_DFCCL_TC_BIT(MCA_COLL_DFCCL_TC_INT) | MCA_COLL_DFCCL_TC_BIT(MCA_COLL_DFCCL_TC_FLOAT),
        bits = MCA_COLL_DFCCL_TC_BIT(MCA_COLL_DFCCL_TC_INT) | MCA_COLL_DFCCL_TC_BIT(MCA_COLL_DFCCL_TC_BYTE),
        logic = MCA_COLL_DFCCL_TC_BIT(MCA_COLL_DFCCL_TC_BOOL)
    };
    static const struct {
        MPI_Op handle;
        dfcclRedOp_t op;
        unsigned classes;
    } table[] = {
        {MPI_SUM, dfcclSum, arith},
        {MPI_PROD, dfcclProd, arith},
        {MPI_MAX, dfcclMax, arith},
        {MPI_MIN, dfcclMin, arith},
        {MPI_BAND, dfcclBand, bits},
        {MPI_BOR, dfcclBor, bits},
        {MPI_BXOR, dfcclBxor, bits},
        /* on 0/1 values the logical ops are the bitwise ones */
        {MPI_LAND, dfcclBand, logic},
        {MPI_LOR, dfcclBor, logic},
        {MPI_LXOR, dfcclBxor, logic},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (table[i].handle == op) {
            if (!(table[i].classes & MCA_COLL_DFCCL_TC_BIT(cls)))
                return false;
            *op_p = table[i].op;
            return true;
        }
    return false;
}

/** @brief Engine type and op of a reduction; false when the engine can't run it. */
static inline bool mca_coll_dfccl_reduction_map(struct ompi_datatype_t *dt, struct ompi_op_t *op,
                                                dfcclDataType_t *type_p, dfcclRedOp_t *op_p)
{
    mca_coll_dfccl_type_class_t cls;
    return mca_coll_dfccl_type_map(dt, type_p, &cls) && mca_coll_dfccl_op_map(op, cls, op_p);
}

/** @brief Index of a predefined op for coll_dfccl_check (-1: user-defined). */
static inline int mca_coll_dfccl_op_index(struct ompi_op_t *op)
{
    static const MPI_Op ops[] = {MPI_MAX, MPI_MIN,  MPI_SUM,  MPI_PROD,   MPI_LAND,   MPI_BAND,    MPI_LOR,
                                 MPI_BOR, MPI_LXOR, MPI_BXOR, MPI_MAXLOC, MPI_MINLOC, MPI_REPLACE, MPI_NO_OP};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (ops[i] == op)
            return (int)i + 1;
    return -1;
}

/* The basic types a datatype is made of, a bit each (its type signature's alphabet):
 * what coll_dfccl_check compares besides the byte count. */
static inline uint64_t mca_coll_dfccl_types(struct ompi_datatype_t *dt)
{
    return dt ? (uint64_t)dt->super.bdt_used : 0;
}

/**
 * @brief Where the bytes of @p count elements of @p dt start (offset from the buffer)
 *        when they form one contiguous run; false otherwise. *@p bytes_p is their size.
 */
static inline bool mca_coll_dfccl_contiguous(struct ompi_datatype_t *dt, size_t count, ptrdiff_t *offset_p,
                                             size_t *bytes_p)
{
    size_t size;
    ptrdiff_t true_lb, true_extent;
    ompi_datatype_type_size(dt, &size);
    *bytes_p = size * count;
    *offset_p = 0;
    if (!count || !size)
        return true;
    /* contiguous for 2 elements means contiguous for any number (size == extent);
     * asking for 2 keeps huge counts out of the int32 argument */
    if (!ompi_datatype_is_contiguous_memory_layout(dt, count > 1 ? 2 : 1))
        return false;
    ompi_datatype_get_true_extent(dt, &true_lb, &true_extent);
    *offset_p = true_lb;
    return true;
}

/**
 * @brief The memory a buffer of @p count elements of @p dt spans, gaps included, as
 *        an offset from the buffer and a length (for staging any datatype).
 */
static inline void mca_coll_dfccl_span(struct ompi_datatype_t *dt, size_t count, ptrdiff_t *lo_p,
                                       size_t *len_p)
{
    ptrdiff_t lb, extent, true_lb, true_extent;
    *lo_p = 0;
    *len_p = 0;
    if (!count)
        return;
    ompi_datatype_get_extent(dt, &lb, &extent);
    ompi_datatype_get_true_extent(dt, &true_lb, &true_extent);
    ptrdiff_t step = (ptrdiff_t)(count - 1) * extent;
    ptrdiff_t lo = true_lb + (step < 0 ? step : 0);
    ptrdiff_t hi = true_lb + true_extent + (step > 0 ? step : 0);
    *lo_p = lo;
    *len_p = hi > lo ? (size_t)(hi - lo) : 0;
}

#endif /* MCA_COLL_DFCCL_DTYPES_H */
