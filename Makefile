# A fresh Debian machine needs only `make demo` and `make test`: both install the system
# packages the build needs first.
SWIFT ?= swift
# libsystemd-dev gives sd-bus's header (NetworkManager's D-Bus API, the desktop's notifications);
# the library itself is opened when a daemon first connects to a bus.
# dpkg-dev, gcc, make and zlib1g-dev build the project's own libcurl and libxml2 (below) from
# Debian's source.
SYSTEM_PACKAGES := liblua5.4-dev libcurl4-openssl-dev libxml2-dev libssl-dev libsystemd-dev lua5.4 pkg-config iproute2 curl openssl \
	dpkg-dev gcc make zlib1g-dev
# What only the tests use: a real headless browser for the person's page; systemd-analyze and
# systemd-creds for the unit's and the credentials' tests; prometheus (about 19 MB to
# download), whose server scrapes the daemon and whose promtool checks the exposition and the
# alerting rules; a real NetworkManager (with dhclient and dnsmasq) in network namespaces,
# python3-dbusmock's NetworkManager for Wi-Fi and its notification service for the desktop,
# each on a dbus-daemon of the test's own.
TEST_PACKAGES := chromium systemd prometheus dbus python3-dbusmock network-manager isc-dhcp-client dnsmasq-base
# What `make deb` needs besides the build's: lintian, which must find no error in the packages.
DEB_PACKAGES := lintian
# What `make test-package` needs: mmdebstrap makes a clean Debian 12 root, qemu boots it with
# Debian's kernel and its initramfs (linux-image-amd64), mke2fs (e2fsprogs) makes its disk.
# Without their recommends: qemu's would bring a desktop's worth of packages.
GUEST_PACKAGES := $(DEB_PACKAGES) mmdebstrap qemu-system-x86 linux-image-amd64 e2fsprogs

.PHONY: all deps test-deps profile-deps deb-deps guest-deps build release install deb test-package test demo bench peer symbol-order check-sanitizers fuzz clean private-libraries

all: build

# Installs the Debian packages that are missing (as root, or through sudo); `test-deps`
# those the tests need as well.
deps: PACKAGES = $(SYSTEM_PACKAGES)
test-deps: PACKAGES = $(SYSTEM_PACKAGES) $(TEST_PACKAGES)
profile-deps: PACKAGES = $(SYSTEM_PACKAGES) valgrind python3
deb-deps: PACKAGES = $(SYSTEM_PACKAGES) $(DEB_PACKAGES)
guest-deps: PACKAGES = $(SYSTEM_PACKAGES) $(GUEST_PACKAGES)
guest-deps: APT_INSTALL_OPTIONS = --no-install-recommends
deps test-deps profile-deps deb-deps guest-deps:
	@missing=""; for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing system packages:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(APT_INSTALL_OPTIONS) $$missing >/dev/null; \
	fi

# The project's own libcurl (HTTP and HTTPS only) and libxml2 (without ICU), which the
# executables open from ../lib/hotspot-helper beside their folder (docs/ARCHITECTURE.md, "The
# project's libcurl and libxml2"): Debian's libcurl brings 30 libraries (Kerberos, LDAP, SSH,
# RTMP with GnuTLS) that only cost each process 2.5 ms of CPU and 4 MiB to load, and Debian's
# libxml2 brings ICU, 0.8 ms more at a script's first page. Each is built from Debian's source
# package, its security patches included, with OpenSSL and zlib from Debian. The source lists
# are read into the build folder, so the machine's apt configuration is left as it is; apt
# checks the files it fetches against the signed index, so dpkg-source needs no keyring.
# About 50 s, once.
TRIPLE := $(shell uname -m)-unknown-linux-gnu
PRIVATE_LIBRARIES := .build/$(TRIPLE)/lib/hotspot-helper
CURL_LIBRARY := $(PRIVATE_LIBRARIES)/libcurl.so.4
XML_LIBRARY := $(PRIVATE_LIBRARIES)/libxml2.so.2
CURL_FEATURES := --with-openssl --with-zlib --with-ca-bundle=/etc/ssl/certs/ca-certificates.crt --with-ca-path=/etc/ssl/certs \
	--without-brotli --without-zstd --without-libpsl --without-libidn2 --without-nghttp2 --without-librtmp --without-libssh2 \
	--without-gssapi --without-libgsasl --disable-ldap --disable-ldaps --disable-rtsp --disable-dict --disable-telnet --disable-tftp \
	--disable-pop3 --disable-imap --disable-smb --disable-smtp --disable-gopher --disable-mqtt --disable-ftp --disable-file \
	--disable-manual --disable-ntlm --disable-ntlm-wb --disable-netrc --disable-libcurl-option --disable-alt-svc --disable-doh \
	--disable-mime --disable-unix-sockets
