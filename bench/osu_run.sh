#!/bin/bash
# OSU Micro-Benchmarks 7.4 through the dfccl coll component, several modes side by side
# in one call, for bench/RESULTS.md.
#   osu_run.sh BUILD_DIR OSU_COLLECTIVE_DIR
# OSU_COLLECTIVE_DIR: c/mpi/collective of an OSU 7.4 build with CUDA (holds blocking/ and
# non_blocking/: osu_iallreduce and the other non-blocking forms are taken from there);
# test/gpu/device_run.sh osu builds one and runs this.
# Environment (defaults):
#   OSU_BENCH    "osu_gather osu_scatter osu_allgatherv osu_alltoallv"
#   OSU_NPS      "8"          ranks (one GPU: under MPS, started here when the GPU has none)
#   OSU_SIZES    "8 65536 1048576 67108864"   bytes, each its own OSU run (-m S:S); A:B is one
#                run over OSU's sizes from A to B, each reported
#   OSU_MODES    "engine staged"   engine: the defaults; staged: coll_dfccl_device_staged=1
#                (device buffers copied to host for Open MPI's own algorithms); off: coll ^dfccl;
#                build:DIR: the defaults with the library and component built in DIR (an A/B
#                of two builds in one call; build:DIR@A=1,B=2 with those variables too);
#                env:VAR=VALUE: the defaults with VAR=VALUE in every
#                rank's environment (DFCCL_DIRECT_MAX=0, say; several: env:A=1,B=2)
#   OSU_REPEATS  3            runs per (mode, size), modes interleaved; the median is reported
#   OSU_ARGS     "-d cuda -c -T mpi_float"   (validation on)
# Output: one line per (benchmark, ranks, size): each mode's median µs and its ratio to
# the first mode's; a failed validation or run is reported as FAIL.
set -u
B=$(cd "${1:?usage: osu_run.sh BUILD_DIR OSU_COLLECTIVE_DIR}" && pwd)
O=$(cd "${2:?usage: osu_run.sh BUILD_DIR OSU_COLLECTIVE_DIR}" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if command -v nvidia-cuda-mps-control >/dev/null && [ -z "${CUDA_MPS_PIPE_DIRECTORY:-}" ]; then
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/dfccl-mps/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/dfccl-mps/log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    nvidia-cuda-mps-control -d
    trap 'echo quit | nvidia-cuda-mps-control' EXIT
fi
SYS=$(ompi_info --path pkglibdir 2>/dev/null | sed -e 's/.*: *//')
# the launch for a build directory
base() {
    # shellcheck disable=SC2054 # "self,vader" is one argument
    BASE=(mpirun --oversubscribe --mca btl self,vader --bind-to none -x "LD_LIBRARY_PATH=$1/.libs"
        -x CUDA_MPS_PIPE_DIRECTORY --mca mca_base_component_path "$1/ompi_coll_dfccl/.libs:$SYS")
}
read -r -a ARGS <<< "${OSU_ARGS:--d cuda -c -T mpi_float}"
read -r -a MODES <<< "${OSU_MODES:-engine staged}"

mode_args() {
    case $1 in
    engine) ;;
    staged) echo "--mca coll_dfccl_device_staged 1" ;;
    off) echo "--mca coll ^dfccl" ;;
    build:*@*) mode_args "env:${1#*@}" ;;
    build:*) ;;
    env:*) # env:A=1,B=2: several variables
        local kv
        IFS=, read -r -a kv <<< "${1#env:}"
        printf -- '-x %s ' "${kv[@]}" ;;
    *) echo "unknown mode $1" >&2; exit 2 ;;
    esac
}

# iterations: enough for a stable average, few for the largest sizes
# (the host-staged baseline at 64 MiB and 8 ranks takes seconds a call: 5 after 1)
iters() {
    if [ "$1" -le 65536 ]; then
        echo "-i 1000 -x 100"
    elif [ "$1" -le 1048576 ]; then
        echo "-i 200 -x 20"
    elif [ "$1" -le 16777216 ]; then
        echo "-i 20 -x 3"
    else
        echo "-i 5 -x 1"
    fi
}

# a blocking benchmark (osu_allreduce) or a non-blocking one (osu_iallreduce)
bench_path() { if [ -x "$O/blocking/$1" ]; then echo "$O/blocking/$1"; else echo "$O/non_blocking/$1"; fi; }

median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print "FAIL"; else print v[int((NR+1)/2)]}'; }

echo "# OSU $(basename "$O"), $(date -u +%F), ${OSU_ARGS:--d cuda -c -T mpi_float}, median of ${OSU_REPEATS:-3} runs, µs"
for bench in ${OSU_BENCH:-osu_gather osu_scatter osu_allgatherv osu_alltoallv}; do
    # the latency; a non-blocking benchmark's "Pure Comm." column (its 4th)
    col=2; [ -x "$O/blocking/$bench" ] || col=4
    for np in ${OSU_NPS:-8}; do
        # a size S is one OSU run of that size; A:B one run of OSU's sizes from A to B
        for size in ${OSU_SIZES:-8 65536 1048576 67108864}; do
            range=$size; [[ "$range" == *:* ]] || range=$size:$size
            declare -A got=()
            sizes=""
            for _ in $(seq 1 "${OSU_REPEATS:-3}"); do
                for mode in "${MODES[@]}"; do
                    case $mode in build:*) d=${mode#build:} && base "${d%%@*}" ;; *) base "$B" ;; esac
                    # shellcheck disable=SC2046 # word splitting wanted
                    out=$(timeout -s KILL 300 "${BASE[@]}" -np "$np" $(mode_args "$mode") "$(bench_path "$bench")" \
                        "${ARGS[@]}" -m "$range" $(iters "${range#*:}") 2>&1)
                    rows=$(echo "$out" | awk -v c="$col" '$1 ~ /^[0-9]+$/ && $c ~ /^[0-9.]+$/ {print $1, $c}')
                    if [ -z "$rows" ] || echo "$out" | grep -qi "fail"; then
                        echo "$out" | tail -5 >&2
                        rows=""
                    fi
                    while read -r sz v; do
                        [ -n "$sz" ] || continue
                        got["$mode $sz"]+="$v "
                        [[ " $sizes " == *" $sz "* ]] || sizes+="$sz "
                    done <<< "$rows"
                done
            done
            [ -n "$sizes" ] || sizes=${range%%:*}
            for sz in $sizes; do
                line="$bench np=$np size=$sz"
                first=
                for mode in "${MODES[@]}"; do
                    m=$(tr ' ' '\n' <<< "${got["$mode $sz"]:-}" | grep . | median)
                    [ -z "$first" ] && first=$m
                    if [ "$m" = FAIL ] || [ "$first" = FAIL ]; then
                        line+="  $mode=$m"
                    else
                        line+="  $mode=$m ($(awk -v a="$m" -v b="$first" 'BEGIN {printf "%.2fx", a / b}'))"
                    fi
                done
                echo "$line"
            done
            unset got
        done
    done
done
