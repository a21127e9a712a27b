#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# ThreadSanitizer: whether it works here, and the thread stress under it.
#
# usage: tsan.sh probe [CC]          say whether CC (default clang) builds and
#                                    runs a -fsanitize=thread program with
#                                    liburcu; exit 0, or 77 with the reason
#        tsan.sh stress BUILD [CC]   make check's program: build the library
#                                    and tests/stress/threads.c with TSan in
#                                    BUILD/tsan and run it; "0 passed, 0 failed,
#                                    1 skipped" and the reason when TSan cannot
#                                    run here
#
# The stress runs SX_TSAN_THREADS_OPS operations per thread and phase
# (default 250; the plain build's default is 1000) with the caller's
# TSAN_OPTIONS (the Makefile's TSAN_OPTS: user-glue/tsan.supp ...).  A
# TSan report makes the program exit 66, which run-tests.sh counts as a
# failure even after a clean summary.

set -uo pipefail

srcdir=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-}
shift || true

# Sets $why and fails when TSan cannot build or run a program with CC.
probe() {
	local cc=$1 tmp
	why=""
	if ! command -v "$cc" > /dev/null 2>&1; then
		why="no $cc (apt-get install clang)"
		return 1
	fi
	tmp=$(mktemp -d)
	cat > "$tmp/p.c" <<'EOF'
#include <pthread.h>
#include <urcu/urcu-memb.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int shared;

static void *work(void *arg)
{
	urcu_memb_register_thread();
	pthread_mutex_lock(&lock);
	shared++;
	pthread_mutex_unlock(&lock);
	urcu_memb_unregister_thread();
	return arg;
}

int main(void)
{
	pthread_t t;

	pthread_create(&t, NULL, work, NULL);
	work(NULL);
	pthread_join(t, NULL);
	return shared != 2;
}
EOF
	if ! "$cc" -fsanitize=thread -g -o "$tmp/p" "$tmp/p.c" -lurcu-memb -lpthread \
			> "$tmp/err" 2>&1; then
		why="$cc -fsanitize=thread cannot build a program here (the TSan runtime is in"
		why="$why libclang-rt-N-dev on Debian 12): $(grep -m1 . "$tmp/err" || echo "$cc failed")"
		rm -rf "$tmp"
		return 1
	fi
	if ! TSAN_OPTIONS= "$tmp/p" > "$tmp/out" 2>&1; then
		why="a -fsanitize=thread program does not run here: $(head -n 2 "$tmp/out" | tr '\n' ' ')"
		rm -rf "$tmp"
		return 1
	fi
	rm -rf "$tmp"
	return 0
}

case "$mode" in
probe)
	cc=${1:-clang}
	if probe "$cc"; then
		echo "tsan: will run: $cc -fsanitize=thread works"
		exit 0
	fi
	echo "tsan: SKIPPED: $why"
	exit 77
	;;
stress)
	build=${1:?usage: tsan.sh stress BUILD [CC]}
	cc=${2:-clang}
	if ! probe "$cc"; then
		echo "threads-tsan: SKIPPED: $why"
		echo "0 passed, 0 failed, 1 skipped"
		exit 0
	fi
	log=$build/tsan/build-threads.log
	mkdir -p "$build/tsan"
	echo "threads-tsan: building the library and tests/stress/threads.c with" \
	     "$cc -fsanitize=thread in $build/tsan (log: $log)"
	# a make of its own: not the jobserver of the make check that runs us
	if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -C "$srcdir" \
			NODEPS=1 BUILD="$build" TSAN_CC="$cc" tsan-threads-bin > "$log" 2>&1; then
		tail -n 30 "$log"
		echo "threads-tsan: the TSan build failed"
		echo "0 passed, 1 failed"
		exit 1
	fi
	echo "threads-tsan: TSAN_OPTIONS=${TSAN_OPTIONS:-}"
	SX_THREADS_OPS=${SX_TSAN_THREADS_OPS:-250} exec "$build/tsan/tests/stress/threads"
	;;
*)
	sed -n '3,19p' "$0"
	exit 2
	;;
esac
