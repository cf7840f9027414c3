# Cairn — top-level entry points. See README.md.
BUILD      ?= build
BENCH_BUILD ?= build-release
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all deps build demo check bench clean

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

bench: deps
	cmake -S . -B $(BENCH_BUILD) -DCMAKE_BUILD_TYPE=Release -DCAIRN_SANITIZE=OFF
	cmake --build $(BENCH_BUILD) -j $(JOBS)
	@bash bench/run-all.sh $(BENCH_BUILD)/bin

clean:
	rm -rf $(BUILD) $(BENCH_BUILD)
