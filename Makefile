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
# each on a dbus-daemon of the test's own; a real openNDS gateway (opennds, with iptables for
# its iptables-legacy) in network namespaces; the package's own service, which systemd starts
# on installation, is switched off, as it would hold this machine's interfaces; a real
# systemd-networkd (systemd's) and ConnMan (with ethtool, for the veth's checksums) in network
# namespaces too; minisign, which signs the catalogs the tests verify, as an operator's would.
TEST_PACKAGES := chromium systemd prometheus dbus python3 python3-dbusmock network-manager isc-dhcp-client dnsmasq-base radvd opennds iptables \
	connman ethtool minisign
# What `make deb` needs besides the build's: lintian, which must find no error in the packages.
DEB_PACKAGES := lintian
# What `make test-package` needs: mmdebstrap makes a clean Debian 12 root, qemu boots it with
# Debian's kernel and its initramfs (linux-image-amd64), mke2fs (e2fsprogs) makes its disk.
# Without their recommends: qemu's would bring a desktop's worth of packages.
GUEST_PACKAGES := $(DEB_PACKAGES) mmdebstrap qemu-system-x86 linux-image-amd64 e2fsprogs
# What `make test-wifi` needs (docs/WIFI-TESTBED.md): Debian's kernel, with mac80211_hwsim, booted
# by qemu through virtme-ng (from PyPI, in a virtual environment: python3-venv; busybox-static
# for its initramfs), and the host's own hostapd, iw, wpa_supplicant, NetworkManager (dhclient
# for option 114), ConnMan (masked, as `deps` says), dnsmasq, dbus, curl and tcpdump (its
# captures are kept for a failure's reasons), which the guest runs from the host's files.
WIFI_PACKAGES := qemu-system-x86 linux-image-amd64 busybox-static python3-venv kmod hostapd iw wpasupplicant \
	network-manager connman isc-dhcp-client dnsmasq-base dbus curl tcpdump

.PHONY: all deps test-deps profile-deps deb-deps guest-deps wifi-deps build release install deb test-package test-wifi test demo bench peer symbol-order check-sanitizers fuzz clean private-libraries

all: build

# Installs the Debian packages that are missing (as root, or through sudo); `test-deps`
# those the tests need as well. ConnMan is masked first: on a machine booted with systemd,
# installing it would start it, and it would take over the machine's own network (the tests
# start it only in namespaces of their own).
deps: PACKAGES = $(SYSTEM_PACKAGES)
test-deps: PACKAGES = $(SYSTEM_PACKAGES) $(TEST_PACKAGES)
profile-deps: PACKAGES = $(SYSTEM_PACKAGES) valgrind python3
deb-deps: PACKAGES = $(SYSTEM_PACKAGES) $(DEB_PACKAGES)
guest-deps: PACKAGES = $(SYSTEM_PACKAGES) $(GUEST_PACKAGES)
guest-deps: APT_INSTALL_OPTIONS = --no-install-recommends
wifi-deps: PACKAGES = $(SYSTEM_PACKAGES) $(WIFI_PACKAGES)
wifi-deps: APT_INSTALL_OPTIONS = --no-install-recommends
deps test-deps profile-deps deb-deps guest-deps wifi-deps:
	@missing=""; for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing system packages:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	  case " $$missing " in *" connman "*) $$SUDO mkdir -p /etc/systemd/system && $$SUDO ln -sf /dev/null /etc/systemd/system/connman.service;; esac; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(APT_INSTALL_OPTIONS) $$missing >/dev/null; \
	  case " $$missing " in *" opennds "*) \
	    if [ -d /run/systemd/system ]; then $$SUDO systemctl disable --now opennds.service >/dev/null 2>&1 || true; fi;; \
	  esac; \
	fi

# The project's own libcurl (HTTP and HTTPS only) and libxml2 (without ICU), which the
# executables open from ../lib/hotspot-helper beside their folder, each built once from
# Debian's source package by tools/private-libraries.sh (about 50 s for both; it says why).
TRIPLE := $(shell uname -m)-unknown-linux-gnu
PRIVATE_LIBRARIES := .build/$(TRIPLE)/lib/hotspot-helper
CURL_LIBRARY := $(PRIVATE_LIBRARIES)/libcurl.so.4
XML_LIBRARY := $(PRIVATE_LIBRARIES)/libxml2.so.2

