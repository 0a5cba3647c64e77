#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build folder for SECONDS each, starting
# from the committed seed corpus, and prints one line per target (executions,
# executions per second, corpus size). Exits non-zero on any finding (crash,
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
findings=0
for target in $targets; do
  exe="$build/tests/fuzz/fhelium_fuzz_$target"
  if [ ! -x "$exe" ]; then
    echo "run-fuzzers: $exe is missing; configure BUILD_DIR with clang and -DFHELIUM_BUILD_FUZZERS=ON, build fhelium_fuzzers" >&2
    exit 2
  fi
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
    findings=$((findings + 1))
    echo "run-fuzzers: $target: FINDING (exit $rc); reproducer in $artifacts/$target/, log $log:"
    tail -n 40 "$log"
    continue
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  corpus=$(grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' "$log" | tail -n 1 | sed 's/corp: //')
  echo "run-fuzzers: $target: ${execs:-?} executions in ${seconds} s (${rate:-?}/s), corpus ${corpus:-?} (units/bytes), no finding"
done
if [ $findings -ne 0 ]; then
  echo "run-fuzzers: $findings of $(echo $targets | wc -w) targets had a finding"
  exit 1
fi
echo "run-fuzzers: no finding in $(echo $targets | wc -w) targets"
