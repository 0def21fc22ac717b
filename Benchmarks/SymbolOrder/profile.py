#!/usr/bin/env python3
"""Writes the order in which lld places the functions of `hotspot-helper` and
`hotspot-helper-web` (`make symbol-order`).

The functions a device runs (the daemon, its worker, a login, the person's page) are listed
first, so they share as few pages of code as they can: the kernel maps 64 KiB around each page
of code touched, and functions spread over 11 MB of code kept most of it resident in the idle
daemon. Each list is the functions that valgrind's callgrind saw run in that executable over:

- `demo`: every bundled script logging in against its simulated venue (worker code);
- `connect` with click-through.lua against `simulate` (a one-shot supervisor);
- `run` with the bundled scripts: a login, a few maintains, `status`, the person's page
  (`web`: the page, its script, style, status and events, a helper disabled and enabled), a
  reload on SIGHUP and a stop on SIGTERM (the daemon's supervisor).

Usage: profile.py RELEASE_FOLDER PRIVATE_LIBRARIES_FOLDER; it writes
Benchmarks/SymbolOrder/EXECUTABLE.txt. Names the executable no longer has are skipped by the
linker, so a list that has grown stale costs only memory, never correctness.
"""
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = os.path.join(CHECKOUT, "VenueHelpers")
ORDERED = ("hotspot-helper", "hotspot-helper-web")


class Profiler:
    """The executables laid out as installed in a folder of their own, run under callgrind."""

    def __init__(self, release, libraries, work):
        self.work = work
        self.profiles = os.path.join(work, "profiles")
        os.makedirs(self.profiles)
        # valgrind 3.19 cannot read the toolchain's DWARF 5: the executables are profiled
        # without their debug information (the symbol table, which names the functions,
        # stays), beside each other and the project's libcurl and libxml2.
        os.makedirs(os.path.join(work, "bin"))
        for name in ("hotspot-helper", "hotspot-helper-devtools", "hotspot-helper-web"):
            subprocess.run(["objcopy", "--strip-debug", os.path.join(release, name), os.path.join(work, "bin", name)], check=True)
        shutil.copytree(libraries, os.path.join(work, "lib/hotspot-helper"))
        self.executable = os.path.join(work, "bin/hotspot-helper")

    def start(self, arguments, **options):
        # A dump every 500,000 basic blocks: a worker ends with SIGKILL, which leaves no
        # final dump. From the checkout, where `demo` finds the bundled scripts.
        callgrind = ["valgrind", "--tool=callgrind", "--trace-children=yes", "--demangle=no", "--dump-instr=no",
                     "--compress-strings=no", "--compress-pos=no", "--dump-every-bb=500000",
                     f"--callgrind-out-file={self.profiles}/%p.out", f"--log-file={self.work}/valgrind.%p.log"]
        return subprocess.Popen(callgrind + [self.executable] + arguments, cwd=CHECKOUT, **options)

    def run(self, what, arguments):
        step(what)
        if self.start(arguments, stdout=subprocess.DEVNULL).wait() != 0:
            sys.exit(f"symbol-order: {what} failed under valgrind (its log: {self.work}/valgrind.*.log)")

    def functions(self, executable):
        """The functions of `executable` that callgrind saw: those it ran ("fn=") and those
        they called ("cfn="), in profiles of that object ("ob="). Sorted, so that a list made
        again differs only by the functions that came or went: their order among themselves
        matters little, as they are placed together."""
        names = set()
        for path in sorted(glob.glob(os.path.join(self.profiles, "*.out*"))):
            current_object = called_object = None
            with open(path, errors="replace") as profile:
                for line in profile:
                    key, _, value = line.rstrip("\n").partition("=")
                    if key == "ob":
                        current_object = value
                    elif key == "cob":
                        called_object = value
                    elif key in ("fn", "cfn"):
                        owner = called_object if key == "cfn" and called_object else current_object
                        if key == "cfn":
                            called_object = None
                        # What callgrind could not find in the symbol table it names by address.
                        if owner and owner.endswith("/" + executable) and not value.startswith(("0x", "(")):
                            names.add(value)
        return sorted(names)


def step(what):
    print(f"symbol-order: {what}", file=sys.stderr, flush=True)


