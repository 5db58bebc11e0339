# The human entry points. Each target installs and builds what it needs first,
# so `make run` and `make test` each work alone on a fresh Debian 12 machine.
#
#   make deps    install the missing Debian packages (as root, with apt-get)
#   make build   release build into build/
#   make run     cachet-origin behind cachet on the embedded default
#   make test    every test through CTest, plain and under ASan+UBSan; the
#                unit tests and a subset of the integration tests under TSan
#                (TSAN_TESTS); every fuzz target for FUZZ_SHORT_SECONDS
#   make install cachet to PREFIX/sbin, cachet-origin to PREFIX/bin, man pages,
#                the example configuration, the systemd unit, the docs
#                (PREFIX=/usr/local; DESTDIR=/scratch stages it; docs/operations.md)
#   make deb     the Debian package, ../cachet_VERSION_ARCH.deb (dpkg-buildpackage)
#   make bench   the benchmark harness (bench/run.sh; BENCH_ARGS=--quick|--full)
#   make fuzz    libFuzzer on every fuzz target, FUZZ_SECONDS (60) each
#   make soak    the 10-minute soak under load and faults (SOAK_SECONDS=600;
#                not part of make test; tests/soak/soak.sh); SOAK_PEER=nginx
#                runs the same scenario against nginx's proxy_cache

BUILD      ?= build
BUILD_SAN  ?= build-san
BUILD_FUZZ ?= build-fuzz
BUILD_TSAN ?= build-tsan
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 60
FUZZ_SHORT_SECONDS ?= 15
# Under ThreadSanitizer (make test-tsan): every unit test but test_tls_leak (a
# leak check on one thread; a minute under TSan), and the integration tests
# where threads share state: the reload hand-over and retirement (main thread
# and workers), waiters woken across workers and background refresh (the
# shared cache), the shared TLS ticket store, the per-client limit table and
# the backend groups every worker shares (route_limits, route_groups), the
# fleet's outbox of clients' PURGEs (fleet_client_purge: workers push, the
# main thread pops and publishes; 1.3 s under TSan), ACME's certificate
# swaps and challenge store (acme_pebble: the main thread installs while
# workers handshake; 50 s under TSan), and the plain proxy path as a baseline. About 3 minutes on 2 cores; the other
# integration tests run one
# worker's thread mostly alone, which ASan already covers.
TSAN_TESTS ?= ^(unit\.|integ\.(proxy_basic|ops_reload|ops_reload_retire|cache_coalesce|cache_bg_proto|tls_basic|route_limits|route_groups|fleet_peer|fleet_client_purge|acme_pebble)$$)
TSAN_SKIP  ?= ^unit\.test_tls_leak$$
BENCH_ARGS ?= --quick
PREFIX     ?= /usr/local
DESTDIR    ?=

BUILD_PKGS = gcc make cmake pkg-config libc6-dev libevent-dev libssl-dev \
             libhttp-parser-dev libcunit1-dev libconfig-dev libnghttp2-dev libpcre2-dev openssl \
             zlib1g-dev libbrotli-dev libzstd-dev libhiredis-dev libjson-c-dev
TEST_PKGS  = curl procps iproute2 psmisc python3 strace chromium gnuplot-nox python3-brotli zstd \
             nghttp2-client python3-h2 redis-server nginx-light pebble man-db groff-base
# Building the Debian package (make deb; tests/integration/deb_package.sh
# builds one in make test, so deps-test pulls these in too).
DEB_PKGS   = dpkg-dev debhelper lintian fakeroot
FUZZ_PKGS  = clang libclang-rt-14-dev
BENCH_PKGS = wrk lighttpd nginx-light varnish haproxy h2o nghttp2-client gnuplot-nox \
             util-linux

.PHONY: all deps deps-test deps-deb deps-fuzz deps-bench build build-san build-tsan build-fuzz run \
        test test-plain test-san test-tsan test-fuzz bench fuzz soak clean install deb

all: build

# Install only what is missing; refresh the package lists once, and only when
# something has to be installed, so a warm machine pays nothing.
define install_missing
	@missing=""; for p in $(1); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then \
	    echo "missing packages:$$missing"; \
	    echo "run as root: apt-get update && apt-get install -y$$missing"; exit 1; fi; \
	  echo "installing:$$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call install_missing,$(BUILD_PKGS))
deps-test: deps deps-deb
	$(call install_missing,$(TEST_PKGS))
deps-deb: deps
	$(call install_missing,$(DEB_PKGS))
deps-fuzz: deps
	$(call install_missing,$(FUZZ_PKGS))
deps-bench: deps
	$(call install_missing,$(BENCH_PKGS))

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

build-san: deps
	cmake -S . -B $(BUILD_SAN) -DCMAKE_BUILD_TYPE=Debug -DCT_SANITIZE=ON >/dev/null
	cmake --build $(BUILD_SAN) -j $(JOBS)

build-tsan: deps
	cmake -S . -B $(BUILD_TSAN) -DCMAKE_BUILD_TYPE=Debug -DCT_TSAN=ON >/dev/null
	cmake --build $(BUILD_TSAN) -j $(JOBS)

# DESTDIR stages the tree (packagers); without it, install as root.
install: build
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix $(PREFIX)

# A full build from the tree with Debian's flags (debian/rules), unsigned;
# the .deb and .buildinfo land in the parent folder, as dpkg-buildpackage's.
deb: deps-deb
	dpkg-buildpackage -b -uc -us

run: build
	./scripts/run.sh $(BUILD)/bin

test: test-plain test-san test-tsan test-fuzz

test-plain: deps-test build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-san: deps-test build-san
	cd $(BUILD_SAN) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS)

# halt_on_error: a race ends the process (exit 66), so the test that ran it fails.
test-tsan: deps-test build-tsan
	cd $(BUILD_TSAN) && TSAN_OPTIONS=halt_on_error=1:exitcode=66:second_deadlock_stack=1:suppressions=$(CURDIR)/tests/tsan.supp \
	  ctest --output-on-failure -j $(JOBS) -R '$(TSAN_TESTS)' -E '$(TSAN_SKIP)'

# Only the fuzz targets (clang, ASan+UBSan+libFuzzer), not the whole tree.
build-fuzz: deps-fuzz
	CC=clang cmake -S . -B $(BUILD_FUZZ) -DCMAKE_BUILD_TYPE=Debug -DCT_FUZZ=ON >/dev/null
	cmake --build $(BUILD_FUZZ) -j $(JOBS) --target fuzz_targets

fuzz: build-fuzz
	./tests/fuzz/run.sh $(BUILD_FUZZ)/bin $(FUZZ_SECONDS)

test-fuzz: build-fuzz
	./tests/fuzz/run.sh $(BUILD_FUZZ)/bin $(FUZZ_SHORT_SECONDS)

bench: deps-bench build
	./bench/run.sh $(BENCH_ARGS)

soak: deps-bench deps-test build
	SOAK_SECONDS=$${SOAK_SECONDS:-600} ./tests/soak/soak.sh $(BUILD)/bin

clean:
	rm -rf $(BUILD) $(BUILD_SAN) $(BUILD_TSAN) $(BUILD_FUZZ)
