# A fresh Debian machine needs only `make demo` and `make test`: both install the system
# packages the build needs first.
SWIFT ?= swift
SYSTEM_PACKAGES := liblua5.4-dev libcurl4-openssl-dev libxml2-dev libssl-dev lua5.4 pkg-config iproute2 curl openssl
# What only the tests use: a real headless browser for the person's page.
TEST_PACKAGES := chromium

.PHONY: all deps test-deps build release test demo bench peer check-sanitizers clean

all: build

# Installs the Debian packages that are missing (as root, or through sudo); `test-deps`
# those the tests need as well.
deps: PACKAGES = $(SYSTEM_PACKAGES)
test-deps: PACKAGES = $(SYSTEM_PACKAGES) $(TEST_PACKAGES)
deps test-deps:
	@missing=""; for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing system packages:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

build: deps
	$(SWIFT) build

# The whole output is kept in .build/test-output.log; when a test fails, its issues are
# printed again at the end, where a CI log's tail shows them.
test: test-deps
	$(SWIFT) build --build-tests
	@{ $(SWIFT) test --skip-build 2>&1; echo $$? > .build/test-status; } | tee .build/test-output.log; \
	status=$$(cat .build/test-status); \
	if [ "$$status" != 0 ]; then \
	  echo; echo "Failed (exit $$status); the issues, from .build/test-output.log:"; \
	  awk '/^✘|^error: /{print; detail=1; next} detail && /^ *↳/{print; next} {detail=0}' .build/test-output.log | head -100; \
	fi; \
	exit $$status

demo: build
	$(SWIFT) run --skip-build hotspot-helper demo

# What a device installs: .build/release/hotspot-helper, with the Swift libraries linked
# in, so the daemon and its worker processes (the same executable) share its pages.
# Products only: the shared test support (Swift Testing) has no release build.
RELEASE_PRODUCTS := hotspot-helper hotspot-helper-devtools hotspot-helper-web lua-sandbox-worker
release: deps
	for product in $(RELEASE_PRODUCTS); do $(SWIFT) build -c release --static-swift-stdlib --product $$product || exit 1; done

# The bench is a package of its own (Benchmarks/), so `make test` does not build it; it
# measures the executables `make release` leaves in .build/release.
bench: release peer
	$(SWIFT) build -c release --package-path Benchmarks
	Benchmarks/.build/release/hotspot-bench

# The peer the bench measures the login beside: captivity-cli from PyPI, in a virtual
# environment of the bench's own (not a dependency of anything here). Its release is a source
# package that also builds a Rust daemon, whose crates come from crates.io, which these
# machines do not reach; the login and the simulator are Python only, so pip fetches the
# release and installs what they import, and the bench runs them from the release's source.
# Without it the bench's peer row says so, and the others run.
PEER_ENV := Benchmarks/.build/peer-venv
PEER_RELEASE := captivity-cli==3.2.1
peer:
	@test -f $(PEER_ENV)/src/captivity/cli.py || { \
	  rm -rf $(PEER_ENV) && python3 -m venv $(PEER_ENV) && \
	  $(PEER_ENV)/bin/pip install --quiet requests keyring && \
	  $(PEER_ENV)/bin/pip download --quiet --no-deps --no-binary :all: --dest $(PEER_ENV)/release $(PEER_RELEASE) && \
	  mkdir -p $(PEER_ENV)/src && tar -xzf $(PEER_ENV)/release/*.tar.gz -C $(PEER_ENV)/src --strip-components=2 --wildcards '*/src/captivity'; \
	} || echo "captivity-cli could not be set up in $(PEER_ENV): the bench's peer row will say so"

# Every suite under AddressSanitizer (and UndefinedBehaviorSanitizer for the C), in a build
# folder of its own (the workers the tests start are built with the same sanitizers). Not part
# of `make test`: the build takes minutes on two cores. ThreadSanitizer is not run: it does
# not see the futex under Synchronization's Mutex, so it reports the accesses that Mutex
# guards as races.
# Swift takes AddressSanitizer only; UndefinedBehaviorSanitizer covers the C (the sandbox,
# libcurl's setters). Leaks are not reported: XCTest's own runner leaves allocations at exit.
# SIGSEGV is left to the program: a test kills a worker with it to see it reported as such.
# Two tests that bound a wait by real time are skipped: the sanitizer's slowdown exceeds them.
SANITIZE_ADDRESS := --sanitize=address -Xcc -fsanitize=undefined -Xcc -fno-sanitize-recover=undefined \
	-Xswiftc -Xclang-linker -Xswiftc -fsanitize=undefined
check-sanitizers: test-deps
	$(SWIFT) build --build-tests $(SANITIZE_ADDRESS) --scratch-path .build-asan
	ASAN_OPTIONS=detect_leaks=0:handle_segv=0 $(SWIFT) test --skip-build $(SANITIZE_ADDRESS) --scratch-path .build-asan \
	  --skip "aScriptWaitingInItsHostLetsTheOthersRun|aLoopingScriptLetsTheOthersRunAfterASlice"

clean:
	rm -rf .build .build-asan