# The HTML and XML parsers with iconv (glibc's) for encodings; no network access of its own
# (HTTP, FTP), catalogs, modules or legacy interfaces.
XML_FEATURES := --without-icu --without-lzma --without-zlib --without-python --without-readline --without-http --without-ftp \
	--without-debug --without-docbook --without-legacy --without-modules --without-catalog
DEBIAN_SOURCES := .build/debian-sources
APT_SOURCE_OPTIONS := -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts=$(CURDIR)/$(DEBIAN_SOURCES)/sources \
	-o Dir::State::Lists=$(CURDIR)/$(DEBIAN_SOURCES)/lists -o Dir::Cache=$(CURDIR)/$(DEBIAN_SOURCES)/cache \
	-o Debug::NoLocking=true -o APT::Sandbox::User=$(shell id -un)

# Leaves Debian's source package $(1), patched, in $(DEBIAN_SOURCES)/$(1).
define unpack-debian-source
	@set -e; rm -rf $(DEBIAN_SOURCES); mkdir -p $(DEBIAN_SOURCES)/sources $(DEBIAN_SOURCES)/lists/partial $(DEBIAN_SOURCES)/cache; \
	for list in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do \
	  [ -f "$$list" ] && sed -n 's/^deb /deb-src /p' "$$list" >> $(DEBIAN_SOURCES)/sources/source.list; \
	done; \
	for list in /etc/apt/sources.list.d/*.sources; do \
	  [ -f "$$list" ] && sed 's/^Types:.*/Types: deb-src/' "$$list" > $(DEBIAN_SOURCES)/sources/$$(basename "$$list"); \
	done; \
	echo "Building $(1) from Debian's source package (once; see the Makefile)"; \
	cd $(DEBIAN_SOURCES); \
	{ apt-get $(APT_SOURCE_OPTIONS) update -qq && apt-get $(APT_SOURCE_OPTIONS) source --download-only -qq $(1) >/dev/null; } || { \
	  echo "Cannot fetch Debian's source of $(1) (apt-get source $(1), with the machine's apt sources read as deb-src):"; \
	  echo "check that apt reaches its mirrors, then run make again (docs/ARCHITECTURE.md, \"The project's libcurl and libxml2\")."; \
	  exit 1; }; \
	dpkg-source --no-check -x $(1)_*.dsc $(1) >/dev/null
endef

private-libraries: $(CURL_LIBRARY) $(XML_LIBRARY)

# Puts the libraries beside another build folder's executables ($(1): the scratch path), so
# the sanitizers' and the fuzzers' builds run with them as the tests and a device do.
libraries-beside = rm -rf $(1)/$(TRIPLE)/lib && mkdir -p $(1)/$(TRIPLE)/lib && cp -r $(PRIVATE_LIBRARIES) $(1)/$(TRIPLE)/lib/