private-libraries: $(CURL_LIBRARY) $(XML_LIBRARY)

$(CURL_LIBRARY): | deps
	tools/private-libraries.sh curl $@ .build
$(XML_LIBRARY): | deps
	tools/private-libraries.sh libxml2 $@ .build

build: deps private-libraries
	$(SWIFT) build

# Two passes: the suites of the modules first, then the end-to-end ones (HotspotCLITests: the
# real executable as a user runs it; SystemTests: with real NetworkManager, ConnMan, networkd,
# radvd, systemd, Prometheus and Chromium; GatewayTests: real openNDS gateways), whose
# processes keep both cores busy and would stretch the engine's and the probes' real-time
# bounds if they ran beside them. The whole output is kept in .build/test-output.log; when a
# test fails, its issues are printed again at the end, where a CI log's tail shows them.
END_TO_END_SUITES := HotspotCLITests|SystemTests|GatewayTests
test: test-deps private-libraries
	$(SWIFT) build --build-tests
	@{ $(SWIFT) test --skip-build --skip "$(END_TO_END_SUITES)" 2>&1; echo $$? > .build/test-status; \
	  $(SWIFT) test --skip-build --filter "$(END_TO_END_SUITES)" 2>&1; echo $$? >> .build/test-status; } | tee .build/test-output.log; \
	status=$$(sort -n .build/test-status | tail -1); \
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
# 0.4% larger. Every module gets it, the packages' too. A hidden frontend flag: without it
# nothing breaks but start-up is slower; a Swift that drops it fails the release build at once
# (remove it then, and measure start-up again with `make bench`).
RELEASE_SWIFT_FLAGS := -Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors
release: deps private-libraries
	@# SwiftPM does not know the linker reads the symbol order: a newer one relinks.
	@for product in $(ORDERED_PRODUCTS); do \
	  if [ Benchmarks/SymbolOrder/$$product.txt -nt .build/release/$$product ]; then rm -f .build/release/$$product; fi; \
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

# Real Wi-Fi in a guest (Tests/Wifi, docs/WIFI-TESTBED.md): Debian's kernel booted with the host's
# files shared read-only, mac80211_hwsim radios, hostapd access points and a real
# NetworkManager, then ConnMan, with the release build's daemon following each; the scenarios
# share one boot and end with a report. 5 to 7 minutes under emulation on two busy cores once
# the release is built, up to 15 on a busier machine; .ci/run runs it after `make test`.
test-wifi: wifi-deps release
	Tests/Wifi/run .build/release

# The bench is a package of its own (Benchmarks/), so `make test` does not build it; it
# measures the executables `make release` leaves in .build/release. Its NetworkManager rows
# run the tests' testbed (NetworkManager, dnsmasq, a private bus), so it installs what the
# tests do.
bench: test-deps release peer
	$(SWIFT) build -c release --package-path Benchmarks
	Benchmarks/.build/release/hotspot-bench

# The order of the functions of hotspot-helper and hotspot-helper-web in their release builds
# (Benchmarks/SymbolOrder/PRODUCT.txt, which Package.swift hands to lld): the functions that
# callgrind sees run in the demo, a login with `connect` and a daemon's login, maintains,
# status, person's page and reload (Benchmarks/SymbolOrder/profile.py), placed first. Run it
# after changes to what a device runs; a stale list costs memory, not correctness. About a
# minute.
symbol-order: profile-deps release
	python3 Benchmarks/SymbolOrder/profile.py .build/release $(PRIVATE_LIBRARIES)
	$(MAKE) release

# The peer the bench measures the login beside, captivity-cli, in a virtual environment of
# the bench's own (tools/peer.sh says how and why).
peer:
	tools/peer.sh Benchmarks/.build/peer-venv

# The sanitizers over the suites, and the fuzz targets (docs/FUZZING.md): each script says
# what it runs and why. Neither is part of `make test`: their builds take minutes.
check-sanitizers: test-deps private-libraries
	PRIVATE_LIBRARIES=$(PRIVATE_LIBRARIES) SWIFT=$(SWIFT) END_TO_END_SUITES="$(END_TO_END_SUITES)" tools/check-sanitizers.sh
fuzz: deps private-libraries
	PRIVATE_LIBRARIES=$(PRIVATE_LIBRARIES) SWIFT=$(SWIFT) tools/fuzz.sh

clean:
	rm -rf .build .build-asan .build-tsan Fuzz/.build
