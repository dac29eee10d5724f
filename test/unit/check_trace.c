/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests: DFCCL_TRACE (engine/trace.c): the GPU daemon's records on the host's
 * clock, and the private files it writes (no symbolic links, no strangers' files). */
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_engine.h"
#include "eng_log.h"
#include "eng_trace.h"
#include "eng_types.h"

/* ---- DFCCL_TRACE: the GPU daemon's records -------------------------------------------- */

/* The "ts" of the first line of the file that contains every one of the needles. */
static double trace_ts(const char *text, const char *a, const char *b)
{
    for (const char *l = text; l && *l;) {
        const char *e = strchr(l, '\n');
        const size_t n = e ? (size_t)(e - l) : strlen(l);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), l);
        const char *ts = strstr(line, "\"ts\": ");
        if (strstr(line, a) && (!b || strstr(line, b)) && ts)
            return atof(ts + 6);
        l = e ? e + 1 : NULL;
    }
    return -1;
}

/* Device-clock stretches land on the host's clock by the smallest host-minus-device gap
 * sampled (a bound from above), with the GPU's own numbering (communicator "<uid>/gpu"),
 * the block's lane and the late ranks; the CPU daemon's events of the same communicator
 * and number stay apart. */
/* Log and trace files: created 0600, never through a symbolic link, never another
 * user's file, never a FIFO (whose open would block). */
START_TEST(private_files_refuse_links_and_strangers)
{
    char dir[] = "/tmp/dfccl-files-unit.XXXXXX", path[128], target[128], why[600];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    /* a new file: 0600 whatever the umask allows */
    snprintf(path, sizeof path, "%s/new.log", dir);
    FILE *f = eng_open_private(path, why, sizeof why);
    ck_assert_msg(f != NULL, "%s", why);
    fputs("one\n", f);
    fclose(f);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    /* an existing one of ours: appended to, positioned at its end */
    f = eng_open_private(path, why, sizeof why);
    ck_assert_msg(f != NULL, "%s", why);
    ck_assert_int_eq(ftell(f), 4);
    fclose(f);
    /* a symbolic link to a file of ours: refused, the file untouched */
    snprintf(target, sizeof target, "%s/link.log", dir);
    ck_assert_int_eq(symlink(path, target), 0);
    f = eng_open_private(target, why, sizeof why);
    ck_assert_msg(f == NULL && strstr(why, "symbolic link"), "opened through a symlink (%s)", why);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_size, 4);
    unlink(target);
    /* a FIFO: refused at once */
    snprintf(target, sizeof target, "%s/fifo.log", dir);
    ck_assert_int_eq(mkfifo(target, 0600), 0);
    f = eng_open_private(target, why, sizeof why);
    ck_assert_msg(f == NULL, "opened a FIFO");
    unlink(target);
    /* another user's file (root can make one) */
    if (geteuid() == 0) {
        snprintf(target, sizeof target, "%s/other.log", dir);
        int fd = open(target, O_CREAT | O_WRONLY, 0666);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(fchown(fd, 65534, 65534), 0);
        close(fd);
        f = eng_open_private(target, why, sizeof why);
        ck_assert_msg(f == NULL && strstr(why, "belongs to uid 65534"), "opened another user's file (%s)",
                      why);
        unlink(target);
    }
    unlink(path);
    rmdir(dir);
}
END_TEST

/* DFCCL_TRACE's file name is known in advance (prefix.PID.json): a symbolic link put
 * there by someone else is refused and its target left alone. */
START_TEST(trace_refuses_a_symlink)
{
    char dir[] = "/tmp/dfccl-trace-link.XXXXXX", prefix[64], path[128], victim[128];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(prefix, sizeof prefix, "%s/t", dir);
    snprintf(path, sizeof path, "%s.%d.json", prefix, (int)getpid());
    snprintf(victim, sizeof victim, "%s/victim", dir);
    FILE *v = fopen(victim, "w");
    ck_assert_ptr_nonnull(v);
    fputs("precious\n", v);
    fclose(v);
    ck_assert_int_eq(symlink(victim, path), 0);
    setenv("DFCCL_TRACE", prefix, 1);
    eng_trace_setup();
    const eng_trace_key_t c = {.uid = 0xabc, .seq = 1, .rank = 0, .nranks = 2, .coll = ENG_COLL_ALLREDUCE};
    eng_trace_submit(&c, 1000);
    eng_trace_complete(&c, 0);
    eng_trace_flush();
    struct stat st;
    ck_assert_int_eq(stat(victim, &st), 0);
    ck_assert_int_eq(st.st_size, 9);
    unlink(path);
    unlink(victim);
    rmdir(dir);
}
END_TEST

