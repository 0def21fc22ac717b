"""captivity-cli's own `login`, as the bench runs it beside `hotspot-helper connect`.

Usage: python captivity_login.py SIMULATOR_URL NETWORK

Runs captivity's command line (`captivity login --network NETWORK --portal SIMULATOR_URL/login`)
with one change: its connectivity probes go to the simulator's /generate_204 instead of
Google's, Firefox's and Apple's, which this machine cannot reach. The credentials are stored
beforehand with `captivity creds store`.
"""
import sys

from captivity.core import probe

simulator, network = sys.argv[1], sys.argv[2]
probe.PROBE_ENDPOINTS = [
    {"url": simulator + "/generate_204", "name": "Simulator 204", "expected_status": 204, "expected_body": None}
]

from captivity.cli import main  # noqa: E402  (after the probes are set)

sys.argv = ["captivity", "login", "--network", network, "--portal", simulator + "/login"]
sys.exit(main())
