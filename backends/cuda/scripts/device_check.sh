#!/bin/bash
# Runs on the GPU machine, from the repository root: the CUDA tests, the
# tests under compute-sanitizer (memcheck on every test but the
# out-of-memory one, racecheck on two shapes; racecheck-all on every test)
# and the benchmark, writing logs to OUT.
#   backends/cuda/scripts/device_check.sh BUNDLE OUT [tests|sanitize|racecheck-all|bench|int32|int32-ab|int32-profile|graph|runtime|pipelines|bootstrap|plugin|accuracy|client-server ...]
# BUNDLE is a folder made by ../shared/tools/bundle-binaries from a build
# folder configured with -DFHELIUM_BUILD_CUDA=ON. int32-ab compares this
# bundle's cuda plugin with the plugin folder BASELINE_PLUGINS (another build).
set -u
bundle=$1
out=$2
shift 2
steps=${*:-tests sanitize bench}
export LD_LIBRARY_PATH=$PWD/$bundle/lib
tests=$bundle/tests/cuda/fhelium_cuda_tests
capture_tests=$bundle/tests/cuda/fhelium_cuda_capture_tests
collectives_tests=$bundle/tests/cuda/fhelium_cuda_collectives_tests
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem,driver_version --format=csv > "$out/nvidia-smi.txt" 2>&1
for step in $steps; do
  case $step in
    tests)
      timeout 300 "$tests" > "$out/tests.log" 2>&1
      echo "tests rc=$?"
      grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? ran|FAILED TEST" "$out/tests.log" | tail -12
      timeout 120 "$capture_tests" > "$out/capture_tests.log" 2>&1
      echo "capture tests rc=$?"
      grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? ran|FAILED TEST" "$out/capture_tests.log" | tail -12
      # Several GPUs (NCCL: put libnccl.so.2 on LD_LIBRARY_PATH; tests skip without the GPUs they need).
      timeout 300 "$collectives_tests" > "$out/collectives_tests.log" 2>&1
      echo "collectives tests rc=$?"
      grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? ran|FAILED TEST" "$out/collectives_tests.log" | tail -12
      ;;
    sanitize)
      # memcheck on every test (about 95 s on the H200), but the out-of-memory
      # one: its deliberate 1 TiB request is an API error to memcheck.
      # racecheck costs minutes per shape (racecheck-all runs every one);
      # N14_L7_K1 takes the fused one-prime paths (the cluster inner product).
      timeout 240 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 "$tests" \
        --gtest_filter='-*OutOfMemory*' > "$out/memcheck.log" 2>&1
      echo "memcheck rc=$?"
      tail -3 "$out/memcheck.log"
      timeout 200 compute-sanitizer --tool racecheck --error-exitcode 9 "$tests" \
        --gtest_filter='*N12_L5_K2_at5:*N14_L7_K1_at7' > "$out/racecheck.log" 2>&1
      echo "racecheck rc=$?"
      tail -3 "$out/racecheck.log"
      # Streams, events and graph replays.
      for tool in memcheck racecheck; do
        timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 "$capture_tests" > "$out/capture_$tool.log" 2>&1
        echo "capture $tool rc=$?"
        tail -3 "$out/capture_$tool.log"
      done
      ;;
    racecheck-all)
      # Every test under racecheck (or those matching the extended regular
      # expression RACECHECK_TESTS), one process each, one after another:
      # they share the GPU, and in parallel none runs faster. Alone (v25-v26,
      # docs/perf/cuda.md): at most 16 s for a 2^12, 2^13 or 2^15 shape,
      # 49-80 s for a 2^14 one, 53-216 s for a 2^16 one, 126 s for the prime
      # sweep; about 23 minutes for all 28, more than one 10-minute device
      # call, so select slices with RACECHECK_TESTS. RACECHECK_SECONDS (whole
      # seconds) bounds this step: a test is cut at the bound, later ones are
      # not started (each says so). A cut test may take 30 s more to die
      # (timeout -k 30): set it 40 s below what the call has left.
      seconds=${RACECHECK_SECONDS:-100000}
      if [[ ! $seconds =~ ^[0-9]+$ ]]; then
        echo "racecheck-all: RACECHECK_SECONDS is '$seconds', expected whole seconds; step skipped"
        continue
      fi
      deadline=$(($(date +%s) + 10#$seconds))
      for t in $("$tests" --gtest_list_tests | awk '/^[^ ]/ { suite = $1 } /^  / { print suite $1 }' |
        grep -E "${RACECHECK_TESTS:-.}"); do
        left=$((deadline - $(date +%s)))
        if ((left < 10)); then
          echo "racecheck $t not started: RACECHECK_SECONDS spent"
          continue
        fi
        log="$out/racecheck-${t//\//_}.log"
        timeout -k 30 $((left < 540 ? left : 540)) compute-sanitizer --tool racecheck --error-exitcode 9 "$tests" \
          --gtest_filter="$t" > "$log" 2>&1
        echo "racecheck $t rc=$? $(grep -h 'RACECHECK SUMMARY' "$log")"
      done
      ;;
    profile)
      # Per-kernel durations of single operations, then hardware counters of the NTT kernels.
      bench=$bundle/backends/cuda/bench/fhelium-bench-cuda
      once="--runs 1 --warmup 0 --sets 1 --hoisted 2 --no-graph"
      for preset in slots8192_scale40_levels7 slots32768_scale40_levels34; do
        echo "== $preset kernel durations" >> "$out/profile.txt"
        timeout 120 ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
          "$bench" --preset $preset --ops ntt_forward_ciphertext rescale relinearize rotate rotate_hoisted_per_rotation $once \
          >> "$out/profile.txt" 2>&1
      done
      echo "profile rc=$?"
      ;;
    counters)
      bench=$bundle/backends/cuda/bench/fhelium-bench-cuda
      once="--runs 1 --warmup 0 --sets 1 --hoisted 2 --no-graph"
      echo "== NTT kernels at 2^16" >> "$out/profile.txt"
      timeout 120 ncu --clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats \
        --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section LaunchStats \
        --kernel-name regex:'forward_(tiles|columns)' --launch-count 2 \
        "$bench" --preset slots32768_scale40_levels34 --ops ntt_forward_ciphertext $once >> "$out/profile.txt" 2>&1
      echo "counters rc=$?"
      ;;
    graph)
      # GraphProgram on the CUDA plugin: the contract tests (also under the
      # sanitizers), the reference example and the replay benchmark.
      export FHELIUM_BACKEND_PATH=$PWD/$bundle/lib/fhelium/plugins
      export FHELIUM_RUNTIME_TEST_BACKEND=cuda
      runtime_tests=$bundle/tests/runtime/fhelium_runtime_tests
      filter='GraphProgramTest.*:Sizes/Matvec.GraphReplays*'
      timeout 300 "$runtime_tests" --gtest_filter="$filter" > "$out/graph_tests.log" 2>&1
      echo "graph tests rc=$?"
      grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? ran|FAILED TEST" "$out/graph_tests.log" | tail -12
      for tool in memcheck racecheck; do
        timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 "$runtime_tests" \
          --gtest_filter='GraphProgramTest.*-*Concurrent*:Sizes/Matvec.GraphReplays*/1' > "$out/graph_$tool.log" 2>&1
        echo "graph $tool rc=$?"
        tail -2 "$out/graph_$tool.log"
      done
      timeout 200 "$bundle/apps/fhelium-matvec-graph" --backend cuda --size 64 --replays 4 > "$out/matvec-graph.json" 2>&1
      echo "matvec example rc=$?"
      timeout 300 "$bundle/apps/fhelium-bench-graph" --backend cuda --sizes 8,64,256 \
        > "$out/graph-bench-slots8192.json" 2> "$out/graph-bench.log"
      echo "graph bench 2^14 rc=$?"
      timeout 400 "$bundle/apps/fhelium-bench-graph" --backend cuda --preset slots32768_scale40_levels34 --sizes 256 \
        --runs 30 > "$out/graph-bench-slots32768.json" 2>> "$out/graph-bench.log"
      echo "graph bench 2^16 rc=$?"
      ;;
    runtime)
      # Every runtime test (Programs, circuits, GraphProgram) on the CUDA
      # plugin; the circuits compare their output residues with cpu's.
      export FHELIUM_BACKEND_PATH=$PWD/$bundle/lib/fhelium/plugins
      FHELIUM_RUNTIME_TEST_BACKEND=cuda timeout 400 "$bundle/tests/runtime/fhelium_runtime_tests" \
        > "$out/runtime-cuda.log" 2>&1
      echo "runtime tests on cuda rc=$?"
      grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? ran|FAILED TEST" "$out/runtime-cuda.log" | tail -12
      ;;
    bootstrap)
      # The bootstrap tests on cuda (bit-exact against cpu at N = 2^12), one
      # under memcheck, a 2^16 bootstrap under memcheck (about 35 s), whole
      # bootstraps against cpu at 2^13..2^16, and the 2^16 benchmark (JSON).
      export FHELIUM_BACKEND_PATH=$PWD/$bundle/lib/fhelium/plugins
      export FHELIUM_RUNTIME_TEST_BACKEND=cuda
      runtime_tests=$bundle/tests/runtime/fhelium_runtime_tests
      timeout 300 "$runtime_tests" --gtest_filter='Bootstrap*:ModRaise*:SpecialFft*' > "$out/bootstrap_tests.log" 2>&1
      echo "bootstrap tests rc=$?"
      grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? ran|FAILED TEST" "$out/bootstrap_tests.log" | tail -6
      timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 "$runtime_tests" \
        --gtest_filter='Bootstrap.Restores*' > "$out/bootstrap_memcheck.log" 2>&1
      echo "bootstrap memcheck rc=$?"
      tail -3 "$out/bootstrap_memcheck.log"
      timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 "$bundle/apps/fhelium-bench-bootstrap" \
        --backend cuda --log-n 16 --runs 1 --warmup 0 --no-graph > "$out/bootstrap_memcheck_16.log" 2>&1
      echo "bootstrap 2^16 memcheck rc=$?"
      tail -1 "$out/bootstrap_memcheck_16.log"
      # cuda against cpu, the same keys and input, residues compared with ==.
      for args in "13 --user-levels 2" "14 --user-levels 2" "15 --user-levels 2 --slots 4096" "16 --real-only" \
        "16 --slots 16384" "16"; do
        timeout 200 "$bundle/apps/fhelium-bench-bootstrap" --backend cuda --runs 1 --warmup 0 --no-graph --against-cpu \
          --log-n $args > "$out/bootstrap-against-cpu.json" 2>&1
        echo "bootstrap against cpu, 2^$args rc=$?"
      done
      for message in random constant; do
        timeout 400 "$bundle/apps/fhelium-bench-bootstrap" --backend cuda --log-n 16 --runs 10 --warmup 2 \
          --message $message > "$out/bootstrap-16-$message.json" 2> "$out/bootstrap-16-$message.log"
        echo "bootstrap bench 2^16 $message rc=$?"
        cat "$out/bootstrap-16-$message.json"
      done
      ;;
    pipelines)
      # The example pipelines on cuda in every execution mode, a report each.
      export FHELIUM_BACKEND_PATH=$PWD/$bundle/lib/fhelium/plugins
      for example in matvec sigmoid logreg sign; do
        for mode in eager program graph; do
          timeout 120 "$bundle/apps/fhelium" run "examples/pipelines/$example.yaml" -q --backend cuda \
            --set execution.mode=$mode -o "$out/pipeline-$example-$mode.json" > "$out/pipeline-$example-$mode.log" 2>&1
          echo "pipeline $example $mode rc=$?"
        done
      done
      ;;
    plugin)
      # The CUDA plugin through the loader: listing, the demo, the conformance suite.
      export FHELIUM_BACKEND_PATH=$PWD/$bundle/lib/fhelium/plugins
      {
        "$bundle/apps/fhelium" backends
        "$bundle/apps/fhelium" demo --backend cuda
        timeout 200 "$bundle/tests/conformance/fhelium-conformance" --backend cuda --log-n 12 13 14
        echo "conformance rc=$?"
      } > "$out/plugin.log" 2>&1
      tail -8 "$out/plugin.log"
      ;;
    accuracy)
      # docs/accuracy.md's table on cuda and on cpu with one seed: bit-exact
      # backends print the same table.
      export FHELIUM_BACKEND_PATH=$PWD/$bundle/lib/fhelium/plugins
      for backend in cpu cuda; do
        timeout 300 "$bundle/apps/fhelium-accuracy" --seed 1 --backend $backend > "$out/accuracy-$backend.md" \
          2> "$out/accuracy-$backend.log"
        echo "accuracy $backend rc=$?"
      done
      # The first line names the backend; the tables follow.
      cmp -s <(tail -n +2 "$out/accuracy-cpu.md") <(tail -n +2 "$out/accuracy-cuda.md") &&
        echo "accuracy: cpu and cuda tables identical" || echo "accuracy: cpu and cuda tables DIFFER"
      ;;
    client-server)
      # The client/server example with the server on cpu and on cuda: the same
      # output ciphertext bytes, the decrypted result within its bound.
      export FHELIUM_BACKEND_PATH=$PWD/$bundle/lib/fhelium/plugins
      timeout 300 examples/client-server/run.sh "$bundle/apps/fhelium" cpu,cuda "$(mktemp -d)" \
        > "$out/client-server.log" 2>&1
      echo "client-server rc=$?"
      grep -E "byte-identical|differs|client/server:" "$out/client-server.log"
      ;;
    bench)
      timeout 240 "$bundle/backends/cuda/bench/fhelium-bench-cuda" > "$out/bench.json" 2> "$out/bench.log"
      echo "bench rc=$?"
      cat "$out/bench.log"
      # The same operations through the plugin loader, timed by the backend's
      # timing events: the benchmark every backend shares.
      FHELIUM_BACKEND_PATH=$PWD/$bundle/lib/fhelium/plugins timeout 240 "$bundle/apps/fhelium" bench --backend cuda \
        --preset slots8192_scale40_levels7 slots32768_scale40_levels34 --runs 100 --warmup 10 \
        > "$out/fhelium-bench.json" 2>> "$out/bench.log"
      echo "fhelium bench rc=$?"
      ;;
    int32)
      # The 32-bit word family beside the 64-bit presets, in one call
      # ($OUT/int32-bench.json), then its tests under memcheck and racecheck.
      FHELIUM_BACKEND_PATH=$PWD/$bundle/lib/fhelium/plugins timeout 240 "$bundle/apps/fhelium" bench --backend cuda \
        --preset slots8192_scale40_levels7 slots8192_scale40_levels7_int32 slots32768_scale40_levels34 \
        slots32768_scale40_levels34_int32 --ops add multiply rescale ntt_forward relinearize multiply_relinearize \
        rotate rotate_hoisted_8 --runs 100 --warmup 10 > "$out/int32-bench.json" 2>> "$out/int32-bench.log"
      echo "int32 bench rc=$?"
      # Bootstrapping in the family (wide levels): residues against cpu with
      # the same keys and input, and the timings, eager and replayed.
      for log_n in 13 16; do
        FHELIUM_BACKEND_PATH=$PWD/$bundle/lib/fhelium/plugins timeout 300 "$bundle/apps/fhelium-bench-bootstrap" \
          --backend cuda --word-bits 32 --log-n "$log_n" --runs 5 --warmup 1 --against-cpu \
          > "$out/int32-bootstrap-$log_n.json" 2>> "$out/int32-bootstrap.log"
        echo "int32 bootstrap 2^$log_n against cpu rc=$?"
      done
      timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 "$tests" \
        --gtest_filter='*Ntt32*:*W32*:*levels7_int32*:*32Bit*' > "$out/int32_memcheck.log" 2>&1
      echo "int32 memcheck rc=$?"
      tail -3 "$out/int32_memcheck.log"
      timeout 200 compute-sanitizer --tool racecheck --error-exitcode 9 "$tests" \
        --gtest_filter='*N12_W32_at7:*levels7_int32_at7:*Ntt32*N65536' > "$out/int32_racecheck.log" 2>&1
      echo "int32 racecheck rc=$?"
      tail -3 "$out/int32_racecheck.log"
      ;;
    int32-ab)
      # The family's operations with the baseline's plugins and this bundle's,
      # alternating, twice each ($OUT/int32-ab-SIDE-ROUND.json).
      for round in 1 2; do
        for side in baseline this; do
          plugins=$PWD/$bundle/lib/fhelium/plugins
          [ "$side" = baseline ] && plugins=${BASELINE_PLUGINS:?int32-ab needs BASELINE_PLUGINS}
          FHELIUM_BACKEND_PATH=$plugins timeout 120 "$bundle/apps/fhelium" bench --backend cuda \
            --preset slots8192_scale40_levels7_int32 slots32768_scale40_levels34_int32 --ops rescale ntt_forward \
            relinearize multiply_relinearize rotate rotate_hoisted_8 --runs 100 --warmup 10 \
            > "$out/int32-ab-$side-$round.json" 2>> "$out/int32-ab.log"
          echo "int32-ab $side round $round rc=$?"
        done
      done
      ;;
    int32-profile)
      # Per-kernel durations of the family's key switch and rescale, one run
      # each (eager key switches run as graphs: each node profiled alone).
      for preset in slots8192_scale40_levels7_int32 slots32768_scale40_levels34_int32; do
        echo "== $preset kernel durations" >> "$out/int32-profile.csv"
        FHELIUM_BACKEND_PATH=$PWD/$bundle/lib/fhelium/plugins timeout 150 ncu --graph-profiling node --clock-control none \
          --cache-control none --metrics gpu__time_duration.sum --csv "$bundle/apps/fhelium" bench --backend cuda \
          --preset $preset --ops rescale relinearize --runs 1 --warmup 0 >> "$out/int32-profile.csv" 2>&1
        echo "int32-profile $preset rc=$?"
      done
      ;;
  esac
done
