/* SPDX-License-Identifier: BSD-3-Clause */
/* dfccl-info: what this libdfccl is and how it is set, like ucx_info and ompi_info: the
 * version, the build options, the CUDA devices and MPS it sees, the size of /dev/shm,
 * and every DFCCL_* variable with its default, its value here, its unit and a line of
 * help.
 *
 *   dfccl-info        all of it
 *   dfccl-info -c     the variables only
 *   dfccl-info -b     the build and the machine only
 *   dfccl-info -h     this help */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "dfccl.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: dfccl-info [-c | -b | -h]\n"
               "  (none)  version, build options, CUDA devices, MPS, /dev/shm, and every DFCCL_* variable\n"
               "  -c      the variables only: name, default, value in this environment, unit, help\n"
               "  -b      the build and the machine only\n"
               "  -h      this help\n"
               "A variable set in the environment is marked '*'. dfcclConfig_t fields (dfcclCommInitConfig)\n"
               "override the variables; the field's name is shown after the variable's.\n");
}

static void build_and_machine(void)
{
    dfcclBuildInfo_t b;
    if (dfcclGetBuildInfo(&b) != dfcclSuccess) {
        fprintf(stderr, "dfccl-info: %s\n", dfcclGetLastError());
        exit(1);
    }
    printf("dfccl %d.%d.%d\n", b.version / 10000, b.version / 100 % 100, b.version % 100);
    printf("build: GPU backend (CUDA) %s, net transport (UCX) %s\n", b.gpuBackend ? "yes" : "no",
           b.netTransport ? "yes" : "no");
    if (b.gpuDevices > 0) {
        printf("CUDA devices: %d\n", b.gpuDevices);
        for (char *line = b.devices, *nl; line && *line; line = nl ? nl + 1 : NULL) {
            nl = strchr(line, '\n');
            printf("  %.*s\n", nl ? (int)(nl - line) : (int)strlen(line), line);
        }
    } else {
        printf("CUDA devices: none (%s)\n", b.devices);
    }
    const char *pipe = getenv("CUDA_MPS_PIPE_DIRECTORY");
    char control[512];
    snprintf(control, sizeof control, "%s/control", pipe && *pipe ? pipe : "/tmp/nvidia-mps");
    struct stat st;
    printf("MPS: %s (%s)\n",
           stat(control, &st) == 0 ? "a control daemon is running" : "no control daemon found", control);
    struct statvfs v;
    if (statvfs("/dev/shm", &v) == 0)
        printf("/dev/shm: %.1f MiB, %.1f MiB free (each communicator takes a segment per rank there)\n",
               (double)v.f_blocks * (double)v.f_frsize / (1024.0 * 1024.0),
               (double)v.f_bavail * (double)v.f_frsize / (1024.0 * 1024.0));
    else
        printf("/dev/shm: not found (shared-memory communicators will fail)\n");
}

static void variables(void)
{
    dfcclConfigEntry_t e;
    printf("%-2s%-26s %-16s %-16s %s\n", "", "variable", "default", "value here", "unit: meaning");
    for (int i = 0; dfcclGetConfigEntry(i, &e) == dfcclSuccess; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s", e.name);
        printf("%-2s%-26s %-16s %-16s %s: %s%s%s\n", e.value ? "*" : "", name, e.defaultValue,
               e.value ? e.value : "(default)", e.unit, e.help, e.field ? "; config." : "",
               e.field ? e.field : "");
    }
}

int main(int argc, char **argv)
{
    int vars = 1, build = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-c")) {
            build = 0;
        } else if (!strcmp(argv[i], "-b")) {
            vars = 0;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "dfccl-info: unknown argument %s\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (build)
        build_and_machine();
    if (build && vars)
        printf("\n");
    if (vars)
        variables();
    return 0;
}
