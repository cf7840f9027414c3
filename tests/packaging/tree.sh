#!/usr/bin/env bash
# tree.sh CMAKE CC BUILD_DIR — the release tree the packaging tests share
# (ctest fixture "packaging_tree"): BUILD_DIR/packaging-tree, configured
# Release without sanitizers or tests, with CAIRN_PACKAGING=ON and the /usr
# prefix, building only what the worker tarball and the .deb packages hold.
# Incremental: a second run rebuilds only what changed. Prints
# "packaging tree: OK" last.
set -euo pipefail
export LC_ALL=C
[ $# -eq 3 ] || { echo "usage: tree.sh CMAKE CC BUILD_DIR" >&2; exit 2; }
CMAKE=$1
CC=$2
BUILD=$(cd "$3" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
TREE=$BUILD/packaging-tree
fail() { echo "packaging tree: FAILED: $*" >&2; exit 1; }

start=$(date +%s)
timeout 300 "$CMAKE" -S "$SRC" -B "$TREE" -DCMAKE_BUILD_TYPE=Release -DCAIRN_SANITIZE=OFF \
  -DCAIRN_TSAN=OFF -DBUILD_TESTING=OFF -DCAIRN_PACKAGING=ON -DCMAKE_INSTALL_PREFIX=/usr \
  -DCMAKE_C_COMPILER="$CC" > "$TREE.configure.log" 2>&1 \
  || { tail -n 40 "$TREE.configure.log"; fail "cmake could not configure $TREE"; }
timeout 900 "$CMAKE" --build "$TREE" -j 2 --target cairn-server cairn-worker cairn-cli \
  cairn-worker-shipped > "$TREE.build.log" 2>&1 \
  || { tail -n 60 "$TREE.build.log"; fail "the release tree does not build"; }
for b in cairn-server cairn-worker cairn; do
  [ -x "$TREE/bin/$b" ] || fail "$TREE/bin/$b is missing"
done
[ -x "$TREE/worker-tarball/bin/cairn-worker" ] || fail "the tarball's cairn-worker is missing"
echo "release tree $TREE built in $(( $(date +%s) - start )) s"
echo "packaging tree: OK"