def start_simulator(release):
    """Every scenario on free ports, and a DNS responder sending every name to 127.0.0.1;
    the simulator and its ports by name."""
    simulator = subprocess.Popen([os.path.join(release, "hotspot-helper-devtools"), "simulate", "--port", "0", "--dns-port", "0"],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    ports = {}
    while "dns" not in ports or "click-through" not in ports:
        line = simulator.stdout.readline()
        if not line:
            sys.exit("symbol-order: the simulator did not start")
        match = re.match(r"(\S+)\s+(?:http|udp)://127\.0\.0\.1:(\d+)", line)
        if match:
            ports[match.group(1)] = match.group(2)
    return simulator, ports


def profile_daemon(profiler, arguments, state):
    """`run` to its third maintain, `status`, the person's page and a reload on SIGHUP after
    the first, then SIGTERM."""
    step("run, status, web, SIGHUP, SIGTERM")
    daemon = profiler.start(["run", "--json", "--state-dir", state, "--maintain-interval", "2"] + arguments,
                            stdout=subprocess.PIPE, text=True)
    maintains = 0
    for line in daemon.stdout:
        if '"command":"maintain"' in line:
            maintains += 1
            if maintains == 1:
                subprocess.run([profiler.executable, "status", "--state-dir", state], stdout=subprocess.DEVNULL)
                profile_page(profiler, state)
                daemon.send_signal(signal.SIGHUP)
            if maintains == 3:
                break
    daemon.send_signal(signal.SIGTERM)
    if daemon.wait(timeout=120) != 0:
        sys.exit("symbol-order: run did not stop cleanly under valgrind")


def profile_page(profiler, state):
    """`web` as a browser uses it: the page with its token, its script, style and status with
    the session cookie, and its event stream while a helper is disabled and enabled."""
    web = profiler.start(["web", "--state-dir", state, "--no-open"], stdout=subprocess.PIPE, text=True)
    try:
        address = next((line for line in web.stdout if "?token=" in line), None)
        match = address and re.search(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)", address)
        if not match:
            sys.exit("symbol-order: hotspot-helper web printed no address")
        base, token = match.groups()
        def fetch(path, seconds=60):
            return ["curl", "--silent", "--output", "/dev/null", "--max-time", str(seconds), "--cookie", f"hh_session={token}", base + path]
        subprocess.run(fetch(f"/?token={token}"))
        for path in ("/app.js", "/style.css", "/api/status"):
            subprocess.run(fetch(path))
        # The stream never ends by itself: it is read for as long as the changes take.
        events = subprocess.Popen(fetch("/api/events", seconds=8))
        for change in ("disable", "enable"):
            subprocess.run([profiler.executable, change, "--helper", "click-through", "--state-dir", state], stdout=subprocess.DEVNULL)
        events.wait()
    finally:
        web.send_signal(signal.SIGTERM)
        web.wait(timeout=60)


def main(release, libraries):
    work = tempfile.mkdtemp(prefix="symbol-order-")
    try:
        profiler = Profiler(release, libraries, work)
        profiler.run("demo", ["demo"])
        simulator, ports = start_simulator(release)
        try:
            secrets = os.path.join(work, "secrets")
            with open(secrets, "w") as file:
                file.write("[campus]\nusername = guest\npassword = aroma-2026\nwifi_password = profile-wpa\n")
            os.chmod(secrets, 0o600)
            network = ["--resolver", "127.0.0.1:" + ports["dns"], "--deadline", "60",
                       "--probe-url", f"http://connectivitycheck.demo.example:{ports['click-through']}/generate_204"]
            profiler.run("connect", ["connect", "--json", "--scripts", os.path.join(SCRIPTS, "click-through.lua"),
                                     "--ssid", "Terms-Guest"] + network)
            subprocess.run(["curl", "--silent", "--output", "/dev/null", f"http://127.0.0.1:{ports['click-through']}/logout"])
            profile_daemon(profiler, ["--scripts", SCRIPTS, "--secrets", secrets, "--source", "interface:lo:Terms-Guest"] + network,
                           os.path.join(work, "state"))
        finally:
            simulator.terminate()
            simulator.wait()
        lists = {executable: profiler.functions(executable) for executable in ORDERED}
    finally:
        shutil.rmtree(work)
    for executable, names in lists.items():
        output = os.path.join(CHECKOUT, "Benchmarks", "SymbolOrder", executable + ".txt")
        with open(output, "w") as file:
            file.write("\n".join(names) + "\n")
        step(f"{len(names)} functions written to {os.path.relpath(output, CHECKOUT)}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
