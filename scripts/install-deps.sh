#!/usr/bin/env bash
# Installs the Debian packages Cairn needs to build, test and run, if missing.
set -eu
pkgs="build-essential cmake pkg-config libmicrohttpd-dev libcurl4-openssl-dev
      libsqlite3-dev libsodium-dev libjansson-dev libcmocka-dev sqlite3 curl openssl ca-certificates
      openssh-client openssh-server dpkg-dev file slurm-wlm munge chromium
      clang libclang-rt-14-dev"  # clang and its libFuzzer runtime: make fuzz
missing=""
pkgs="$pkgs jq"  # bench/soak.sh reads the API's JSON with it
pkgs="$pkgs iproute2"  # ip and tc: bench/distribution.sh and bench/dataflow.sh
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing="$missing $p"
done
command -v npm > /dev/null || missing="$missing nodejs npm"
# The browser test's playwright-core, pinned in tests/browser/package-lock.json.
browser_npm() {
  local dir
  dir="$(cd "$(dirname "$0")/.." && pwd)/tests/browser"
  [ -d "$dir/node_modules/playwright-core" ] && return 0
  echo "installing playwright-core in $dir (npm ci)"
  (cd "$dir" && npm ci --no-audit --no-fund)
}
if [ -z "$missing" ]; then
  browser_npm
  exit 0
fi
echo "installing Debian packages:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
browser_npm
