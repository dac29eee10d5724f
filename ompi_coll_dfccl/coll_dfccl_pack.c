/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One side of a data-movement collective (gather, scatter, allgatherv, alltoallv/w) as
 * the engine takes it. Contiguous blocks go as they are; any other datatype is packed
 * with Open MPI's convertor into a contiguous buffer (and received blocks unpacked from
 * one when the call completes). Every rank thus takes the engine path whatever datatype
 * it passes: whether a rank packs is its own business, and the others can't know it
 * (MPI_Gather into a strided column at the root, a vector type on one sender).
 *
 * Device memory: the convertor runs on host memory, so the blocks' span is staged
 * through a host copy; when the GPU daemon runs the call, the packed data lives in a
 * device scratch buffer the engine reads or writes.
 *
 * A call's completion (mca_coll_dfccl_op_finish) is here too: it unpacks these sides
 * into their host views before the stages below are copied back (coll_dfccl_stage.c).
 */
#include <string.h>

#include "coll_dfccl_common.h"

/* What a packed side still needs when its call ends: for a receive side, unpack into
 * the host view (before the staged span is copied back); then free. */
struct mca_coll_dfccl_pack_t {
    struct mca_coll_dfccl_pack_t *next;
    bool recv;
    char *packed; /* host, contiguous */
    void *dev;    /* device scratch the engine used, or NULL */
    size_t total;
    char *view;        /* host view of the user buffer (displacements from it) */
    int n, uniform;    /* uniform: every block's count when counts is NULL */
    const int *counts; /* the caller's arrays stay valid until completion (MPI) */
    struct ompi_datatype_t **dts;
    ptrdiff_t *at; /* [n] byte offsets of the blocks in the user buffer */
    size_t *poff;  /* [n] byte offsets of the blocks in the packed buffer */
};

