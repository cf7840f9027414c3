#!/usr/bin/env bash
# Installs the Debian packages Cairn needs to build, test and run, if missing.
set -eu
pkgs="build-essential cmake pkg-config libmicrohttpd-dev libcurl4-openssl-dev
      libsqlite3-dev libjansson-dev libcmocka-dev sqlite3 curl openssl ca-certificates
      clang libclang-rt-14-dev"  # clang and its libFuzzer runtime: make fuzz
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing Debian packages:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