$(CURL_LIBRARY): | deps
	$(call unpack-debian-source,curl)
	cd $(DEBIAN_SOURCES)/curl && ./configure --quiet --disable-dependency-tracking --enable-shared --disable-static \
	  $(CURL_FEATURES) >/dev/null && { $(MAKE) --quiet -C lib >build.log 2>&1 || { cat build.log; exit 1; }; }
	mkdir -p $(PRIVATE_LIBRARIES) && objcopy --strip-debug $(DEBIAN_SOURCES)/curl/lib/.libs/libcurl.so.4 $@
	rm -rf $(DEBIAN_SOURCES)

# Debian's patches change libxml2's Makefile.am: the files made from it are made newer, so
# make does not remake them with automake, which the build does not need. The compilers'
# output is shown only when a build fails (libxml2's has warnings).
$(XML_LIBRARY): | deps
	$(call unpack-debian-source,libxml2)
	cd $(DEBIAN_SOURCES)/libxml2 && touch aclocal.m4 && sleep 1 && touch configure config.h.in $$(find . -name Makefile.in) && \
	  ./configure --quiet --disable-dependency-tracking --enable-shared --disable-static $(XML_FEATURES) >/dev/null && \
	  { $(MAKE) --quiet libxml2.la >build.log 2>&1 || { cat build.log; exit 1; }; }
	mkdir -p $(PRIVATE_LIBRARIES) && objcopy --strip-debug $(DEBIAN_SOURCES)/libxml2/.libs/libxml2.so.2 $@
	rm -rf $(DEBIAN_SOURCES)

build: deps private-libraries
	$(SWIFT) build

# The whole output is kept in .build/test-output.log; when a test fails, its issues are
# printed again at the end, where a CI log's tail shows them.
test: test-deps private-libraries
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
ORDERED_PRODUCTS := hotspot-helper hotspot-helper-web
# Generic types' metadata reached through accessor functions, not by demangling their names at
# first use: about a fifth of the CPU of a start (docs/PERFORMANCE.md, "Start-up"), for code
# 0.4% larger. Every module gets it, the packages' too.
RELEASE_SWIFT_FLAGS := -Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors
release: deps private-libraries
	@# SwiftPM does not know the linker reads the symbol order: a newer one relinks.
	@for product in $(ORDERED_PRODUCTS); do \
	  if [ Sources/$$product/symbol-order.txt -nt .build/release/$$product ]; then rm -f .build/release/$$product; fi; \
	done
	@# GCC's libstdc++.a, for the device executables to link in (Package.swift, releasedForDevices).
	@mkdir -p .build/static-libstdc++ && ln -sf "$$(gcc -print-file-name=libstdc++.a)" .build/static-libstdc++/libstdc++.a
	for product in $(RELEASE_PRODUCTS); do $(SWIFT) build -c release --static-swift-stdlib $(RELEASE_SWIFT_FLAGS) --product $$product || exit 1; done

# What a device installs (docs/GETTING-STARTED.md, "Deploy it"): the executable, which is
# also its own worker, and the project's libcurl and libxml2, which it opens from
# ../lib/hotspot-helper.
# The person's page (`hotspot-helper web`) is hotspot-helper-web beside it, for devices with a
# person at them.
PREFIX ?= /usr/local
install: release
	install -D -m 0755 .build/release/hotspot-helper $(DESTDIR)$(PREFIX)/bin/hotspot-helper
	install -D -m 0755 .build/release/hotspot-helper-web $(DESTDIR)$(PREFIX)/bin/hotspot-helper-web
	install -D -m 0644 $(CURL_LIBRARY) $(DESTDIR)$(PREFIX)/lib/hotspot-helper/libcurl.so.4
	install -D -m 0644 $(XML_LIBRARY) $(DESTDIR)$(PREFIX)/lib/hotspot-helper/libxml2.so.2

# The Debian packages, in .build/deb (docs/GETTING-STARTED.md, "Install the package"):
# hotspot-helper (the daemon, the helpers, the LuaLS definitions, the unit, enabled, and its
# configuration), hotspot-helper-web (the person's page) and hotspot-helper-devtools (demo, dev,
# simulate), from the release build, depending on Debian's libcurl and libxml2 rather than the
# project's. Built with dpkg-shlibdeps, dpkg-gencontrol and dpkg-deb; lintian must find no error.
DEB_FOLDER := .build/deb
deb: deb-deps release
	packaging/build-deb .build/release $(DEB_FOLDER)

