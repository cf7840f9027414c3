#!/usr/bin/env bash
# install-deps.sh [--dry-run] [PURPOSE...] — installs the Debian 12 packages
# Cairn needs for each PURPOSE, those missing only; with everything present
# it runs no apt-get (and no npm). PURPOSE is one of
#
#   build     compile everything in build/: the compiler, cmake, pkg-config,
#             the libraries (libmicrohttpd, jansson, libcurl, SQLite,
#             libsodium, zlib: the statistics exports' gzip) and cmocka, which configuring with the tests
#             (BUILD_TESTING, on by default) requires, and bubblewrap
#             (bwrap), the sandbox cairn-worker runs program apps in
#             (docs/security.md). make demo needs no more: scripts/demo.sh
#             runs the built programs and coreutils.
#   test      build (bubblewrap included: every test's worker runs its
#             apps in the sandbox, tests/security/test_sandbox.c attacks it),
#             plus what the tests run (make check, make tsan): the
#             sqlite3, curl, jq and openssl commands, ssh and sshd, Slurm and
#             munge, chromium, node and npm and the browser test's
#             playwright-core (npm ci from tests/browser/package-lock.json),
#             dpkg-dev and file (the .deb packaging test), libxml2-dev (the
#             XML statistics test parses the exports as a statistics site
#             would), and the Python package's tests (python/tests/, run by
#             /usr/bin/python3): python3-pytest, python3-cloudpickle (the
#             Executor's functions by value), python3-pip (its offline `pip
#             install`) and snakemake (the profile's workflow).
#   fuzz      build, plus clang and its libFuzzer runtime (make fuzz).
#   bench     build, plus curl, jq, sqlite3, iproute2 (ip, tc) and time
#             (/usr/bin/time, a process's peak memory): the benchmarks'
#             scripts (bench/distribution.sh, bench/dataflow.sh,
#             bench/soak.sh, bench/statsexport.sh).
#   packages  build, plus dpkg-dev and file (make packages: cpack's DEB
#             generator and dpkg-shlibdeps). python3-cairn is made of the
#             package's files as they are: building it runs no Python.
#
# Several purposes may be named at once (one apt-get for all). Without a
# PURPOSE it installs for every purpose. --dry-run prints what would be
# installed and installs nothing.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)

build_pkgs="build-essential cmake pkg-config libmicrohttpd-dev libcurl4-openssl-dev
            libsqlite3-dev libsodium-dev libjansson-dev zlib1g-dev libcmocka-dev bubblewrap"
test_pkgs="bubblewrap sqlite3 curl jq openssl ca-certificates openssh-client openssh-server
           slurm-wlm munge chromium dpkg-dev file libxml2-dev python3-pytest
           python3-cloudpickle python3-pip snakemake"
fuzz_pkgs="clang libclang-rt-14-dev"
bench_pkgs="curl jq sqlite3 iproute2 time"
packages_pkgs="dpkg-dev file"

dry=0
purposes=""
for a in "$@"; do
  case "$a" in
    --dry-run|-n) dry=1 ;;
    build|test|fuzz|bench|packages) purposes="$purposes $a" ;;
    *) echo "install-deps: unknown purpose '$a' (build, test, fuzz, bench, packages)" >&2
       exit 2 ;;
  esac
done
purposes=${purposes# }
[ -n "$purposes" ] || purposes="build test fuzz bench packages"

pkgs=$build_pkgs
want_node=0
for p in $purposes; do
  case "$p" in
    test) pkgs="$pkgs $test_pkgs"; want_node=1 ;;
    fuzz) pkgs="$pkgs $fuzz_pkgs" ;;
    bench) pkgs="$pkgs $bench_pkgs" ;;
    packages) pkgs="$pkgs $packages_pkgs" ;;
  esac
done

missing=""
for p in $pkgs; do
  case " $missing " in *" $p "*) continue ;; esac
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing="$missing $p"
done
# node and npm may come from elsewhere than Debian's packages (npm then is
# not a package of its own): what counts is that the commands are there.
if [ "$want_node" = 1 ]; then
  { command -v node > /dev/null && command -v npm > /dev/null; } \
    || missing="$missing nodejs npm"
fi

# The browser test's playwright-core, pinned in tests/browser/package-lock.json.
browser_npm() {
  local dir=$here/tests/browser
  [ "$want_node" = 1 ] || return 0
  [ -d "$dir/node_modules/playwright-core" ] && return 0
  if [ "$dry" = 1 ]; then
    echo "install-deps: would run npm ci in $dir"
    return 0
  fi
  echo "installing playwright-core in $dir (npm ci)"
  (cd "$dir" && npm ci --no-audit --no-fund)
}

if [ -z "$missing" ]; then
  [ "$dry" = 1 ] && echo "install-deps: $purposes: every Debian package is installed"
  browser_npm
  exit 0
fi
if [ "$dry" = 1 ]; then
  echo "install-deps: $purposes: would install Debian packages:$missing"
  browser_npm
  exit 0
fi
echo "installing Debian packages ($purposes):$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
browser_npm
