# SPDX-License-Identifier: GPL-2.0-or-later
#
# swapext: the one entry point for every user-space build and check.
#
#   make                 library (static + shared) and the swapext tool
#   make check           install missing packages (as root), check-portable,
#                        build and run every test; ends with "N passed, N failed"
#   make demo            build and run `swapext demo $(DEMO_IMAGE)`: the atomic swap
#   make crash-huge      the 100,000-extent swap cut at 1,000 + 500 writes (~35 min)
#   make faults          the fault loop at every N under ASan (tests/crash/fault_loop.c)
#   make bench           swapext beside XFS and the fdatasync floor (issue 17);
#                        bench-quick: the same, small, for CI
#   make bench-xfs       (root) swapext's swap next to XFS_IOC_EXCHANGE_RANGE
#   make xfscheck        FISWAPRANGE in the rebuilt XFS module under qemu, and the
#                        differential scenario against the store; make check
#                        runs it too when it can (else it says why: skipped)
#   make coverage        gcov/lcov report of core/ and engine/ under build/coverage/
#   make asan | ubsan    the tests under AddressSanitizer / UBSan
#   make fieldfuzz       field fuzzing of golden images under ASan+UBSan (~25 min)
#   make tsan            the tests under ThreadSanitizer (clang); make check
#                        runs the thread stress under it when it can (else it
#                        says why and counts it skipped)
#   make threads-long    the thread stress, long, plain and under TSan
#   make check-portable  engine/ includes only the platform header and its own
#   make kmod            build/kmod/swapext.ko against Debian's 6.1 headers (-Werror)
#   make kcheck          the module in Linux 6.1 under qemu; make check runs it
#                        too when it can (else it says why and counts it skipped)
#   make xfsmod          build/xfsmod/xfs.ko: Debian's 6.1 XFS with the swap core
#                        (FISWAPRANGE; kernel-glue/xfs/); exit 77 if it cannot
#   make install         PREFIX=/usr/local DESTDIR=
#   make help            everything else
#
# Sources are found with wildcards: a new core/*.c, engine/*.c,
# engine/diag/*.c, user-glue/*.c, tools/*.c, tests/unit/test_*.c,
# tests/crash/*.c, tests/stress/*.c or tests/common/*.c is built without
# touching this file.

# The version lives in include/swapext/version.h alone.
VERSION_H	:= include/swapext/version.h
VERSION		:= $(shell sed -n 's/^\#define SX_LIB_VERSION[[:space:]]*"\(.*\)"/\1/p' $(VERSION_H))
SOVERSION	:= $(shell sed -n 's/^\#define SX_LIB_SOVERSION[[:space:]]*\([0-9]*\).*/\1/p' $(VERSION_H))

# ---------------------------------------------------------------- settings

BUILD		?= build
DEMO_IMAGE	?= $(BUILD)/demo.img

# Test-run knobs (exported to every test program by scripts/run-tests.sh).
CRASH_LEVEL	?= normal
TEST_SEED	?=
TEST_TIMEOUT	?= 900
TEST_JOBS	?= 1
TESTS		?=
# Operations of the fsx stress test (tests/stress/fsx.c); exported as SX_FSX_OPS.
FSX_OPS		?=
# Operations per thread and phase of the thread stress (tests/stress/threads.c),
# exported as SX_THREADS_OPS; make threads-long's are THREADS_LONG_OPS.
THREADS_OPS	?=
THREADS_LONG_OPS ?= 20000

# Skip scripts/deps.sh (no package check or install) with NODEPS=1.
NODEPS		?=

PREFIX		?= /usr/local
BINDIR		?= $(PREFIX)/bin
LIBDIR		?= $(PREFIX)/lib
INCLUDEDIR	?= $(PREFIX)/include
PKGCONFIGDIR	?= $(LIBDIR)/pkgconfig
DESTDIR		?=

# Debug assertions (ASSERT) are compiled in unless DEBUG=0.
DEBUG		?= 1

CFLAGS		?= -O2 -g
LDFLAGS		?=
# Added by the asan/ubsan/coverage sub-builds (and free for experiments).
VARIANT_CFLAGS	?=
VARIANT_LDFLAGS	?=
EXTRA_CFLAGS	?=

NPROC		:= $(shell nproc 2>/dev/null || echo 2)
# Sub-makes get -j$(NPROC) unless the caller already chose -j.
SUBJOBS		:= $(if $(filter -j%,$(MAKEFLAGS)),,-j$(NPROC))
SUBMAKE		:= $(MAKE) --no-print-directory $(SUBJOBS)

WARNFLAGS	:= -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare \
		   -Wno-missing-field-initializers -Werror -Wundef \
		   -Wmissing-prototypes -Wstrict-prototypes
INCLUDES	:= -Iinclude -Iuser-glue -Iengine
TEST_INCLUDES	:= -Itests/common -Itests -Iengine/diag

# -fno-strict-aliasing: the kernel build uses it, so the user build does too
# and both builds of the same engine source mean the same thing.
SX_CFLAGS	:= -std=gnu11 $(WARNFLAGS) -fno-strict-aliasing \
		   -fvisibility=hidden -fPIC $(if $(filter 1,$(DEBUG)),-DSX_DEBUG) \
		   $(INCLUDES)
ALL_CFLAGS	= $(SX_CFLAGS) $(CFLAGS) $(VARIANT_CFLAGS) $(EXTRA_CFLAGS)
ALL_LDFLAGS	= $(LDFLAGS) $(VARIANT_LDFLAGS)
DEPFLAGS	= -MMD -MP -MF $(@:.o=.d) -MT $@

LDLIBS		:= -lurcu-memb -lpthread
TEST_LDLIBS	:= -lcmocka $(LDLIBS)
# The tool loads the kernel module with libkmod (libkmod-dev).
TOOL_LDLIBS	:= -lkmod

# ---------------------------------------------------------------- sources