# The packages on a clean Debian 12 root booted with systemd as PID 1 in a qemu guest
# (tools/guest): install, the service as systemd runs it, a login through the simulator with a
# credential, upgrade, remove, purge (Tests/Package/checks). The root is kept in .build/guest.
# About 9 minutes on two busy cores once the root and the packages exist (make deb, its xz and
# lintian over the executables, 2.5 minutes more).
test-package: guest-deps deb
	Tests/Package/run $(DEB_FOLDER) .build/release

# The bench is a package of its own (Benchmarks/), so `make test` does not build it; it
# measures the executables `make release` leaves in .build/release. Its NetworkManager rows
# run the tests' testbed (NetworkManager, dnsmasq, a private bus), so it installs what the
# tests do.
bench: test-deps release peer
	$(SWIFT) build -c release --package-path Benchmarks
	Benchmarks/.build/release/hotspot-bench

# The order of the functions of hotspot-helper and hotspot-helper-web in their release builds
# (Sources/PRODUCT/symbol-order.txt, which Package.swift hands to lld): the functions that
# callgrind sees run in the demo, a login with `connect` and a daemon's login, maintains,
# status, person's page and reload (Benchmarks/SymbolOrder/profile.py), placed first. Run it
# after changes to what a device runs; a stale list costs memory, not correctness. About a
# minute.
symbol-order: profile-deps release
	python3 Benchmarks/SymbolOrder/profile.py .build/release $(PRIVATE_LIBRARIES)
	$(MAKE) release

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

# Every suite under AddressSanitizer (and UndefinedBehaviorSanitizer for the C), then the
# engine's, the core's and the runtime's under ThreadSanitizer; each in a build folder of its
# own (the workers the tests start are built with the same sanitizers). Not part of
# `make test`: each build takes minutes on two cores.
# Swift takes AddressSanitizer only; UndefinedBehaviorSanitizer covers the C (the sandbox,
# libcurl's setters). Leaks are not reported: XCTest's own runner leaves allocations at exit.
# SIGSEGV is left to the program: a test kills a worker with it to see it reported as such.
# ThreadSanitizer sees the project's locks because they are pthread mutexes (PlainLock): the
# standard library's Mutex hands a contended lock over inside the kernel, unseen, so what it
# guards would show as races. Tests/thread-sanitizer.supp holds the one false report left, in
# the standard library's continuations, and says why. The reports go to files, so that those
# of the worker processes fail the run too: the engine stops a worker with SIGKILL, so no
# exit status tells of them.
# Three tests that bound a wait or a parse by real time are skipped under AddressSanitizer:
# its slowdown exceeds them (a 1 MiB attribute took 4.5 s of a 3 s bound). ThreadSanitizer's slowdown is greater still, so its suites run one test at a
# time (about 45 s), and then every test keeps within its time.
SANITIZE_ADDRESS := --sanitize=address -Xcc -fsanitize=undefined -Xcc -fno-sanitize-recover=undefined \
	-Xswiftc -Xclang-linker -Xswiftc -fsanitize=undefined
