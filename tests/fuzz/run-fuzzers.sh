#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build folder for SECONDS each (two at
# a time), starting from the committed seed corpus, and prints one line per
# target (executions, executions per second, corpus size). Exits non-zero on any finding (crash,
# sanitizer report, leak, timeout, out-of-memory); its reproducer is saved under
# BUILD_DIR/fuzz-artifacts/TARGET/ and the log's tail is printed.
#
#   tests/fuzz/run-fuzzers.sh BUILD_DIR SECONDS
#
# BUILD_DIR: CC=clang CXX=clang++ cmake -S . -B BUILD_DIR -DFHELIUM_BUILD_FUZZERS=ON
#            -DFHELIUM_BUILD_APPS=OFF -DFHELIUM_BUILD_CUDA=OFF && cmake --build BUILD_DIR --target fhelium_fuzzers
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 BUILD_DIR SECONDS" >&2
  exit 2
fi
build=$1
seconds=$2
here=$(cd "$(dirname "$0")" && pwd)
artifacts="$build/fuzz-artifacts"
targets="parameters plaintext ciphertext public_key relinearization_key galois_keys secret_key sparse_encapsulation_keys
  pipeline"
# One target: its report line on stdout, exit 1 on a finding.
fuzz_target() {
  local target=$1 exe work log rc execs rate corpus
  exe="$build/tests/fuzz/fhelium_fuzz_$target"
  # New inputs go to the build folder; the committed corpus is only read.
  work="$build/fuzz-corpus/$target"
  mkdir -p "$work" "$artifacts/$target"
  log="$artifacts/$target.log"
  set +e
  "$exe" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$artifacts/$target/" "$work" "$here/corpus/$target" >"$log" 2>&1
  rc=$?
  set -e
  if [ $rc -ne 0 ]; then
    echo "run-fuzzers: $target: FINDING (exit $rc); reproducer in $artifacts/$target/, log $log:"
    tail -n 40 "$log"
    return 1
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  corpus=$(grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' "$log" | tail -n 1 | sed 's/corp: //' || true)
  echo "run-fuzzers: $target: ${execs:-?} executions in ${seconds} s (${rate:-?}/s), corpus ${corpus:-?} (units/bytes), no finding"
}

for target in $targets; do
  if [ ! -x "$build/tests/fuzz/fhelium_fuzz_$target" ]; then
    echo "run-fuzzers: $build/tests/fuzz/fhelium_fuzz_$target is missing; configure BUILD_DIR with clang and -DFHELIUM_BUILD_FUZZERS=ON, build fhelium_fuzzers" >&2
    exit 2
  fi
done

# Two targets at a time (one per core of a 2-core CI machine), each for the
# full SECONDS; reports are printed in the targets' order.
mkdir -p "$artifacts"
findings=0
set -- $targets
while [ $# -gt 0 ]; do
  pair=("$1")
  shift
  if [ $# -gt 0 ]; then
    pair+=("$1")
    shift
  fi
  pids=()
  for target in "${pair[@]}"; do
    fuzz_target "$target" >"$artifacts/$target.report" &
    pids+=($!)
  done
  for i in "${!pair[@]}"; do
    wait "${pids[i]}" || findings=$((findings + 1))
    cat "$artifacts/${pair[i]}.report"
  done
done
if [ $findings -ne 0 ]; then
  echo "run-fuzzers: $findings of $(echo $targets | wc -w) targets had a finding"
  exit 1
fi
echo "run-fuzzers: no finding in $(echo $targets | wc -w) targets"
