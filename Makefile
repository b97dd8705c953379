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
# What `make deb` needs: debian/control's Build-Depends, the Debian
# tools, lintian.
DEB_DEPS := dpkg-dev debhelper lintian cmake ninja-build pkg-config \
	libibverbs-dev librdmacm-dev
DEB_DIR ?= build-deb
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps deb-deps configure build test test-extended demo format \
	format-check clean bench bench-quick bench-table deb

all: build

# Installs only what is missing (dpkg-query is cheap; apt-get is not).
define install_missing
	@missing=""; for p in $(1); do \
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
endef

deps:
	$(call install_missing,$(DEPS))

deb-deps:
	$(call install_missing,$(DEB_DEPS))

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

configure: $(BUILD)/build.ninja

build: configure
	ninja -C $(BUILD)

# make test: everything but the long runs (under five minutes on two
# cores); make test-extended: those (label "extended": the verbs provider's
# whole functional suites and cross-provider runs in the interop guest;
# label "slow": the fault matrix between network namespaces).
test: build
	ctest --test-dir $(BUILD) --output-on-failure --no-tests=error -j2 \
		-LE 'extended|slow'

test-extended: build
	ctest --test-dir $(BUILD) --output-on-failure --no-tests=error \
		-L 'extended|slow'

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

# The Debian packages (debian/): libndk0, libndk-dev and ndk-tools in
# $(DEB_DIR)/, checked with lintian (errors fail, warnings are printed).
# dpkg-buildpackage writes beside the source, so it builds a copy of the
# tree in $(DEB_DIR)/src; the work tree stays as it is.
deb: deb-deps
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/src/libndk
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
		git ls-files -z --cached --others --exclude-standard | \
			grep -zv '^$(DEB_DIR)/' | \
			xargs -0 cp --parents -t $(DEB_DIR)/src/libndk; \
	else \
		tar -c --exclude='./build*' --exclude=./.git . | \
			tar -x -C $(DEB_DIR)/src/libndk; \
	fi
	cd $(DEB_DIR)/src/libndk && \
		DEB_BUILD_OPTIONS="parallel=2 $$DEB_BUILD_OPTIONS" \
		dpkg-buildpackage -b -us -uc
	mv $(DEB_DIR)/src/*.deb $(DEB_DIR)/src/*.changes \
		$(DEB_DIR)/src/*.buildinfo $(DEB_DIR)/
	rm -rf $(DEB_DIR)/src
	lintian --fail-on error $(DEB_DIR)/*.changes
	@ls $(DEB_DIR)/*.deb

format:
	git ls-files '*.c' '*.h' | xargs clang-format -i

format-check:
	git ls-files '*.c' '*.h' | xargs clang-format --dry-run --Werror

clean:
	rm -rf $(BUILD)