# The kernel module's build directory and the kcheck program (KCHECK=0: no kcheck in make check).
KCHECK		?= 1
KMOD_DIR	:= $(BUILD)/kmod
KCHECK_BIN	:= $(if $(filter 1,$(KCHECK)),$(BUILD)/tests/kmod/kcheck)
# The XFS module check (tests/xfs/): XFS_KO is the module it boots (make
# xfsmod's by default; "stock" boots Debian's, which has no FISWAPRANGE),
# XFSCHECK=0 leaves it out of make check.  The guest program is linked
# -static from tests/xfs/ and the sxb files of tests/common/; scen-store
# runs the same scenario on the store.
XFSCHECK	?= 1
XFS_KO		?= $(BUILD)/xfsmod/xfs.ko
XFSCHECK_BIN	:= $(if $(filter 1,$(XFSCHECK)),$(BUILD)/tests/xfs/xfscheck)
XC_KO_ABS	:= $(if $(filter stock,$(XFS_KO)),stock,$(abspath $(XFS_KO)))
XC_GUEST	:= $(BUILD)/tests/xfs/xfscheck-guest
XC_STORE	:= $(BUILD)/tests/xfs/scen-store
XC_GUEST_SRCS	:= $(filter-out tests/xfs/scen_store.c,$(wildcard tests/xfs/*.c)) \
		   tests/common/sxb.c tests/common/sxb_errtab.c tests/common/sxb_swaps.c \
		   tests/common/sxb_scen.c

# ThreadSanitizer: the compiler (clang; gcc's TSan would do too), its flags,
# the options every TSan program runs with (user-glue/tsan.supp says what it
# leaves out and why; the crash tests fork a multi-threaded process, liburcu's
# call_rcu thread included, and the children start threads: die_after_fork=0),
# and make check's program that builds the thread stress with it and runs it,
# or says why it cannot (TSAN=0 leaves it out).
TSAN_CC		?= clang
TSAN_CFLAGS	:= -fsanitize=thread -fno-omit-frame-pointer
TSAN_LDFLAGS	:= -fsanitize=thread
TSAN_OPTS	:= suppressions=$(CURDIR)/user-glue/tsan.supp second_deadlock_stack=1 history_size=4 \
		   die_after_fork=0
TSAN		?= 1
TSAN_BIN	:= $(if $(filter 1,$(TSAN)),$(BUILD)/tests/tsan/threads-tsan)
# make tsan's scale: TSan makes single-threaded work 20-30 times slower, so
# the crash tests cut at the quick level's writes and fsx runs fewer operations.
TSAN_CRASH_LEVEL ?= quick
TSAN_FSX_OPS	?= 20000
TSAN_SUBMAKE	= $(SUBMAKE) BUILD=$(BUILD)/tsan CC=$(TSAN_CC) VARIANT_CFLAGS="$(TSAN_CFLAGS)" \
		  VARIANT_LDFLAGS="$(TSAN_LDFLAGS)"

CORE_SRCS	:= $(sort $(wildcard core/*.c))
GLUE_SRCS	:= $(sort $(wildcard user-glue/*.c))
LIB_SRCS	:= $(CORE_SRCS) $(sort $(wildcard engine/*.c engine/diag/*.c)) $(GLUE_SRCS)
TOOL_SRCS	:= $(sort $(wildcard tools/*.c))
COMMON_SRCS	:= $(sort $(wildcard tests/common/*.c))
UNIT_SRCS	:= $(sort $(wildcard tests/unit/test_*.c))
CRASH_SRCS	:= $(sort $(wildcard tests/crash/*.c))
STRESS_SRCS	:= $(sort $(wildcard tests/stress/*.c))
BENCH_SRCS	:= $(sort $(wildcard bench/*.c))
# Field fuzzing (tests/fieldfuzz/ffz.h): one program of several files.
FFZ_SRCS	:= $(sort $(wildcard tests/fieldfuzz/*.c))
# Fuzz targets (tests/fuzz/fuzz_*.c), what they share, the replay driver
# and the seed generator.
FZ_TARGET_SRCS	:= $(sort $(wildcard tests/fuzz/fuzz_*.c))
FZ_NAMES	:= $(FZ_TARGET_SRCS:tests/fuzz/fuzz_%.c=%)
FZ_COMMON_SRCS	:= tests/fuzz/fz_common.c tests/fuzz/fz_tree.c
FZ_ALL_SRCS	:= $(sort $(wildcard tests/fuzz/*.c))
ENGINE_SRCS	:= $(sort $(wildcard engine/*.c engine/diag/*.c))
# The swap core's own tests: they link the core, the glue and the in-memory
# host (tests/common/memhost.c), never the store.
CORE_TESTS	:= test_swap_core test_swaprange test_host_contract

OBJ		:= $(BUILD)/obj
LIB_OBJS	:= $(LIB_SRCS:%.c=$(OBJ)/%.o)
CORE_OBJS	:= $(CORE_SRCS:%.c=$(OBJ)/%.o)
GLUE_OBJS	:= $(GLUE_SRCS:%.c=$(OBJ)/%.o)
TOOL_OBJS	:= $(TOOL_SRCS:%.c=$(OBJ)/%.o)
COMMON_OBJS	:= $(COMMON_SRCS:%.c=$(OBJ)/%.o)
UNIT_OBJS	:= $(UNIT_SRCS:%.c=$(OBJ)/%.o)
CRASH_OBJS	:= $(CRASH_SRCS:%.c=$(OBJ)/%.o)
STRESS_OBJS	:= $(STRESS_SRCS:%.c=$(OBJ)/%.o)
BENCH_OBJS	:= $(BENCH_SRCS:%.c=$(OBJ)/%.o)
FFZ_OBJS	:= $(FFZ_SRCS:%.c=$(OBJ)/%.o)
FZ_TARGET_OBJS	:= $(FZ_TARGET_SRCS:%.c=$(OBJ)/%.o)
FZ_COMMON_OBJS	:= $(FZ_COMMON_SRCS:%.c=$(OBJ)/%.o)
FZ_ALL_OBJS	:= $(FZ_ALL_SRCS:%.c=$(OBJ)/%.o)

LIBA		:= $(BUILD)/libswapext.a
CORE_LIBA	:= $(BUILD)/libswapext-core.a
LIBSO		:= $(BUILD)/libswapext.so.$(SOVERSION)
LIBSO_LINK	:= $(BUILD)/libswapext.so
TOOL		:= $(BUILD)/swapext
PCFILE		:= $(BUILD)/swapext.pc

UNIT_BINS	:= $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/unit/%)
CORE_TEST_BINS	:= $(filter $(CORE_TESTS:%=$(BUILD)/tests/unit/%),$(UNIT_BINS))
STORE_UNIT_BINS	:= $(filter-out $(CORE_TEST_BINS),$(UNIT_BINS))
CRASH_BINS	:= $(CRASH_SRCS:tests/crash/%.c=$(BUILD)/tests/crash/%)
STRESS_BINS	:= $(STRESS_SRCS:tests/stress/%.c=$(BUILD)/tests/stress/%)
FFZ_BIN		:= $(if $(FFZ_SRCS),$(BUILD)/tests/fieldfuzz/fieldfuzz)
# make install into a scratch folder and a program built on what it installed
INSTALL_CHECK	:= $(BUILD)/tests/install/install-check
# scripts/ab.sh (interleaved A/B runs of two builds) against stand-ins
AB_CHECK	:= $(BUILD)/tests/bench/ab-check
# The fuzz corpus and every kept crasher through every target (tests/fuzz/fz_replay.c)
FZ_REPLAY	:= $(BUILD)/tests/fuzz/fz-replay
FZ_MKSEEDS	:= $(BUILD)/tests/fuzz/fz-mkseeds
FZ_REPLAY_TEST	:= $(BUILD)/tests/fuzz/fuzz-replay
# libFuzzer binaries: only in the fuzz variant build ($(BUILD)/fuzz)
FZ_FUZZ_BINS	:= $(FZ_NAMES:%=$(BUILD)/tests/fuzz/fuzz_%)
TEST_BINS	:= $(UNIT_BINS) $(CRASH_BINS) $(STRESS_BINS) $(FFZ_BIN) $(INSTALL_CHECK) $(AB_CHECK) \
		   $(FZ_REPLAY_TEST)
BENCH_BINS	:= $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)

PORT_DIR	:= $(BUILD)/portable
PORT_OBJS	:= $(CORE_SRCS:%.c=$(PORT_DIR)/%.o) $(ENGINE_SRCS:%.c=$(PORT_DIR)/%.o)
PORT_CORE_OBJS	:= $(CORE_SRCS:%.c=$(PORT_DIR)/%.o)
# Kernel constraints the user build would not catch: no FPU/SSE code, no
# VLAs, small stack frames.  -mgeneral-regs-only only where the compiler has it.
PORT_CFLAGS	:= -ffreestanding -fno-builtin -Wvla -Wframe-larger-than=2048 \
		   $(shell $(CC) -mgeneral-regs-only -x c -c /dev/null -o /dev/null \
			   2>/dev/null && echo -mgeneral-regs-only)

ALL_OBJS	:= $(LIB_OBJS) $(TOOL_OBJS) $(COMMON_OBJS) $(UNIT_OBJS) $(CRASH_OBJS) \
		   $(STRESS_OBJS) $(BENCH_OBJS) $(FFZ_OBJS) $(FZ_ALL_OBJS) \
		   $(OBJ)/tests/xfs/scen_store.o

# Rebuild everything when the compiler or flags change (git's GIT-CFLAGS trick).
FLAGS_STAMP	:= $(BUILD)/.flags
FLAGS_TEXT	= $(CC) $(ALL_CFLAGS) $(TEST_INCLUDES) | $(ALL_LDFLAGS) $(LDLIBS) $(TOOL_LDLIBS)

# Test-run environment (see scripts/run-tests.sh and README.md).
RUN_TESTS	= SX_CRASH_LEVEL='$(CRASH_LEVEL)' SX_TEST_SEED='$(TEST_SEED)' \
		  SX_FSX_OPS='$(FSX_OPS)' SX_THREADS_OPS='$(THREADS_OPS)' \
		  SX_TOOL='$(abspath $(TOOL))' \
		  SX_BUILD='$(abspath $(BUILD))' SX_VARIANT_CC='$(CC)' \
		  SX_VARIANT_CFLAGS='$(VARIANT_CFLAGS)' SX_VARIANT_LDFLAGS='$(VARIANT_LDFLAGS)' \
		  bash scripts/run-tests.sh --logdir '$(BUILD)/test-logs' \
		  --timeout '$(TEST_TIMEOUT)' --jobs '$(TEST_JOBS)' --filter '$(TESTS)' \
		  -- $(TEST_BINS)

DEPS		= $(if $(NODEPS),echo "deps: skipped (NODEPS set)",bash scripts/deps.sh $(1))

ASAN_ENV	:= ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1 \
		   LSAN_OPTIONS=print_suppressions=0
UBSAN_ENV	:= UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

.DEFAULT_GOAL	:= all
.DELETE_ON_ERROR:
.SECONDARY:
.SUFFIXES:

.PHONY: all lib tool tests test check demo crash-huge faults soak bench bench-quick bench-micro bench-xfs coverage asan \
	ubsan tsan threads-long check-portable install uninstall clean help deps fuzz fuzz-seeds \
	fieldfuzz FORCE

# ---------------------------------------------------------------- main targets

all: lib tool

lib: $(LIBA) $(CORE_LIBA) $(LIBSO) $(LIBSO_LINK)

tool: $(if $(TOOL_SRCS),$(TOOL),)

tests: $(TEST_BINS)

# Build and run the tests in $(BUILD) without the package check; kcheck and
# the thread stress under TSan are programs too (each prints "0 passed, 0
# failed, 1 skipped" and why when it cannot run).
test: lib tool tests $(KCHECK_BIN) $(XFSCHECK_BIN) $(TSAN_BIN)
	@$(if $(KCHECK_BIN),bash tests/kmod/kcheck.sh --probe $(BUILD) $(TOOL) || true)
	@$(if $(XFSCHECK_BIN),XFS_KO='$(XC_KO_ABS)' bash tests/xfs/xfscheck.sh --probe $(BUILD) \
		$(XC_GUEST) $(XC_STORE) || true)
	@$(if $(TSAN_BIN),bash scripts/tsan.sh probe $(TSAN_CC) || true)
	@$(RUN_TESTS) $(KCHECK_BIN) $(XFSCHECK_BIN) $(TSAN_BIN)

check:
	@$(call DEPS,test)
	@$(SUBMAKE) check-portable
	@$(SUBMAKE) test

demo:
	@$(call DEPS,build)
	@$(SUBMAKE) tool
	@mkdir -p $(dir $(DEMO_IMAGE))
	$(TOOL) demo $(DEMO_IMAGE)

deps:
	@bash scripts/deps.sh

# The 100,000-extent atomic swap cut at about 1,000 sampled device writes
# with the log's queue and 500 with a record per transaction, each
# recovered and verified (tests/crash/crash_swap.c, case "huge"): about 35
# minutes on 2 cores, so make check cuts it at 100 writes and this target,
# which .ci/run runs too, at the full count.
crash-huge:
	@$(call DEPS,test)
	@$(SUBMAKE) $(BUILD)/tests/crash/crash_swap
	SX_CRASH_LEVEL=long SX_SWAP_CASES=huge $(BUILD)/tests/crash/crash_swap

# The fault loop (tests/crash/fault_loop.c) at every N: each device read,
# write and flush and each allocation of every workload failing in turn,
# once and forever; make check samples about 50 points per workload, kind
# and mode.  Built with AddressSanitizer in the asan target's folder, so
# that a leak the loop's own count cannot see (memory not taken through
# sx_alloc(), or freed twice) fails it too: LeakSanitizer checks at exit
# and its report makes the exit status nonzero.
FAULTS_BUILD	:= $(BUILD)/asan
faults:
	@$(call DEPS,test)
	@$(SUBMAKE) BUILD=$(FAULTS_BUILD) \
		VARIANT_CFLAGS="-fsanitize=address -fno-omit-frame-pointer" \
		VARIANT_LDFLAGS="-fsanitize=address" $(FAULTS_BUILD)/tests/crash/fault_loop
	$(ASAN_ENV) SX_CRASH_LEVEL=long $(FAULTS_BUILD)/tests/crash/fault_loop

# The randomized tests (fsx, the seeded crash tests, the random unit tests)
# on fresh seeds until SOAK_SECONDS are up (scripts/soak.sh); make check
# runs them on fixed seeds only.  Failures are kept in $(BUILD)/soak/.
SOAK_SECONDS	?= 600
soak:
	@$(call DEPS,test)
	@$(call DEPS,kernel) || true
	@$(SUBMAKE) tests tool
	@SOAK_SECONDS=$(SOAK_SECONDS) $(if $(FSX_OPS),SX_FSX_OPS=$(FSX_OPS)) \
		bash scripts/soak.sh $(BUILD)

# make bench: swapext beside its peers in one run on the same filesystem
# (scripts/bench.sh, issue 17): durable atomic update, T threads, bulk swap
# and recovery; medians of interleaved runs in build/bench/ (raw.csv,
# summary.csv, results.md, PNG plots).  The XFS peers need root (loop
# mounts) and are skipped with the reason otherwise; as root the xfs group
# of scripts/deps.sh (xfsprogs, gnuplot) is installed first.  bench-quick
# is the same at small N and few updates, for CI: it fails only if a
# workload produced no figures or wrong contents, never on a figure.
# BENCH_N, BENCH_RUNS, BENCH_OPS, BENCH_THREADS, BENCH_BIG=1 (N = 1,000,000
# too) pass through.  bench/xfs/ is outside the bench/*.c wildcard: its
# programs need libc only.
XFS_BENCH	:= $(BUILD)/bench/xfs_exchange
XFS_UPDATE	:= $(BUILD)/bench/xfs_update
BENCH_ALL	:= $(BENCH_BINS) $(XFS_BENCH) $(XFS_UPDATE)
BENCH_DEPS	= $(call DEPS,$(if $(filter 0,$(shell id -u)),xfs,test))

bench bench-quick:
	@$(BENCH_DEPS)
	@$(SUBMAKE) $(BENCH_ALL)
	@bash scripts/bench.sh $(BUILD) $(if $(filter bench-quick,$@),quick,full)

# The micro-benchmarks on the memory device (CPU and journal cost, no
# disk), as make bench ran them before it became the harness above:
# bench_bmap and bench_swap with their defaults; BENCH_ARGS go to each.
BENCH_MICRO	:= $(filter %/bench_bmap %/bench_swap,$(BENCH_BINS))
bench-micro:
	@$(call DEPS,test)
	@$(SUBMAKE) $(BENCH_MICRO)
	@for b in $(BENCH_MICRO); do echo "== $$b $(BENCH_ARGS)"; $$b $(BENCH_ARGS) || exit 1; done

# swapext's swap next to Linux XFS's XFS_IOC_EXCHANGE_RANGE (scripts/bench-xfs.sh):
# root only, loop devices and mounts, so not part of check; make bench runs
# the same comparison among its workloads.
BENCH_XFS_N	?= 10000 100000
XFS_BENCH_SWAP	:= $(filter %/bench_swap,$(BENCH_BINS))

bench-xfs:
	@if [ "$$(id -u)" != 0 ]; then \
		echo "bench-xfs: needs root (mkfs.xfs on an image, a loop device, mount): sudo make bench-xfs" >&2; \
		exit 1; fi
	@$(call DEPS,xfs)
	@$(SUBMAKE) $(XFS_BENCH) $(XFS_BENCH_SWAP)
	@bash scripts/bench-xfs.sh $(BUILD) $(BENCH_XFS_N)

$(XFS_BENCH) $(XFS_UPDATE): $(BUILD)/bench/%: bench/xfs/%.c bench/xfs/sysstat.h $(FLAGS_STAMP)
	@mkdir -p $(@D)
	@echo "  CC+LD   $@"
	@$(CC) -std=gnu11 $(WARNFLAGS) $(CFLAGS) $(EXTRA_CFLAGS) $(ALL_LDFLAGS) -o $@ $< -lpthread

# Field fuzzing of golden images (tests/fieldfuzz/): every field of every
# on-disk and log object, eight transforms, CRC recomputed and stale, and a
# lost write of every metadata block, each mounted, worked on and checked,
# built with ASan and UBSan.  make check runs a sample (every 40th case)
# of the plain build.  FIELDFUZZ_ARGS go to the program (--every N,
# --only WORD, --case ID, --jobs N, --seed N; see its header).
FFZ_BUILD	:= $(BUILD)/fieldfuzz
FIELDFUZZ_ARGS	?=
fieldfuzz:
	@$(call DEPS,test)
	@$(SUBMAKE) BUILD=$(FFZ_BUILD) \
		VARIANT_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
		VARIANT_LDFLAGS="-fsanitize=address,undefined" $(FFZ_BUILD)/tests/fieldfuzz/fieldfuzz
	@rm -rf $(FFZ_BUILD)/logs && mkdir -p $(FFZ_BUILD)/logs
	@$(ASAN_ENV) $(UBSAN_ENV) $(FFZ_BUILD)/tests/fieldfuzz/fieldfuzz --all \
		--logdir $(FFZ_BUILD)/logs --report $(FFZ_BUILD)/report.md $(FIELDFUZZ_ARGS)

# ---------------------------------------------------------------- variants

COV_BUILD	:= $(BUILD)/coverage-obj
COV_HTML	:= $(BUILD)/coverage
# -fprofile-update=atomic: the thread tests run some functions a million
# times at once, and plain counters lose increments (a line that ran could
# be counted 0, as engine/item_refc.c's -EINVAL once was).
COV_CFLAGS	:= --coverage -fprofile-update=atomic -O0

coverage:
	@$(call DEPS,coverage)
	@rm -rf $(COV_HTML)
	@if [ -d $(COV_BUILD) ]; then find $(COV_BUILD) -name '*.gcda' -delete; fi
	@status=0; \
	$(SUBMAKE) BUILD=$(COV_BUILD) VARIANT_CFLAGS="$(COV_CFLAGS)" \
		VARIANT_LDFLAGS="--coverage" lib-static tool tests || exit 1; \
	$(SUBMAKE) BUILD=$(COV_BUILD) VARIANT_CFLAGS="$(COV_CFLAGS)" \
		VARIANT_LDFLAGS="--coverage" run-tests || status=$$?; \
	bash scripts/coverage.sh $(COV_BUILD) $(COV_HTML) || status=$$?; \
	exit $$status

asan:
	@$(call DEPS,test)
	@$(ASAN_ENV) $(SUBMAKE) BUILD=$(BUILD)/asan \
		VARIANT_CFLAGS="-fsanitize=address -fno-omit-frame-pointer" \
		VARIANT_LDFLAGS="-fsanitize=address" lib-static tool tests run-tests

ubsan:
	@$(call DEPS,test)
	@$(UBSAN_ENV) $(SUBMAKE) BUILD=$(BUILD)/ubsan \
		VARIANT_CFLAGS="-fsanitize=undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
		VARIANT_LDFLAGS="-fsanitize=undefined" lib-static tool tests run-tests

# The tests built with clang's ThreadSanitizer in $(BUILD)/tsan and run, at
# TSAN_CRASH_LEVEL and TSAN_FSX_OPS; a TSan report fails the program that made
# it (TSan's exit status 66).
tsan:
	@$(call DEPS,tsan)
	@bash scripts/tsan.sh probe $(TSAN_CC) || { echo "tsan: cannot run here" >&2; exit 1; }
	@TSAN_OPTIONS='$(TSAN_OPTS)' $(TSAN_SUBMAKE) CRASH_LEVEL=$(TSAN_CRASH_LEVEL) \
		FSX_OPS=$(TSAN_FSX_OPS) lib-static tool tests run-tests

# The thread stress, long: THREADS_LONG_OPS operations per thread and phase
# in the plain build, a tenth of them under TSan (skipped, with the reason,
# when TSan cannot run here).
threads-long:
	@$(call DEPS,test)
	@$(SUBMAKE) $(BUILD)/tests/stress/threads $(BUILD)/tests/tsan/threads-tsan
	SX_THREADS_OPS=$(THREADS_LONG_OPS) $(BUILD)/tests/stress/threads
	TSAN_OPTIONS='$(TSAN_OPTS)' SX_TSAN_THREADS_OPS=$$(($(THREADS_LONG_OPS) / 10)) \
		$(BUILD)/tests/tsan/threads-tsan

# Internal helpers for the variant builds.
.PHONY: lib-static run-tests tsan-threads-bin
lib-static: $(LIBA)

# The thread stress with TSan in $(BUILD)/tsan (scripts/tsan.sh stress).
tsan-threads-bin:
	@$(TSAN_SUBMAKE) $(BUILD)/tsan/tests/stress/threads

run-tests: tool tests
	@$(RUN_TESTS)

# ---------------------------------------------------------------- fuzzing

# make fuzz: every target of tests/fuzz/ under libFuzzer with ASan and UBSan
# for FUZZ_SECONDS each (0: replay the checked-in inputs once), from its
# checked-in corpus (tests/fuzz/corpus/) and kept crashers
# (tests/fuzz/crashers/) into a working corpus in $(FUZZ_BUILD)/corpus/;
# what crashes, leaks, hangs or allocates too much is copied to
# tests/fuzz/crashers/<target>/ (scripts/fuzz.sh).  The library is a variant
# build in $(FUZZ_BUILD) with -fsanitize=fuzzer-no-link.  Without clang's
# libFuzzer the corpus is only replayed.
FUZZ_SECONDS	?= 60
FUZZ_TARGETS	?= $(FZ_NAMES)
FUZZ_CC		?= clang
FUZZ_SAN	:= -fsanitize=address,undefined -fno-sanitize-recover=undefined \
		   -fno-omit-frame-pointer
FUZZ_BUILD	:= $(BUILD)/fuzz
# Lazily: only the fuzz target pays for the probe.
FUZZ_HAVE	= $(shell printf 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }\n' | \
		    $(FUZZ_CC) -fsanitize=fuzzer,address,undefined -x c - -o /dev/null \
		    2>/dev/null && echo 1)

fuzz:
	@$(call DEPS,test)
	@if [ "$(FUZZ_HAVE)" = 1 ]; then \
		$(SUBMAKE) BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) \
			VARIANT_CFLAGS="$(FUZZ_SAN) -fsanitize=fuzzer-no-link -DFZ_LIBFUZZER" \
			VARIANT_LDFLAGS="$(FUZZ_SAN)" fuzz-bins || exit 1; \
		bash scripts/fuzz.sh --build '$(FUZZ_BUILD)' --seconds '$(FUZZ_SECONDS)' \
			$(FUZZ_TARGETS); \
	else \
		$(SUBMAKE) $(FZ_REPLAY) || exit 1; \
		bash scripts/fuzz.sh --replay '$(FZ_REPLAY)' $(FUZZ_TARGETS); \
	fi

# Regenerate the seed corpus from images and logs the engine makes.  The
# fuzzed-* inputs (what make fuzz found that reaches new edges, minimized
# with libFuzzer's -merge=1; README "Fuzzing") are not generated: they stay.
fuzz-seeds: $(FZ_MKSEEDS)
	find tests/fuzz/corpus -type f ! -name 'fuzzed-*' -delete 2>/dev/null || true
	$(FZ_MKSEEDS) tests/fuzz/corpus

.PHONY: fuzz-bins
fuzz-bins: $(FZ_FUZZ_BINS)

$(FZ_FUZZ_BINS): $(BUILD)/tests/fuzz/fuzz_%: $(OBJ)/tests/fuzz/fuzz_%.o $(FZ_COMMON_OBJS) $(LIBA)
	@mkdir -p $(@D)
	@echo "  LD      $@ (libFuzzer)"
	@$(CC) -fsanitize=fuzzer $(ALL_LDFLAGS) -o $@ $< $(FZ_COMMON_OBJS) $(LIBA) $(LDLIBS)

$(FZ_REPLAY): $(OBJ)/tests/fuzz/fz_replay.o $(OBJ)/tests/fuzz/fz_selftest.o $(FZ_TARGET_OBJS) \
	      $(FZ_COMMON_OBJS) $(LIBA)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	@$(CC) $(ALL_LDFLAGS) -o $@ $< $(OBJ)/tests/fuzz/fz_selftest.o $(FZ_TARGET_OBJS) \
		$(FZ_COMMON_OBJS) $(LIBA) $(LDLIBS)

$(FZ_MKSEEDS): $(OBJ)/tests/fuzz/fz_mkseeds.o $(FZ_COMMON_OBJS) $(LIBA)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	@$(CC) $(ALL_LDFLAGS) -o $@ $< $(FZ_COMMON_OBJS) $(LIBA) $(LDLIBS)

# The replay as a test program of run-tests.sh: built as the other tests
# are (plain in make check, sanitized in make asan and make ubsan), it runs
# the checked-in corpus and crashers through every target in a second.
$(FZ_REPLAY_TEST): $(FZ_REPLAY)
	@printf '%s\n' '#!/bin/sh' \
		'exec "$(abspath $(FZ_REPLAY))" "$(CURDIR)/tests/fuzz" "$$@"' > $@.tmp
	@chmod +x $@.tmp && mv $@.tmp $@

# ---------------------------------------------------------------- kernel module

.PHONY: kmod kcheck xfsmod

# The module: engine/*.c + kernel-glue/*.c (kernel-glue/Kbuild) in $(KMOD_DIR).
kmod:
	@$(call DEPS,kernel)
	@SX_DEBUG=$(DEBUG) bash scripts/kmod.sh build $(KMOD_DIR)

# Linux 6.1's XFS with the swap core and its binding (kernel-glue/xfs/):
# $(BUILD)/xfsmod/xfs.ko.  Exit 0 also when skipped (the reason is printed).
xfsmod:
	@$(call DEPS,xfsmod) || true
	@bash scripts/xfsmod.sh $(BUILD); rc=$$?; [ $$rc = 0 ] || [ $$rc = 77 ]

# Boot it: exit 0 also when skipped (the reason is printed).
kcheck:
	@$(call DEPS,kernel) || true
	@$(SUBMAKE) tool
	@bash tests/kmod/kcheck.sh $(BUILD) $(TOOL); rc=$$?; [ $$rc = 0 ] || [ $$rc = 77 ]

# FISWAPRANGE in XFS under qemu: exit 0 also when skipped (the reason is printed).
.PHONY: xfscheck
xfscheck:
	@$(call DEPS,kernel) || true
	@$(call DEPS,xfs) || true
	@$(SUBMAKE) $(XC_GUEST) $(XC_STORE)
	@XFS_KO='$(XC_KO_ABS)' bash tests/xfs/xfscheck.sh $(BUILD) $(XC_GUEST) $(XC_STORE); \
		rc=$$?; [ $$rc = 0 ] || [ $$rc = 77 ]

# The guest program: libc only, static (the initramfs has no libraries).
$(XC_GUEST): $(XC_GUEST_SRCS) $(wildcard tests/xfs/*.h) tests/common/sxb.h \
	     tests/common/fsr_cases.h include/swapext/fsr.h $(FLAGS_STAMP)
	@mkdir -p $(@D)
	@echo "  CC+LD   $@ (static)"
	@$(CC) -static -std=gnu11 $(WARNFLAGS) -O2 -Iinclude -Itests/common -Itests/xfs \
		-o $@ $(XC_GUEST_SRCS)

$(XC_STORE): $(OBJ)/tests/xfs/scen_store.o $(COMMON_OBJS) $(LIBA)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	@$(CC) $(ALL_LDFLAGS) -o $@ $< $(COMMON_OBJS) $(LIBA) $(TEST_LDLIBS)

# The install check as a test program of run-tests.sh.
$(INSTALL_CHECK): tests/install/install-check.sh
	@mkdir -p $(@D)
	@printf '%s\n' '#!/bin/sh' 'cd "$(CURDIR)" && exec bash tests/install/install-check.sh "$(abspath $(BUILD))"' > $@
	@chmod +x $@

# The A/B script's check as a test program of run-tests.sh.
$(AB_CHECK): tests/bench/ab-check.sh scripts/ab.sh
	@mkdir -p $(@D)
	@printf '%s\n' '#!/bin/sh' 'cd "$(CURDIR)" && exec bash tests/bench/ab-check.sh scripts/ab.sh' > $@
	@chmod +x $@

# The thread stress under TSan as a test program of run-tests.sh.
$(BUILD)/tests/tsan/threads-tsan: scripts/tsan.sh
	@mkdir -p $(@D)
	@printf '%s\n' '#!/bin/sh' 'cd "$(CURDIR)" || exit 1' \
		'export TSAN_OPTIONS="$${TSAN_OPTIONS:-$(TSAN_OPTS)}"' \
		'exec bash scripts/tsan.sh stress "$(abspath $(BUILD))" "$(TSAN_CC)"' > $@
	@chmod +x $@

# kcheck as a test program of run-tests.sh: a skip is "1 skipped", not a failure.
$(BUILD)/tests/kmod/kcheck: tests/kmod/kcheck.sh
	@mkdir -p $(@D)
	@printf '%s\n' '#!/bin/sh' \
		'bash "$(CURDIR)/tests/kmod/kcheck.sh" "$(abspath $(BUILD))" "$(abspath $(TOOL))"' \
		'rc=$$?; [ $$rc = 77 ] && { echo "0 passed, 0 failed, 1 skipped"; exit 0; }; exit $$rc' > $@
	@chmod +x $@

# xfscheck as a test program of run-tests.sh: a skip is "1 skipped", not a failure.
$(BUILD)/tests/xfs/xfscheck: tests/xfs/xfscheck.sh $(XC_GUEST) $(XC_STORE)
	@mkdir -p $(@D)
	@printf '%s\n' '#!/bin/sh' \
		'export XFS_KO="$(XC_KO_ABS)"' \
		'bash "$(CURDIR)/tests/xfs/xfscheck.sh" "$(abspath $(BUILD))" "$(abspath $(XC_GUEST))" "$(abspath $(XC_STORE))"' \
		'rc=$$?; [ $$rc = 77 ] && { echo "0 passed, 0 failed, 1 skipped"; exit 0; }; exit $$rc' > $@
	@chmod +x $@

# ---------------------------------------------------------------- portability

# Includes first (clear messages), then the freestanding compile, then the
# external symbols of the objects.
check-portable:
	@bash scripts/check-portable.sh sources
	@$(SUBMAKE) portable-objs
	@bash scripts/check-portable.sh symbols $(PORT_OBJS)
	@bash scripts/check-portable.sh core $(PORT_CORE_OBJS)

.PHONY: portable-objs
portable-objs: $(PORT_OBJS)

$(PORT_OBJS): $(PORT_DIR)/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	@echo "  CC [portable] $<"
	@$(CC) $(ALL_CFLAGS) $(PORT_CFLAGS) $(DEPFLAGS) -c -o $@ $<

# ---------------------------------------------------------------- rules

$(FLAGS_STAMP): FORCE
	@mkdir -p $(@D)
	@echo '$(FLAGS_TEXT)' | cmp -s - $@ 2>/dev/null || echo '$(FLAGS_TEXT)' > $@

$(OBJ)/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -c -o $@ $<

$(OBJ)/tests/%.o: tests/%.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) $(TEST_INCLUDES) $(DEPFLAGS) -c -o $@ $<

$(OBJ)/bench/%.o: bench/%.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) $(TEST_INCLUDES) $(DEPFLAGS) -c -o $@ $<

$(LIBA): $(LIB_OBJS)
	@mkdir -p $(@D)
	@echo "  AR      $@"
	@rm -f $@
	@$(AR) rcs $@ $(LIB_OBJS)

# The swap core alone: what another filesystem links (with its own glue).
$(CORE_LIBA): $(CORE_OBJS)
	@mkdir -p $(@D)
	@echo "  AR      $@"
	@rm -f $@
	@$(AR) rcs $@ $(CORE_OBJS)

# Every symbol of the shared library resolved at its link (-z defs), but
# in a TSan build: clang puts the TSan runtime only into executables.
SO_ZDEFS	= $(if $(findstring -fsanitize=thread,$(VARIANT_LDFLAGS)),,-Wl,-z,defs)

$(LIBSO): $(LIB_OBJS)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	@$(CC) -shared -Wl,-soname,$(notdir $@) $(SO_ZDEFS) $(ALL_LDFLAGS) \
		-o $@ $(LIB_OBJS) $(LDLIBS)

$(LIBSO_LINK): $(LIBSO)
	@ln -sf $(notdir $<) $@

$(TOOL): $(TOOL_OBJS) $(LIBA)
	@echo "  LD      $@"
	@$(CC) $(ALL_LDFLAGS) -o $@ $(TOOL_OBJS) $(LIBA) $(LDLIBS) $(TOOL_LDLIBS)

$(STORE_UNIT_BINS): $(BUILD)/tests/unit/%: $(OBJ)/tests/unit/%.o $(COMMON_OBJS) $(LIBA)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	@$(CC) $(ALL_LDFLAGS) -o $@ $< $(COMMON_OBJS) $(LIBA) $(TEST_LDLIBS)

$(CORE_TEST_BINS): $(BUILD)/tests/unit/%: $(OBJ)/tests/unit/%.o $(OBJ)/tests/common/memhost.o \
		   $(CORE_LIBA) $(GLUE_OBJS)
	@mkdir -p $(@D)
	@echo "  LD      $@ (core only)"
	@$(CC) $(ALL_LDFLAGS) -o $@ $< $(OBJ)/tests/common/memhost.o $(CORE_LIBA) \
		$(GLUE_OBJS) $(TEST_LDLIBS)

$(CRASH_BINS): $(BUILD)/tests/crash/%: $(OBJ)/tests/crash/%.o $(COMMON_OBJS) $(LIBA)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	@$(CC) $(ALL_LDFLAGS) -o $@ $< $(COMMON_OBJS) $(LIBA) $(TEST_LDLIBS)

$(BENCH_BINS): $(BUILD)/bench/%: $(OBJ)/bench/%.o $(COMMON_OBJS) $(LIBA)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	@$(CC) $(ALL_LDFLAGS) -o $@ $< $(COMMON_OBJS) $(LIBA) $(TEST_LDLIBS)

# The engine's clock is wrapped (tests/fieldfuzz/golden.c): the golden
# images come out the same on every run.
$(FFZ_BIN): $(FFZ_OBJS) $(COMMON_OBJS) $(LIBA)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	@$(CC) $(ALL_LDFLAGS) -Wl,--wrap=sx_wall_ns -o $@ $(FFZ_OBJS) $(COMMON_OBJS) $(LIBA) \
		$(TEST_LDLIBS)

$(STRESS_BINS): $(BUILD)/tests/stress/%: $(OBJ)/tests/stress/%.o $(COMMON_OBJS) $(LIBA)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	@$(CC) $(ALL_LDFLAGS) -o $@ $< $(COMMON_OBJS) $(LIBA) $(TEST_LDLIBS)

$(PCFILE): swapext.pc.in FORCE
	@mkdir -p $(@D)
	@sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	     -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(VERSION)|g' \
	     $< > $@.tmp && mv $@.tmp $@

FORCE:

# ---------------------------------------------------------------- install

# The application API: fixed-width C types only (<swapext/types.h>).  The
# platform contract, the store's formats and the core's host boundary
# (platform.h, format.h, swap_log.h, host.h) are for code built with a
# platform glue in this tree, and are not installed.
PUB_HEADERS	:= $(addprefix include/swapext/,types.h bdev.h swapext.h fsr.h device.h \
		     swapext_compat.h kctl.h selftest.h version.h)

install: all $(PCFILE)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) \
		$(DESTDIR)$(INCLUDEDIR)/swapext $(DESTDIR)$(PKGCONFIGDIR)
	install -m 0644 $(LIBA) $(DESTDIR)$(LIBDIR)/
	install -m 0755 $(LIBSO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(LIBSO)) $(DESTDIR)$(LIBDIR)/libswapext.so
	$(if $(TOOL_SRCS),install -m 0755 $(TOOL) $(DESTDIR)$(BINDIR)/)
	install -m 0644 $(PUB_HEADERS) $(DESTDIR)$(INCLUDEDIR)/swapext/
	install -m 0644 $(PCFILE) $(DESTDIR)$(PKGCONFIGDIR)/swapext.pc
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then \
		ldconfig; fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/swapext
	rm -f $(DESTDIR)$(LIBDIR)/libswapext.a $(DESTDIR)$(LIBDIR)/libswapext.so \
		$(DESTDIR)$(LIBDIR)/$(notdir $(LIBSO))
	rm -f $(addprefix $(DESTDIR)$(INCLUDEDIR)/swapext/,$(notdir $(PUB_HEADERS)))
	-rmdir $(DESTDIR)$(INCLUDEDIR)/swapext 2>/dev/null
	rm -f $(DESTDIR)$(PKGCONFIGDIR)/swapext.pc

# ---------------------------------------------------------------- misc

clean:
	rm -rf $(BUILD)

help:
	@echo "Targets:"
	@echo "  all (default)   $(LIBA), $(LIBSO) (+ libswapext.so), $(TOOL)"
	@echo "  check           deps, check-portable, build and run every test program"
	@echo "  test            build and run the tests only (no deps, no check-portable)"
	@echo "  demo            build and run '$(TOOL) demo DEMO_IMAGE': an atomic update, a crashed swap"
	@echo "  crash-huge      the 100,000-extent swap cut at 1,000 + 500 writes (~35 min)"
	@echo "  faults          the fault loop at every N under ASan: each I/O and allocation failing"
	@echo "  soak            fsx and the seeded tests with fresh seeds for SOAK_SECONDS (now: $(SOAK_SECONDS))"
	@echo "  bench, bench-quick  swapext beside XFS (root: loop mounts) and the fdatasync floor; build/bench/results.md"
	@echo "  bench-micro     bench_bmap and bench_swap on the memory device (BENCH_ARGS go to each)"
	@echo "  bench-xfs       (root) swapext's swap next to XFS_IOC_EXCHANGE_RANGE on a loop device"
	@echo "  xfscheck        FISWAPRANGE in XFS_KO=$(XFS_KO) under qemu (XFS_KO=stock: Debian's)"
	@echo "  coverage        tests built with --coverage in $(COV_BUILD); HTML in $(COV_HTML)"
	@echo "  asan, ubsan     tests under sanitizers in $(BUILD)/asan, $(BUILD)/ubsan"
	@echo "  fieldfuzz       every field of golden images damaged 8 ways, under ASan+UBSan"
	@echo "                  (FIELDFUZZ_ARGS; figures in $(BUILD)/fieldfuzz/report.md)"
	@echo "  tsan            tests under ThreadSanitizer (TSAN_CC=$(TSAN_CC)) in $(BUILD)/tsan"
	@echo "  threads-long    the thread stress, THREADS_LONG_OPS=$(THREADS_LONG_OPS), plain and TSan"
	@echo "  check-portable  engine/ includes and freestanding compile"
	@echo "  fuzz            libFuzzer targets of tests/fuzz/ under ASan+UBSan, FUZZ_SECONDS each (now: $(FUZZ_SECONDS))"
	@echo "  fuzz-seeds      regenerate tests/fuzz/corpus/ from images the engine makes"
	@echo "  kmod            $(KMOD_DIR)/swapext.ko for Debian's Linux 6.1 (KVER=, KDIR= override)"
	@echo "  kcheck          the module under qemu: selftest, attach, work, shutdown, recovery"
	@echo "  xfsmod          $(BUILD)/xfsmod/xfs.ko: Linux 6.1's XFS with the swap core (FISWAPRANGE)"
	@echo "  install         PREFIX=$(PREFIX) DESTDIR=; uninstall removes the same files"
	@echo "  deps            install (root) or list missing Debian packages"
	@echo "  clean           remove $(BUILD)/"
	@echo "Variables:"
	@echo "  CRASH_LEVEL=quick|normal|long  exported as SX_CRASH_LEVEL (now: $(CRASH_LEVEL))"
	@echo "  TEST_SEED=N                    exported as SX_TEST_SEED: the randomized tests run seed N"
	@echo "                                 instead of their fixed seeds"
	@echo "  TESTS='log crc'                run only programs whose name contains a word"
	@echo "  FSX_OPS=N                      operations of the fsx stress test (default 100000)"
	@echo "  THREADS_OPS=N                  thread stress: operations per thread and phase (1000)"
	@echo "  TSAN=0                         make check/test without the thread stress under TSan"
	@echo "  TEST_TIMEOUT=S                 per-program timeout in seconds (now: $(TEST_TIMEOUT))"
	@echo "  TEST_JOBS=N                    test programs run at once (now: $(TEST_JOBS))"
	@echo "  DEMO_IMAGE=PATH                image for 'make demo' (now: $(DEMO_IMAGE))"
	@echo "  BENCH_XFS_N='N ...'            extents per file for bench-xfs (now: $(BENCH_XFS_N))"
	@echo "  BENCH_N, BENCH_RUNS, BENCH_OPS, BENCH_THREADS, BENCH_BIG=1  make bench's sizes (scripts/bench.sh)"
	@echo "  FUZZ_SECONDS=S, FUZZ_TARGETS='sb log ...'  make fuzz: time per target, which targets"
	@echo "  NODEPS=1                       skip scripts/deps.sh"
	@echo "  KCHECK=0                       make check/test without kcheck"
	@echo "  DEBUG=0                        build without ASSERT (SX_DEBUG)"
	@echo "  CC, CFLAGS, LDFLAGS, EXTRA_CFLAGS, BUILD, PREFIX, LIBDIR, DESTDIR"

-include $(ALL_OBJS:.o=.d) $(PORT_OBJS:.o=.d)
