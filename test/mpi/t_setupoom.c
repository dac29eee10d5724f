/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_setupoom: a rank that runs out of memory while it sets up a communicator. The nth
 * allocation that libdfccl makes inside dfcclCommInit on one rank fails (this program
 * replaces malloc, calloc, realloc and posix_memalign for the whole process and fails
 * only that call, recognised by its caller's address inside libdfccl's own code: not the
 * CUDA runtime linked statically into it, named by its symbol table, which is not
 * dfccl's and crashes on some of its own failed allocations); n = 2, 3, ... until a
 * set-up makes fewer than n allocations (the first, the table of the set-up's first
 * all-gather, is the one whose failure cannot reach the peers: it would tell them). Each
 * time every rank must come back from dfcclCommInit with the same verdict: all fail
 * (then nothing is left behind and a fresh communicator works), or all succeed (an
 * allocation the set-up could do without) and a checked allreduce runs on it. A rank
 * that gives up alone leaves its peers waiting in one of the set-up's all-gathers: the
 * suite's timeout turns that into a failure.
 *
 * usage: t_setupoom FAILING_RANK [MAX_N]
 */
#include <elf.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "test_common.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static uintptr_t lib_lo, lib_hi; /* libdfccl's mapped segments */
static char lib_path[4096];
static uintptr_t (*foreign)[2]; /* [nforeign]: the CUDA runtime's functions in it, sorted */
static size_t nforeign;
static int had_symtab;
static __thread int armed; /* counting libdfccl's allocations (the set-up's thread only) */
static long nth, seen;     /* the one to fail, those made so far */
static int fired;          /* it failed */

/* Is a inside one of the CUDA runtime's functions? */
static int in_foreign(uintptr_t a)
{
    size_t lo = 0, hi = nforeign;
    while (lo < hi) {
        const size_t m = (lo + hi) / 2;
        if (a < foreign[m][0])
            hi = m;
        else if (a >= foreign[m][1])
            lo = m + 1;
        else
            return 1;
    }
    return 0;
}

/* Whether this allocation, made from the code at ret, is the one that fails. */
static int fail_here(const void *ret)
{
    const uintptr_t a = (uintptr_t)ret;
    if (!armed || a < lib_lo || a >= lib_hi || in_foreign(a))
        return 0;
    if (__atomic_add_fetch(&seen, 1, __ATOMIC_RELAXED) != nth)
        return 0;
    __atomic_store_n(&fired, 1, __ATOMIC_RELAXED);
    if (getenv("T_SETUPOOM_VERBOSE")) { /* where it failed */
        void *bt[16];
        backtrace_symbols_fd(bt, backtrace(bt, 16), 2);
    }
    return 1;
}

void *malloc(size_t n)
{
    return fail_here(__builtin_return_address(0)) ? NULL : __libc_malloc(n);
}
void *calloc(size_t n, size_t s)
{
    return fail_here(__builtin_return_address(0)) ? NULL : __libc_calloc(n, s);
}
void *realloc(void *p, size_t n)
{
    return fail_here(__builtin_return_address(0)) ? NULL : __libc_realloc(p, n);
}
int posix_memalign(void **p, size_t align, size_t n)
{
    if (fail_here(__builtin_return_address(0)))
        return ENOMEM;
    return (*p = __libc_memalign(align, n)) ? 0 : ENOMEM;
}

static int find_lib(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    if (!info->dlpi_name || !strstr(info->dlpi_name, "libdfccl"))
        return 0;
    snprintf(lib_path, sizeof lib_path, "%s", info->dlpi_name);
    *(uintptr_t *)data = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        const uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        lib_lo = !lib_lo || lo < lib_lo ? lo : lib_lo;
        lib_hi = hi > lib_hi ? hi : lib_hi;
    }
    return 1;
}

static int cmp_range(const void *a, const void *b)
{
    const uintptr_t x = ((const uintptr_t *)a)[0], y = ((const uintptr_t *)b)[0];
    return x < y ? -1 : x > y;
}

/* The CUDA runtime's functions in libdfccl (cudart_static: "libcudart_static_*", the
 * cuda* API, __cuda*), from its symbol table; none where it has none (then counted). */
