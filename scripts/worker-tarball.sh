#!/usr/bin/env bash
# worker-tarball.sh BUILD_DIR OUT_DIR [VERSION] — the self-contained worker
# tarball OUT_DIR/cairn-worker-VERSION-linux-ARCH.tar.gz (docs/launch.md,
# "Shipping the worker"):
#
#   cairn-worker-VERSION-linux-ARCH/
#     bin/cairn-worker   built with the run-time path $ORIGIN/../lib (target
#                        cairn-worker-shipped: BUILD_DIR/worker-tarball/bin/)
#     lib/               every shared library it loads (ldd: libcurl, jansson,
#                        libmicrohttpd, libsodium and theirs) except glibc's own
#                        (libc, libm, libpthread, libdl, librt, libresolv,
#                        libutil, libanl, libnsl, the loader): those stay the
#                        node's, so the node's glibc must be as new as the
#                        build machine's
#     share/licenses/    the Debian copyright file of each bundled library
#     README, LICENSE    what it is and how to run it (LICENSE when the source
#                        tree has one)
#
# BUILD_DIR must be an optimised build without sanitizers (make release;
# `cmake --build BUILD_DIR --target worker-tarball` runs this script).
# Prints the tarball's path last.
set -euo pipefail
export LC_ALL=C
[ $# -ge 2 ] || { echo "usage: worker-tarball.sh BUILD_DIR OUT_DIR [VERSION]" >&2; exit 2; }
BUILD=$(cd "$1" && pwd)
mkdir -p "$2"
OUT=$(cd "$2" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
VERSION=${3:-$(sed -n 's/^project(cairn VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")}
ARCH=$(uname -m)
EXE=$BUILD/worker-tarball/bin/cairn-worker
fail() { echo "worker-tarball: $*" >&2; exit 1; }

[ -x "$EXE" ] || fail "$EXE is missing: cmake --build $BUILD --target cairn-worker-shipped"
deps=$(ldd "$EXE") || fail "ldd $EXE failed"
if grep -qE 'lib(a|ub|t)san' <<< "$deps"; then
  fail "$EXE is built with sanitizers: use a release build (make release)"
fi
dyn=$(readelf -d "$EXE")
grep -q 'R.*PATH.*\$ORIGIN/\.\./lib' <<< "$dyn" || fail "$EXE has no run-time path \$ORIGIN/../lib"
if grep -q 'not found' <<< "$deps"; then
  echo "$deps" >&2
  fail "some libraries of $EXE are not found here"
fi

NAME=cairn-worker-$VERSION-linux-$ARCH
STAGE=$(mktemp -d "${TMPDIR:-/tmp}/cairn-tarball-XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
ROOT=$STAGE/$NAME
mkdir -p "$ROOT/bin" "$ROOT/lib" "$ROOT/share/licenses"
cp "$EXE" "$ROOT/bin/cairn-worker"
strip --strip-unneeded "$ROOT/bin/cairn-worker" 2>/dev/null || true

# glibc's libraries (and the vDSO) stay on the node.
glibc='^(linux-vdso|linux-gate|ld-linux|libc|libm|libpthread|libdl|librt|libresolv|libutil|libanl|libnsl|libmvec|libBrokenLocale|libthread_db|libnss_[a-z]+)\.so'
nlibs=0
while read -r name path; do
  [[ $name =~ $glibc ]] && continue
  [ -f "$path" ] || fail "$name: no file at '$path'"
  cp -L "$path" "$ROOT/lib/$name"
  chmod 0644 "$ROOT/lib/$name"
  nlibs=$((nlibs + 1))
  # The library's Debian copyright (its licence terms travel with it).
  if command -v dpkg >/dev/null; then
    real=$(readlink -f "$path")
    pkg=$( (dpkg -S "$path" 2>/dev/null || dpkg -S "$real" 2>/dev/null || true) | head -n 1 | cut -d: -f1)
    if [ -n "$pkg" ] && [ -f "/usr/share/doc/$pkg/copyright" ] && [ ! -e "$ROOT/share/licenses/$pkg" ]; then
      mkdir -p "$ROOT/share/licenses/$pkg"
      cp "/usr/share/doc/$pkg/copyright" "$ROOT/share/licenses/$pkg/copyright"
    fi
  fi
done < <(echo "$deps" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }')

for f in LICENSE LICENSE.md COPYING; do
  [ -f "$SRC/$f" ] && cp "$SRC/$f" "$ROOT/$f"
done
cat > "$ROOT/README" <<EOF
cairn-worker $VERSION for Linux $ARCH, self-contained

bin/cairn-worker loads its libraries from lib/ next to it (run-time path
\$ORIGIN/../lib), so it runs on a node without Cairn, libcurl, jansson,
libmicrohttpd or libsodium installed. Only glibc comes from the node, and it
must be at least as new as the build machine's ($(ldd --version | head -n 1 | sed 's/.* //')).

Unpack anywhere and run:

  tar -xzf $NAME.tar.gz
  $NAME/bin/cairn-worker --server https://master.example.org:8443 \\
      --app cell=/opt/cell/bin/cell --dir /scratch/\$USER/cairn-worker

cairn-worker --help lists its options. The worker factory ships this
tarball for you: cairn launch BACKEND --ship-worker $NAME.tar.gz ...
unpacks it where the workers run (ssh: on each host; local and batch
backends: in the factory's work dir). HTTPS needs CA certificates where
the build machine's libcurl looks for them (/etc/ssl/certs); elsewhere
(e.g. /etc/pki/tls/certs/ca-bundle.crt) set CAIRN_CA_FILE to the bundle,
or to the master's own CA.

lib/ holds $nlibs libraries; share/licenses/ the copyright and licence terms
of the packages they come from.
EOF

TARBALL=$OUT/$NAME.tar.gz
tar -C "$STAGE" --owner=0 --group=0 --numeric-owner -czf "$TARBALL.tmp" "$NAME"
mv "$TARBALL.tmp" "$TARBALL"
echo "worker-tarball: $nlibs libraries bundled, $(du -k "$TARBALL" | cut -f1) KiB"
echo "$TARBALL"
