#!/usr/bin/env bash
# Every suite under AddressSanitizer (and UndefinedBehaviorSanitizer for the C), then the
# engine's, the core's, the runtime's and the script libraries' under ThreadSanitizer; each in a
# build folder of its own (the workers the tests start are built with the same sanitizers).
# Not part of `make test`: each build takes minutes on two cores. Run from the checkout by
# `make check-sanitizers`, with the project's libcurl and libxml2 built (PRIVATE_LIBRARIES:
# their folder), which are put beside each build's executables so the tests run with them as
# a device does.
#
# Swift takes AddressSanitizer only; UndefinedBehaviorSanitizer covers the C (the sandbox,
# libcurl's setters). Leaks are not reported: XCTest's own runner leaves allocations at exit.
# SIGSEGV is left to the program: a test kills a worker with it to see it reported as such.
# ThreadSanitizer sees the project's locks because they are pthread mutexes (PlainLock): the
# standard library's Mutex hands a contended lock over inside the kernel, unseen, so what it
# guards would show as races. Tests/thread-sanitizer.supp holds the one false report left, in
# the standard library's continuations, and says why. The reports go to files, so that those
# of the worker processes fail the run too: the engine stops a worker with SIGKILL, so no exit
# status tells of them.
# The tests that bound a wait or a parse by real time skip themselves under AddressSanitizer
# (their trait `.timedBeyondAddressSanitizer`): its slowdown exceeds them. ThreadSanitizer's
# slowdown is greater still, so its suites run one test at a time (about 45 s), and then every
# test keeps within its time.
set -euo pipefail
swift=${SWIFT:-swift}
libraries=${PRIVATE_LIBRARIES:?the folder of the project\'s libcurl and libxml2}
triple=$(uname -m)-unknown-linux-gnu
for scratch in .build-asan .build-tsan; do
  rm -rf "$scratch/$triple/lib" && mkdir -p "$scratch/$triple/lib" && cp -r "$libraries" "$scratch/$triple/lib/"
done

address=(--sanitize=address -Xcc -fsanitize=undefined -Xcc -fno-sanitize-recover=undefined
  -Xswiftc -Xclang-linker -Xswiftc -fsanitize=undefined)
"$swift" build --build-tests "${address[@]}" --scratch-path .build-asan
# The module suites, then the end-to-end ones, as `make test` runs them (END_TO_END_SUITES:
# the Makefile's list): the latter's processes, slowed down as much again, would stretch the
# former's real-time bounds.
end_to_end=${END_TO_END_SUITES:?the end-to-end suites, as the Makefile names them}
export ASAN_OPTIONS=detect_leaks=0:handle_segv=0
status=0
"$swift" test --skip-build "${address[@]}" --scratch-path .build-asan --skip "$end_to_end" || status=$?
"$swift" test --skip-build "${address[@]}" --scratch-path .build-asan --filter "$end_to_end" || status=$?
unset ASAN_OPTIONS
if [ $status != 0 ]; then echo "Under AddressSanitizer, tests failed (exit $status)"; exit $status; fi

reports=.build-tsan/reports
"$swift" build --build-tests --sanitize=thread --scratch-path .build-tsan
rm -rf "$reports" && mkdir -p "$reports"
TSAN_OPTIONS="handle_segv=0:suppressions=$PWD/Tests/thread-sanitizer.supp:log_path=$PWD/$reports/report" \
  "$swift" test --skip-build --sanitize=thread --scratch-path .build-tsan \
  --no-parallel --filter "LuaSandboxTests|HotspotCoreTests|HotspotRuntimeTests|ScriptLibrariesTests" || status=$?
if [ -n "$(ls "$reports")" ]; then cat "$reports"/*; echo "ThreadSanitizer reported the above"; exit 1; fi
exit $status
