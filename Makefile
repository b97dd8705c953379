# libndk top-level driver. `make demo` and `make test` work on a fresh
# Debian 12 machine as root: they install missing build dependencies with
# apt-get, configure with CMake + Ninja, build and run.

BUILD ?= build
CMAKE_FLAGS ?=
DEPS := cmake ninja-build pkg-config gcc g++ clang libcmocka-dev iproute2 \
	tshark clang-format python3 librdmacm-dev libibverbs-dev nftables nettle-dev \
	$(VM_DEPS)
# The interop guest (tests/interop/vm/ndkvm): qemu, and what builds siw.ko
# and the image.
VM_DEPS := qemu-system-x86 cpio kmod binutils make xz-utils libelf-dev
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps configure build test test-extended demo format format-check clean \
	bench bench-quick bench-table

all: build

# Installs only what is missing (dpkg-query is cheap; apt-get is not).
deps:
	@missing=""; for p in $(DEPS); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | \
			grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		echo "wireshark-common wireshark-common/install-setuid boolean false" | \
			$(SUDO) debconf-set-selections; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends $$missing; \
	fi

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

configure: $(BUILD)/build.ninja

build: configure
	ninja -C $(BUILD)

# make test: everything but the long guest runs (under five minutes on two
# cores); make test-extended: those (label "extended": the verbs provider's
# whole functional suites and cross-provider runs in the interop guest).
test: build
	ctest --test-dir $(BUILD) --output-on-failure --no-tests=error -j2 \
		-LE extended

test-extended: build
	ctest --test-dir $(BUILD) --output-on-failure --no-tests=error -L extended

demo: build
	$(BUILD)/examples/ndkdemo

# Benchmarks (docs/performance.md): the full run, a smoke run, and the
# table in docs/performance.md written from the last full run's results.json.
bench:
	bench/run

bench-quick:
	BENCH_QUICK=1 bench/run

bench-table:
	bench/table.py

format:
	git ls-files '*.c' '*.h' | xargs clang-format -i

format-check:
	git ls-files '*.c' '*.h' | xargs clang-format --dry-run --Werror

clean:
	rm -rf $(BUILD)
