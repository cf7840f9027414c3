# Cairn — top-level entry points. See README.md.
BUILD      ?= build
BENCH_BUILD ?= build-release
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all deps build demo check tsan release bench fuzz clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/Makefile: CMakeLists.txt | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Debug -DCAIRN_SANITIZE=ON

build: deps $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(BUILD)/bin

check: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# ThreadSanitizer build (its own folder) and the integration tests under it.
# A report makes its process exit with status 66, which fails the test; the
# test harness gathers the reports of the servers, workers and commands a
# test starts and fails the test on any (tests/support/harness.c). Not
# halt_on_error: a test stopped at once would leave its processes running.
TSAN_OPTS ?= halt_on_error=0:exitcode=66:second_deadlock_stack=1
TSAN_TESTS ?= -L "integration|security"

tsan: deps
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCAIRN_SANITIZE=OFF -DCAIRN_TSAN=ON
	cmake --build $(TSAN_BUILD) -j $(JOBS)
	cd $(TSAN_BUILD) && TSAN_OPTIONS="$(TSAN_OPTS)" ctest $(TSAN_TESTS) --output-on-failure -j $(JOBS)

# The optimised build the benchmarks use (its own folder); -Werror holds
# there too, where the optimiser sees more.
release: deps
	cmake -S . -B $(BENCH_BUILD) -DCMAKE_BUILD_TYPE=Release -DCAIRN_SANITIZE=OFF
	cmake --build $(BENCH_BUILD) -j $(JOBS)

bench: release
	@bash bench/run-all.sh $(BENCH_BUILD)/bin

# libFuzzer targets (tests/fuzz/, clang, its own folder): each runs
# FUZZ_SECONDS seconds from a copy of its seed corpus; non-zero on a crash.
fuzz: deps
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCAIRN_FUZZ=ON -DBUILD_TESTING=OFF
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_all
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash scripts/fuzz.sh $(FUZZ_BUILD)

clean:
	rm -rf $(BUILD) $(BENCH_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)