START_TEST(trace_gpu_records_on_host_clock)
{
    char dir[] = "/tmp/dfccl-trace-unit.XXXXXX", prefix[64], path[128];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(prefix, sizeof prefix, "%s/t", dir);
    setenv("DFCCL_TRACE", prefix, 1);
    eng_trace_setup();
    ck_assert_int_eq(eng_trace_on, 1);
    const eng_trace_key_t g = {
        .uid = 0xabc, .seq = 7, .rank = 0, .nranks = 4, .coll = ENG_COLL_ALLREDUCE, .gpu = 1};
    eng_trace_key_t c = g;
    c.gpu = 0;
    eng_trace_submit(&c, 10700000);
    eng_trace_submit(&g, 10800000);
    eng_trace_gpu_clock(10000000, 1000000);  /* gap 9.0 ms */
    eng_trace_gpu_clock(10500000, 1600000);  /* 8.9 ms: the smallest */
    eng_trace_gpu_clock(20000000, 10500000); /* 9.5 ms */
    eng_trace_stretch(&g, 3, 2000000, 2001500, ENG_TR_STALLED, 1ull << 2 | 1ull << 3);
    eng_trace_stretch(&g, 3, 2002000, 2004000, ENG_TR_FINISHED, 0);
    /* 100 ms on (6 buckets of 2^24 ns further): the clocks drifted 0.4 ms, and a stretch
     * there is placed by the sample near it, not by the first ones */
    eng_trace_gpu_clock(110000000, 101500000); /* 8.5 ms */
    const eng_trace_key_t g2 = {
        .uid = 0xabc, .seq = 8, .rank = 0, .nranks = 4, .coll = ENG_COLL_BCAST, .gpu = 1};
    eng_trace_stretch(&g2, 0, 101000000, 101000500, ENG_TR_FINISHED, 0);
    eng_trace_complete(&g, 0);
    eng_trace_flush();
    snprintf(path, sizeof path, "%s.%d.json", prefix, (int)getpid());
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    static char text[65536];
    const size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    unlink(path);
    rmdir(dir);
    const double sub_cpu = trace_ts(text, "\"cat\": \"submit\"", "\"comm\": \"0000000000000abc\",");
    const double sub_gpu = trace_ts(text, "\"cat\": \"submit\"", "\"comm\": \"0000000000000abc/gpu\"");
    const double stalled = trace_ts(text, "\"outcome\": \"stalled\"", NULL);
    const double finished = trace_ts(text, "\"outcome\": \"finished\"", NULL);
    ck_assert_msg(sub_cpu > 0 && sub_gpu > 0 && stalled > 0 && finished > 0, "%s", text);
    /* 2.0 ms device + 8.9 ms = 10.9 ms host: 100 us after the GPU submission (µs since
     * the epoch in a double: a quarter-µs resolution) */
    ck_assert_msg(fabs(sub_gpu - sub_cpu - 100.0) < 0.5, "%f %f", sub_gpu, sub_cpu);
    ck_assert_msg(fabs(stalled - sub_gpu - 100.0) < 0.5, "%f %f", stalled, sub_gpu);
    ck_assert_msg(fabs(finished - stalled - 2.0) < 0.5, "%f %f", finished, stalled);
    const double later = trace_ts(text, "\"name\": \"bcast (GPU) #8\"", NULL);
    /* 101 ms + 8.5 ms = 109.5 ms host: 98.7 ms after the GPU submission */
    ck_assert_msg(fabs(later - sub_gpu - 98700.0) < 0.5, "%f %f", later, sub_gpu);
    ck_assert_msg(strstr(text, "\"dur\": 1.500"), "%s", text);
    ck_assert_msg(strstr(text, "\"late_ranks\": [2, 3]"), "%s", text);
    ck_assert_msg(strstr(text, "\"worker\": 67"), "%s", text);
    ck_assert_msg(strstr(text, "\"daemon\": \"gpu\"") && strstr(text, "\"daemon\": \"cpu\""), "%s", text);
    ck_assert_msg(strstr(text, "\"name\": \"allreduce (GPU) #7\""), "%s", text);
    ck_assert_msg(strstr(text, "\"cat\": \"complete\"") && strstr(text, "\"result\": 0"), "%s", text);
}
END_TEST

Suite *check_trace_suite(void)
{
    Suite *s = suite_create("trace");
    TCase *t;
    t = tcase_create("trace");
    tcase_add_test(t, trace_gpu_records_on_host_clock);
    tcase_add_test(t, trace_refuses_a_symlink);
    tcase_add_test(t, private_files_refuse_links_and_strangers);
    suite_add_tcase(s, t);
    return s;
}
