#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Build the kernel module against Debian's 6.1 headers.
#
# usage: kmod.sh kver                 print the kernel version to build for
#        kmod.sh build KMOD_DIR       build KMOD_DIR/swapext.ko
#        kmod.sh consumer KMOD_DIR OUT_DIR
#                                     build OUT_DIR/sxuser.ko (tests/kmod/consumer),
#                                     a module that uses swapext.ko's exports
#
# The kernel version is $KVER if set, else the newest 6.1 "-amd64" flavour
# whose headers are installed (/usr/src/linux-headers-6.1.*-amd64),
# preferring one whose /boot/vmlinuz is installed too (kcheck boots it).
# $KDIR overrides the headers directory.  Exit status 3: no headers.

set -euo pipefail

srcdir=$(cd "$(dirname "$0")/.." && pwd)

# find_kver: the version string, or nothing
find_kver() {
	local d v best="" booted=""
	if [ -n "${KVER:-}" ]; then
		echo "$KVER"
		return
	fi
	for d in $(ls -d /usr/src/linux-headers-6.1*-amd64 2>/dev/null | sort -V); do
		[ -f "$d/Makefile" ] || continue
		v=${d#/usr/src/linux-headers-}
		best=$v
		[ -f "/boot/vmlinuz-$v" ] && booted=$v
	done
	echo "${booted:-$best}"
}

cmd=${1:-}
case "$cmd" in
kver)
	find_kver
	;;
build)
	out=${2:?usage: kmod.sh build KMOD_DIR}
	kver=$(find_kver)
	kdir=${KDIR:-/usr/src/linux-headers-$kver}
	if [ -z "$kver" ] || [ ! -f "$kdir/Makefile" ]; then
		echo "kmod: no Linux 6.1 amd64 headers in /usr/src (install linux-headers-amd64)" >&2
		exit 3
	fi
	mkdir -p "$out/core" "$out/engine/diag" "$out/kernel-glue" "$out/generated"
	out=$(cd "$out" && pwd)
	# links to the sources of today: stale ones (a removed file) go
	find "$out/core" "$out/engine" "$out/kernel-glue" -maxdepth 2 -type l -name '*.c' -delete
	for f in "$srcdir"/core/*.c; do ln -sf "$f" "$out/core/"; done
	for f in "$srcdir"/engine/*.c; do ln -sf "$f" "$out/engine/"; done
	for f in "$srcdir"/engine/diag/*.c; do ln -sf "$f" "$out/engine/diag/"; done
	for f in "$srcdir"/kernel-glue/*.c; do ln -sf "$f" "$out/kernel-glue/"; done
	ln -sf "$srcdir/kernel-glue/Kbuild" "$out/Kbuild"
	bash "$srcdir/kernel-glue/gen-api.sh" "$srcdir/include" "$srcdir"/core/*.c \
		"$srcdir"/engine/*.c "$srcdir"/engine/diag/selftest.c \
		"$srcdir"/engine/diag/check.c > "$out/generated/sx_api.h.tmp"
	if cmp -s "$out/generated/sx_api.h.tmp" "$out/generated/sx_api.h"; then
		rm -f "$out/generated/sx_api.h.tmp"
	else
		mv "$out/generated/sx_api.h.tmp" "$out/generated/sx_api.h"
	fi
	echo "kmod: building swapext.ko for $kver in $out"
	# inside a make -j the jobserver already decides; else use every CPU
	jobs=-j"$(nproc)"
	case " ${MAKEFLAGS:-} " in *jobserver*|*" -j"*) jobs="" ;; esac
	# shellcheck disable=SC2086
	make -C "$kdir" M="$out" SX_SRC="$srcdir" SX_GEN="$out/generated" \
		SX_DEBUG="${SX_DEBUG:-1}" $jobs modules
	echo "kmod: $out/swapext.ko"
	;;
consumer)
	kmoddir=$(cd "${2:?usage: kmod.sh consumer KMOD_DIR OUT_DIR}" && pwd)
	out=${3:?usage: kmod.sh consumer KMOD_DIR OUT_DIR}
	kver=$(find_kver)
	kdir=${KDIR:-/usr/src/linux-headers-$kver}
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	ln -sf "$srcdir/tests/kmod/consumer/sxuser.c" "$out/sxuser.c"
	ln -sf "$srcdir/tests/kmod/consumer/Kbuild" "$out/Kbuild"
	make -C "$kdir" M="$out" SX_SRC="$srcdir" \
		KBUILD_EXTRA_SYMBOLS="$kmoddir/Module.symvers" modules
	;;
*)
	sed -n '3,16p' "$0" >&2
	exit 2
	;;
esac
