# Cairn — top-level entry points. See README.md.
BUILD      ?= build
BENCH_BUILD ?= build-release
TSAN_BUILD ?= build-tsan
PKG_BUILD  ?= build-package
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all deps test-deps fuzz-deps bench-deps package-deps build demo check tsan \
        release bench packages fuzz clean

all: build

# Debian packages per purpose (scripts/install-deps.sh; each installs only
# what is missing, and nothing when all is there). Each target below takes
# exactly one of these, so that two apt-get never run at once under make -j.
#   deps          building build/ and the demo (cmocka included: build/ is
#                 configured with the tests)
#   test-deps     deps + what the tests run (make check, make tsan)
#   fuzz-deps     deps + clang and libFuzzer (make fuzz)
#   bench-deps    deps + the benchmark scripts' tools (make bench)
#   package-deps  deps + dpkg-dev and file (make packages)
deps:
	@bash scripts/install-deps.sh build
test-deps:
	@bash scripts/install-deps.sh build test
fuzz-deps:
	@bash scripts/install-deps.sh build fuzz
bench-deps:
	@bash scripts/install-deps.sh build bench
package-deps:
	@bash scripts/install-deps.sh build packages

CONFIGURE = cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Debug -DCAIRN_SANITIZE=ON

$(BUILD)/Makefile: CMakeLists.txt | deps
	$(CONFIGURE)

build: deps $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

# KEEP=1: the server stays up after the demo (the dashboard's URL and how
# to stop it are printed).
demo: build
	@KEEP=$(KEEP) bash scripts/demo.sh $(BUILD)/bin

# Configured again once the test packages are in: a build/ first configured
# by make build, before node was installed, then registers the browser test
# with node (CMake looks again for a program it did not find).
check: test-deps
	$(CONFIGURE)
	cmake --build $(BUILD) -j $(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# ThreadSanitizer build (its own folder) and the integration tests under it.
# A report makes its process exit with status 66, which fails the test; the
# test harness gathers the reports of the servers, workers and commands a
# test starts and fails the test on any (tests/support/harness.c). Not
# halt_on_error: a test stopped at once would leave its processes running.
TSAN_OPTS ?= halt_on_error=0:exitcode=66:second_deadlock_stack=1
TSAN_TESTS ?= -L "integration|security"

tsan: test-deps
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCAIRN_SANITIZE=OFF -DCAIRN_TSAN=ON
	cmake --build $(TSAN_BUILD) -j $(JOBS)
	cd $(TSAN_BUILD) && TSAN_OPTIONS="$(TSAN_OPTS)" ctest $(TSAN_TESTS) --output-on-failure -j $(JOBS)

# Allocation-failure injection (its own folder, ASan + UBSan): each public
# path in-process with its k-th allocation failing, k = 1, 2, ...
# (tests/alloc/test_alloc_fail.c; docs/testing.md, "Failure injection").
# make clean leaves build-alloc/ (rm -rf it by hand).
ALLOC_BUILD ?= build-alloc
.PHONY: alloc-fail
alloc-fail: deps
	cmake -S . -B $(ALLOC_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCAIRN_SANITIZE=ON -DCAIRN_ALLOC_FAIL=ON
	cmake --build $(ALLOC_BUILD) -j $(JOBS) --target test_alloc_fail
	cd $(ALLOC_BUILD) && ctest -L alloc --output-on-failure

# The optimised build the benchmarks use (its own folder); -Werror holds
# there too, where the optimiser sees more.
release: deps
	cmake -S . -B $(BENCH_BUILD) -DCMAKE_BUILD_TYPE=Release -DCAIRN_SANITIZE=OFF
	cmake --build $(BENCH_BUILD) -j $(JOBS)

bench: bench-deps
	@$(MAKE) --no-print-directory release
	@bash bench/run-all.sh $(BENCH_BUILD)/bin

# The .deb packages (cairn-server, cairn-worker, cairn-cli) and the
# self-contained worker tarball, in $(PKG_BUILD)/ (README, "Packages").
packages: package-deps
	cmake -S . -B $(PKG_BUILD) -DCMAKE_BUILD_TYPE=Release -DCAIRN_SANITIZE=OFF \
	      -DBUILD_TESTING=OFF -DCAIRN_PACKAGING=ON -DCMAKE_INSTALL_PREFIX=/usr
	cmake --build $(PKG_BUILD) -j $(JOBS) --target cairn-server cairn-worker cairn-cli \
	      cairn-worker-shipped
	cd $(PKG_BUILD) && cpack -G DEB
	cmake --build $(PKG_BUILD) --target worker-tarball

# libFuzzer targets (tests/fuzz/, clang, its own folder): each runs
# FUZZ_SECONDS seconds from a copy of its seed corpus; non-zero on a crash.
fuzz: fuzz-deps
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCAIRN_FUZZ=ON -DBUILD_TESTING=OFF
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_all
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash scripts/fuzz.sh $(FUZZ_BUILD)

clean:
	rm -rf $(BUILD) $(BENCH_BUILD) $(TSAN_BUILD) $(PKG_BUILD) $(FUZZ_BUILD)