static int copy_blocks(mca_coll_dfccl_pack_t *k, bool pack)
{
    for (int i = 0; i < k->n; i++) {
        const int c = k->counts ? k->counts[i] : k->uniform;
        size_t size;
        ompi_datatype_type_size(k->dts[i], &size);
        const size_t bytes = size * (size_t)c;
        if (!bytes)
            continue;
        if (bytes > INT_MAX)
            return MPI_ERR_COUNT; /* the convertor's count is an int */
        int rc = pack ? ompi_datatype_sndrcv(k->view + k->at[i], c, k->dts[i], k->packed + k->poff[i],
                                             (int)bytes, MPI_PACKED)
                      : ompi_datatype_sndrcv(k->packed + k->poff[i], (int)bytes, MPI_PACKED,
                                             k->view + k->at[i], c, k->dts[i]);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return OMPI_SUCCESS;
}

/* The blocks of one side of a v- or w-call as the engine takes them: byte counts
 * (@p bcount) and byte offsets from the buffer (@p boff) of @p n blocks of
 * counts[i] elements (of dt, or of dts[i] for w, whose displacements are bytes);
 * *@p lo_p / *@p len_p: the bytes they span. False when a block is not one
 * contiguous run from its displacement, or a count or offset is negative: the
 * side is then packed.
 * With displs NULL, block i is at i * uniform elements.
 */
static bool vblocks(int n, const int *counts, const int *displs, int uniform, struct ompi_datatype_t *dt,
                    struct ompi_datatype_t *const *dts, size_t *bcount, size_t *boff, ptrdiff_t *lo_p,
                    size_t *len_p)
{
    ptrdiff_t lo = PTRDIFF_MAX, hi = 0;
    for (int i = 0; i < n; i++) {
        struct ompi_datatype_t *t = dts ? dts[i] : dt;
        ptrdiff_t off, lb, extent;
        size_t bytes;
        if (counts[i] < 0 || !mca_coll_dfccl_contiguous(t, (size_t)counts[i], &off, &bytes) || off != 0)
            return false;
        ompi_datatype_get_extent(t, &lb, &extent);
        /* displs NULL: uniform blocks back to back (no int to overflow past 2^31 elements) */
        const ptrdiff_t at = !displs ? (ptrdiff_t)i * uniform * extent
                             : dts   ? (ptrdiff_t)displs[i]
                                     : (ptrdiff_t)displs[i] * extent;
        if (at < 0)
            return false;
        if (bcount)
            bcount[i] = bytes;
        if (boff)
            boff[i] = (size_t)at;
        if (bytes) {
            lo = at < lo ? at : lo;
            hi = at + (ptrdiff_t)bytes > hi ? at + (ptrdiff_t)bytes : hi;
        }
    }
    *lo_p = hi > 0 ? lo : 0;
    *len_p = hi > 0 ? (size_t)(hi - lo) : 0;
    return true;
}

int mca_coll_dfccl_engine_side(mca_coll_dfccl_op_t *o, mca_coll_dfccl_mem_t kind, bool recv, bool keep,
                               void *user, int n, const int *counts, int uniform, const int *displs,
                               struct ompi_datatype_t *dt, struct ompi_datatype_t *const *dts, size_t *bcount,
                               size_t *boff, void **ebuf_p)
{
    int *ucounts = NULL;
    int rc = OMPI_SUCCESS;
    if (!counts) {
        /* uniform blocks: block i of `uniform` elements at i * uniform * extent (displs
         * stays NULL: the offsets are computed wide) */
        if (!(ucounts = malloc(sizeof(int) * (size_t)n)))
            return MPI_ERR_NO_MEM;
        for (int i = 0; i < n; i++)
            ucounts[i] = uniform;
        counts = ucounts;
        displs = NULL;
    }
    ptrdiff_t lo;
    size_t len;
    /* uniform blocks go to the engine back to back (MPI_Gather's and MPI_Scatter's
     * dfcclGather / dfcclScatter): a type whose extent is not its size is packed */
    bool dense = true;
    if (ucounts && n > 1 && uniform > 0) {
        ptrdiff_t lb, extent;
        size_t size;
        ompi_datatype_get_extent(dt, &lb, &extent);
        ompi_datatype_type_size(dt, &size);
        dense = (size_t)extent * (size_t)uniform == size * (size_t)uniform;
    }
    /* a send side the call overwrites (in place) is always copied: packed */
    if (dense && !(keep && !recv) && vblocks(n, counts, displs, uniform, dt, dts, bcount, boff, &lo, &len)) {
        /* a host copy of a receive span is read in when it has gaps between blocks,
         * which its copy back must leave as they were */
        rc = mca_coll_dfccl_view(o, kind, user, lo, len, !recv || keep || n > 1, 0, recv ? len : 0, ebuf_p);
        goto out;
    }

    /* packed: blocks one after the other, in rank order */
    mca_coll_dfccl_pack_t *k = calloc(
        1, sizeof(*k) + (size_t)n * (sizeof(struct ompi_datatype_t *) + sizeof(ptrdiff_t) + sizeof(size_t)));
    if (!k) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    k->recv = recv;
    k->n = n;
    k->uniform = uniform;
    k->counts = ucounts ? NULL : counts;
    k->dts = (struct ompi_datatype_t **)(k + 1);
    k->at = (ptrdiff_t *)(k->dts + n);
    k->poff = (size_t *)(k->at + n);
    k->next = o->packs;
    o->packs = k; /* freed by mca_coll_dfccl_op_finish from here on */
    ptrdiff_t span_lo = PTRDIFF_MAX, span_hi = PTRDIFF_MIN;
    for (int i = 0; i < n; i++) {
        struct ompi_datatype_t *t = dts ? dts[i] : dt;
        ptrdiff_t lb, extent, blo;
        size_t size, blen;
        ompi_datatype_get_extent(t, &lb, &extent);
        ompi_datatype_type_size(t, &size);
        k->dts[i] = t;
        k->at[i] = !displs ? (ptrdiff_t)i * uniform * extent
                   : dts   ? (ptrdiff_t)displs[i]
                           : (ptrdiff_t)displs[i] * extent;
        k->poff[i] = k->total;
        bcount[i] = counts[i] > 0 ? size * (size_t)counts[i] : 0;
        boff[i] = k->total;
        k->total += bcount[i];
        mca_coll_dfccl_span(t, (size_t)(counts[i] > 0 ? counts[i] : 0), &blo, &blen);
        if (blen) {
            span_lo = k->at[i] + blo < span_lo ? k->at[i] + blo : span_lo;
            span_hi = k->at[i] + blo + (ptrdiff_t)blen > span_hi ? k->at[i] + blo + (ptrdiff_t)blen : span_hi;
        }
    }
    /* the host view of the blocks' span: a host copy of device memory, read in (its
     * gaps survive the copy back), copied back for a receive side */
    k->view = user;
    const bool device = span_hi > span_lo && kind == MCA_COLL_DFCCL_MEM_DEVICE;
    if (device) {
        void *v;
        const size_t slen = (size_t)(span_hi - span_lo);
        if ((rc = mca_coll_dfccl_stage_in(o, user, span_lo, slen, true, 0, recv ? slen : 0, &v)) !=
            OMPI_SUCCESS)
            goto out;
        k->view = v;
    }
    if (!(k->packed = malloc(k->total ? k->total : 1))) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    /* a send side, and a receive side whose own block is sent in place */
    if ((!recv || keep) && (rc = copy_blocks(k, true)) != OMPI_SUCCESS)
        goto out;
    *ebuf_p = k->packed;
    if (o->device_direct && device) {
        /* the GPU daemon runs the call: the packed blocks go to device memory */
        if (!(k->dev = mca_coll_dfccl_device_alloc(k->total, (char *)user + span_lo))) {
            rc = MPI_ERR_NO_MEM;
            goto out;
        }
        if ((!recv || keep) && (rc = mca_coll_dfccl_copy(k->dev, k->packed, k->total, true)) != OMPI_SUCCESS)
            goto out;
        *ebuf_p = k->dev;
    }
out:
    free(ucounts);
    return rc;
}

static int packs_finish(mca_coll_dfccl_op_t *o, int rc)
{
    while (o->packs) {
        mca_coll_dfccl_pack_t *k = o->packs;
        o->packs = k->next;
        if (rc == OMPI_SUCCESS && k->recv) {
            if (k->dev)
                rc = mca_coll_dfccl_copy(k->packed, k->dev, k->total, false);
            if (rc == OMPI_SUCCESS)
                rc = copy_blocks(k, false);
        }
        mca_coll_dfccl_device_free(k->dev);
        free(k->packed);
        free(k);
    }
    return rc;
}

int mca_coll_dfccl_op_finish(mca_coll_dfccl_op_t *op, int rc)
{
    if (rc == OMPI_SUCCESS && op->move_len) {
        if (!op->move_device)
            memmove(op->move_dst, op->move_src, op->move_len);
        else if (mca_coll_dfccl_device_move(op->move_dst, op->move_src, op->move_len) != OMPI_SUCCESS)
            rc = MPI_ERR_OTHER;
    }
    mca_coll_dfccl_device_free(op->dev_tmp);
    op->dev_tmp = NULL;
    /* packed blocks are unpacked into their host views before those are copied back */
    rc = packs_finish(op, rc);
    return mca_coll_dfccl_stages_finish(op, rc);
}