static void find_foreign(uintptr_t base)
{
    const int fd = open(lib_path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        return;
    }
    const char *f = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (f == MAP_FAILED)
        return;
    const size_t size = (size_t)st.st_size;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f;
    /* a 64-bit ELF whose section table and symbol table lie inside the file */
    const int ok = size >= sizeof(*eh) && !memcmp(eh->e_ident, ELFMAG, SELFMAG) &&
                   eh->e_ident[EI_CLASS] == ELFCLASS64 && eh->e_shentsize == sizeof(Elf64_Shdr) &&
                   eh->e_shoff <= size && eh->e_shnum <= (size - eh->e_shoff) / sizeof(Elf64_Shdr);
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(f + eh->e_shoff);
    for (int i = 0; ok && i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum || sh[i].sh_offset > size ||
            sh[i].sh_size > size - sh[i].sh_offset || sh[sh[i].sh_link].sh_offset > size ||
            sh[sh[i].sh_link].sh_size > size - sh[sh[i].sh_link].sh_offset)
            continue;
        const Elf64_Sym *sym = (const Elf64_Sym *)(f + sh[i].sh_offset);
        const char *names = f + sh[sh[i].sh_link].sh_offset;
        const size_t nnames = sh[sh[i].sh_link].sh_size;
        const size_t n = sh[i].sh_size / sizeof(Elf64_Sym);
        had_symtab = 1;
        foreign = (uintptr_t(*)[2])__libc_malloc(n * sizeof(*foreign));
        for (size_t k = 0; foreign && k < n; k++) {
            if (ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC || !sym[k].st_size ||
                sym[k].st_shndx == SHN_UNDEF || sym[k].st_name >= nnames ||
                !memchr(names + sym[k].st_name, 0, nnames - sym[k].st_name))
                continue;
            const char *nm = names + sym[k].st_name;
            if (strncmp(nm, "libcudart_static", 16) && strncmp(nm, "cuda", 4) && strncmp(nm, "__cuda", 6) &&
                !strstr(nm, "__cudaUnregister") && !strstr(nm, "__sti__"))
                continue;
            foreign[nforeign][0] = base + sym[k].st_value;
            foreign[nforeign][1] = base + sym[k].st_value + sym[k].st_size;
            nforeign++;
        }
        break;
    }
    munmap((void *)f, (size_t)st.st_size);
    if (nforeign)
        qsort(foreign, nforeign, sizeof(*foreign), cmp_range);
}

/* Every rank's value, the same on all or a failure naming the ranks. */
static int agreed(int mine, const char *what, long n)
{
    int lo = mine, hi = mine;
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    if (lo != hi)
        TC_FAIL("allocation %ld failed: ranks disagree on %s (this rank: %d)", n, what, mine);
    return mine;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    tc_init_world();
    if (argc < 2) {
        fprintf(stderr, "usage: t_setupoom FAILING_RANK [MAX_N]\n");
        tc_abort();
    }
    const int victim = atoi(argv[1]) % tc_size;
    const long max_n = argc > 2 ? atol(argv[2]) : 2000;
    uintptr_t base = 0;
    dl_iterate_phdr(find_lib, &base);
    if (!lib_lo)
        TC_FAIL("libdfccl is not among the loaded objects");
    find_foreign(base);
    /* without a symbol table the CUDA runtime's allocations inside it count too (it may
     * crash on one of its own: the test would then fail for a reason outside dfccl) */
    if (!had_symtab && tc_rank == victim)
        printf("%s: no symbol table: a CUDA runtime linked into it is counted too\n", lib_path);
    if (tc_rank == victim && getenv("T_SETUPOOM_VERBOSE"))
        printf("%s: %zu functions of the CUDA runtime not counted\n", lib_path, nforeign);
    long n, failed = 0;
    /* from the second: the first is the table of the set-up's first all-gather, whose
     * failure no peer can be told of (the one exception, engine/comm.c) */
    for (n = 2; n <= max_n; n++) {
        nth = n;
        seen = 0;
        fired = 0;
        dfcclComm_t c = NULL;
        if (getenv("T_SETUPOOM_VERBOSE"))
            fprintf(stderr, "[rank %d] allocation %ld\n", tc_rank, n);
        armed = tc_rank == victim;
        const dfcclResult_t r = dfcclCommInitMPI(&c, MPI_COMM_WORLD);
        armed = 0;
        int hit = fired;
        MPI_CHECK(MPI_Bcast(&hit, 1, MPI_INT, victim, MPI_COMM_WORLD));
        if (agreed(r == dfcclSuccess, "dfcclCommInit's outcome", n)) {
            if (!c)
                TC_FAIL("allocation %ld: dfcclCommInit succeeded without a communicator", n);
            char what[96];
            snprintf(what, sizeof what, "the allreduce after allocation %ld failed on rank %d", n, victim);
            tc_checked_allreduce_n(c, tc_size, tc_rank, 4099, (uint64_t)n, what);
            CHECK(dfcclCommDestroy(c));
        } else {
            failed++;
            if (c)
                TC_FAIL("allocation %ld: dfcclCommInit failed but returned a communicator", n);
            if (tc_rank == victim && r != dfcclNoMemory && n <= 3)
                printf("allocation %ld: %s: %s\n", n, dfcclGetErrorString(r), dfcclGetLastError());
        }
        if (!hit)
            break; /* the set-up makes fewer than n allocations: all were tried */
    }
    if (n > max_n)
        TC_FAIL("more than %ld allocations in one set-up", max_n);
    /* nothing of the failed set-ups is in the way of a fresh one */
    dfcclComm_t c = NULL;
    CHECK(dfcclCommInitMPI(&c, MPI_COMM_WORLD));
    tc_checked_allreduce_n(c, tc_size, tc_rank, 100003, 7, "the allreduce on a fresh communicator");
    CHECK(dfcclCommDestroy(c));
    if (tc_rank == 0)
        printf(
            "t_setupoom: allocations 2..%ld of rank %d's set-up failed one at a time (%ld set-ups failed on "
            "every rank, the others did without), np=%d\nOK\n",
            n - 1, victim, failed, tc_size);
    MPI_Finalize();
    return 0;
}