THREAD_REPORTS := .build-tsan/reports
THREAD_SANITIZER_OPTIONS := handle_segv=0:suppressions=$(CURDIR)/Tests/thread-sanitizer.supp:log_path=$(CURDIR)/$(THREAD_REPORTS)/report
check-sanitizers: test-deps private-libraries
	$(call libraries-beside,.build-asan)
	$(call libraries-beside,.build-tsan)
	$(SWIFT) build --build-tests $(SANITIZE_ADDRESS) --scratch-path .build-asan
	ASAN_OPTIONS=detect_leaks=0:handle_segv=0 $(SWIFT) test --skip-build $(SANITIZE_ADDRESS) --scratch-path .build-asan \
	  --skip "aScriptWaitingInItsHostLetsTheOthersRun|aLoopingScriptLetsTheOthersRunAfterASlice|hugeAttributeValuesComeThrough"
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build-tsan
	rm -rf $(THREAD_REPORTS) && mkdir -p $(THREAD_REPORTS)
	TSAN_OPTIONS=$(THREAD_SANITIZER_OPTIONS) $(SWIFT) test --skip-build --sanitize=thread --scratch-path .build-tsan \
	  --no-parallel --filter "LuaSandboxTests|HotspotCoreTests|HotspotRuntimeTests"; \
	status=$$?; \
	if [ -n "$$(ls $(THREAD_REPORTS))" ]; then cat $(THREAD_REPORTS)/*; echo "ThreadSanitizer reported the above"; exit 1; fi; \
	exit $$status

# Every fuzz target of Fuzz/ (a package of its own, so `make test` does not build it) for
# FUZZ_SECONDS each, from its committed seed corpus, Fuzz/Corpus/NAME, which a run only reads:
# the inputs a run adds, its log and what it finds go to Fuzz/.build/runs/NAME. Fails when a
# target crashes (a failed `require` included), leaks, takes more than FUZZ_TIMEOUT seconds
# on one input or more than FUZZ_RSS_MB of memory. See docs/FUZZING.md.
# Swift code gets libFuzzer's coverage from -sanitize-coverage and the C from
# -fsanitize=fuzzer-no-link, everything AddressSanitizer; only the fuzz targets link libFuzzer
# (Fuzz/Package.swift), as every other executable of the build needs its own main. Swift's
# backtracer is off: libFuzzer reports the crash, and the backtracer would hold the run.
# LeakSanitizer checks once, when a run ends, not after every input: a Lua state's collector
# and block pool free later than they allocate, which would have it scan the heap each time.
FUZZ_SECONDS ?= 120
FUZZ_TIMEOUT ?= 5
FUZZ_RSS_MB ?= 2048
FUZZ_TARGETS := wispr html-forms html-text html-meta-refresh json-decode captive-portal-api \
	lua-values worker-frames control-request secrets-file state-files
FUZZ_FLAGS := -c release --package-path Fuzz --sanitize=address -Xswiftc -enable-testing \
	-Xswiftc -sanitize-coverage=edge,trace-cmp,indirect-calls,inline-8bit-counters,pc-table -Xcc -fsanitize=fuzzer-no-link
fuzz: deps private-libraries
	$(call libraries-beside,Fuzz/.build)
	$(SWIFT) build $(FUZZ_FLAGS)
	@failed=""; for target in $(FUZZ_TARGETS); do \
	  run=Fuzz/.build/runs/$$target; rm -rf $$run; mkdir -p $$run/corpus; \
	  SWIFT_BACKTRACE=enable=no Fuzz/.build/release/fuzz-$$target $$run/corpus Fuzz/Corpus/$$target \
	    -max_total_time=$(FUZZ_SECONDS) -timeout=$(FUZZ_TIMEOUT) -rss_limit_mb=$(FUZZ_RSS_MB) \
	    -detect_leaks=0 -artifact_prefix=$$run/ -print_final_stats=1 > $$run/log 2>&1; \
	  status=$$?; \
	  printf '%-20s %s\n' "$$target" "$$(grep -m1 '^stat::number_of_executed_units' $$run/log | awk '{print $$2}') inputs, $$(ls $$run/corpus | wc -l) new in the corpus"; \
	  if [ $$status != 0 ]; then \
	    failed="$$failed $$target"; \
	    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*Fatal error|artifact_prefix)' $$run/log | head -20; \
	  fi; \
	done; \
	if [ -n "$$failed" ]; then echo "Fuzzing found problems in:$$failed (logs and inputs in Fuzz/.build/runs/)"; exit 1; fi

clean:
	rm -rf .build .build-asan .build-tsan Fuzz/.build
