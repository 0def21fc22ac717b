#!/usr/bin/env bash
# The peer the bench measures the login beside: captivity-cli from PyPI, in a virtual
# environment of the bench's own (not a dependency of anything here), in the folder given.
# Its release is a source package that also builds a Rust daemon, whose crates come from
# crates.io, which these machines do not reach; the login and the simulator are Python only,
# so pip fetches the release and installs what they import, and the bench runs them from the
# release's source. Without it the bench's peer row says so, and the others run.
set -uo pipefail
environment=$1 release=captivity-cli==3.2.1
test -f "$environment/src/captivity/cli.py" && exit 0
{
  rm -rf "$environment" && python3 -m venv "$environment" &&
  "$environment/bin/pip" install --quiet requests keyring &&
  "$environment/bin/pip" download --quiet --no-deps --no-binary :all: --dest "$environment/release" "$release" &&
  mkdir -p "$environment/src" &&
  tar -xzf "$environment"/release/*.tar.gz -C "$environment/src" --strip-components=2 --wildcards '*/src/captivity'
} || echo "captivity-cli could not be set up in $environment: the bench's peer row will say so"
exit 0
