#!/usr/bin/env bash
# Every fuzz target of Fuzz/ (a package of its own, so `make test` does not build it; a target
# is a folder of Fuzz/Sources with a seed corpus of the same name in Fuzz/Corpus; FUZZ_TARGETS
# names some of them) for FUZZ_SECONDS each, from its committed seed corpus, which a run only reads: the inputs a run
# adds, its log and what it finds go to Fuzz/.build/runs/NAME. Fails when a target crashes (a
# failed `require` included), leaks, takes more than FUZZ_TIMEOUT seconds on one input or more
# than FUZZ_RSS_MB of memory. See docs/FUZZING.md. Run by `make fuzz`, with the project's
# libcurl and libxml2 built (PRIVATE_LIBRARIES: their folder).
#
# Swift code gets libFuzzer's coverage from -sanitize-coverage and the C from
# -fsanitize=fuzzer-no-link, everything AddressSanitizer; only the fuzz targets link libFuzzer
# (Fuzz/Package.swift), as every other executable of the build needs its own main. Swift's
# backtracer is off: libFuzzer reports the crash, and the backtracer would hold the run.
# LeakSanitizer checks once, when a run ends, not after every input: a Lua state's collector and
# block pool free later than they allocate, which would have it scan the heap each time.
set -uo pipefail
swift=${SWIFT:-swift}
seconds=${FUZZ_SECONDS:-120} timeout=${FUZZ_TIMEOUT:-5} memory=${FUZZ_RSS_MB:-2048}
libraries=${PRIVATE_LIBRARIES:?the folder of the project\'s libcurl and libxml2}
triple=$(uname -m)-unknown-linux-gnu
rm -rf "Fuzz/.build/$triple/lib" && mkdir -p "Fuzz/.build/$triple/lib" && cp -r "$libraries" "Fuzz/.build/$triple/lib/"
"$swift" build -c release --package-path Fuzz --sanitize=address -Xswiftc -enable-testing \
  -Xswiftc -sanitize-coverage=edge,trace-cmp,indirect-calls,inline-8bit-counters,pc-table -Xcc -fsanitize=fuzzer-no-link || exit 1
failed=""
targets=${FUZZ_TARGETS:-$(ls Fuzz/Corpus)}
for target in $targets; do
  corpus=Fuzz/Corpus/$target
  run=Fuzz/.build/runs/$target
  rm -rf "$run" && mkdir -p "$run/corpus"
  SWIFT_BACKTRACE=enable=no "Fuzz/.build/release/fuzz-$target" "$run/corpus" "$corpus" \
    -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb="$memory" \
    -detect_leaks=0 -artifact_prefix="$run/" -print_final_stats=1 > "$run/log" 2>&1
  status=$?
  printf '%-20s %s\n' "$target" "$(grep -m1 '^stat::number_of_executed_units' "$run/log" | awk '{print $2}') inputs, $(ls "$run/corpus" | wc -l) new in the corpus"
  if [ $status != 0 ]; then
    failed="$failed $target"
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*Fatal error|artifact_prefix)' "$run/log" | head -20
  fi
done
if [ -n "$failed" ]; then echo "Fuzzing found problems in:$failed (logs and inputs in Fuzz/.build/runs/)"; exit 1; fi
