#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Build Linux 6.1's XFS with the swap core in it: BUILD/xfsmod/xfs.ko.
#
# usage: xfsmod.sh BUILD_DIR            build BUILD_DIR/xfsmod/xfs.ko
#        xfsmod.sh --probe BUILD_DIR    only say whether it can build (exit 0 or 77)
#
# Takes fs/xfs from Debian's linux-source-6.1 (/usr/src/linux-source-6.1.tar.xz),
# applies kernel-glue/xfs/xfs-6.1.patch (the hooks: log item and deferred-op
# types, the log-incompat bit, recovery and ioctl entries, the unwritten-extent
# fix of xfs_bmap_finish_one), links the swap core (core/*.c, unchanged) and
# the binding (kernel-glue/xfs/*.c) into fs/xfs/sx/, and builds xfs.ko out of
# tree against the matching linux-headers (-Werror on our files only), then
# strips its debug information.
#
# The extracted tree is BUILD/xfsmod/xfs; a pristine copy stays in
# BUILD/xfsmod/pristine so that a changed patch re-applies to the files it
# touches only (the others keep their times: the rebuild is incremental).
# $KVER / $KDIR choose the headers as in scripts/kmod.sh; $XFS_SRC_TAR the
# source tarball.  Exit status: 0 built, 1 build failed, 77 something is
# missing (the reason is printed; `make deps` or `scripts/deps.sh xfsmod` as
# root installs it).

set -euo pipefail

srcdir=$(cd "$(dirname "$0")/.." && pwd)
probe=0
if [ "${1:-}" = --probe ]; then
	probe=1
	shift
fi
build=${1:?usage: xfsmod.sh [--probe] BUILD_DIR}
tarball=${XFS_SRC_TAR:-/usr/src/linux-source-6.1.tar.xz}
patchfile=$srcdir/kernel-glue/xfs/xfs-6.1.patch

skip() { echo "xfsmod: SKIPPED: $*"; exit 77; }

kver=$(bash "$srcdir/scripts/kmod.sh" kver)
kdir=${KDIR:-/usr/src/linux-headers-$kver}
[ -n "$kver" ] && [ -f "$kdir/Makefile" ] ||
	skip "no Linux 6.1 amd64 headers in /usr/src (apt-get install linux-headers-amd64)"
[ -r "$tarball" ] || skip "no $tarball (apt-get install linux-source-6.1)"
command -v patch > /dev/null || skip "no patch (apt-get install patch)"
command -v xz > /dev/null || skip "no xz (apt-get install xz-utils)"
# fs/xfs must come from the kernel the headers describe: Debian's versions
# of the two packages must agree
if command -v dpkg-query > /dev/null; then
	srcver=$(dpkg-query -W -f '${Version}' linux-source-6.1 2> /dev/null || true)
	hdrver=$(dpkg-query -W -f '${Version}' "linux-headers-$kver" 2> /dev/null || true)
	if [ -n "$srcver" ] && [ -n "$hdrver" ] && [ "$srcver" != "$hdrver" ]; then
		skip "linux-source-6.1 $srcver does not match linux-headers-$kver $hdrver" \
		     "(apt-get install linux-source-6.1 linux-headers-amd64 linux-image-amd64)"
	fi
fi
if [ "$probe" = 1 ]; then
	echo "xfsmod: will build: fs/xfs of $tarball against $kdir"
	exit 0
fi

mkdir -p "$build/xfsmod"
out=$(cd "$build/xfsmod" && pwd)
start=$(date +%s)

# the pristine fs/xfs, extracted once per tarball
stamp="$(stat -c '%s %Y' "$tarball") $kver"
if [ ! -f "$out/pristine.stamp" ] || [ "$(cat "$out/pristine.stamp")" != "$stamp" ]; then
	echo "xfsmod: extracting fs/xfs from $tarball"
	rm -rf "$out/pristine" "$out/xfs" "$out/applied.patch" "$out/pristine.stamp"
	mkdir -p "$out/pristine"
	tar -xJf "$tarball" -C "$out/pristine" --strip-components=2 \
		--wildcards 'linux-source-6.1/fs/xfs/*'
	echo "$stamp" > "$out/pristine.stamp"
fi
if [ ! -d "$out/xfs" ]; then
	cp -a "$out/pristine/xfs" "$out/xfs"
	rm -f "$out/applied.patch"
fi

# (re)apply the patch when it changed: restore what the old one touched
patched_files() { sed -n 's/^+++ b\/\([^[:space:]]*\).*/\1/p' "$1"; }
if ! cmp -s "$patchfile" "$out/applied.patch"; then
	echo "xfsmod: applying kernel-glue/xfs/xfs-6.1.patch"
	files=$(patched_files "$patchfile")
	[ -f "$out/applied.patch" ] && files="$files $(patched_files "$out/applied.patch")"
	for f in $files; do
		cp -p "$out/pristine/xfs/$f" "$out/xfs/$f"
	done
	rm -f "$out/applied.patch"
	if ! patch -p1 -s -d "$out/xfs" < "$patchfile"; then
		echo "xfsmod: the patch does not apply to this fs/xfs" >&2
		exit 1
	fi
	cp "$patchfile" "$out/applied.patch"
fi

# the core and the binding, linked into fs/xfs/sx/ (stale links go)
mkdir -p "$out/xfs/sx"
find "$out/xfs/sx" -maxdepth 1 -type l -delete
for f in "$srcdir"/core/*.c "$srcdir"/core/*.h "$srcdir"/kernel-glue/xfs/*.c \
	 "$srcdir"/kernel-glue/xfs/*.h "$srcdir"/kernel-glue/xfs/Kbuild.inc; do
	ln -sf "$f" "$out/xfs/sx/"
done

echo "xfsmod: building xfs.ko for $kver in $out/xfs"
jobs=-j"$(nproc)"
case " ${MAKEFLAGS:-} " in *jobserver*|*" -j"*) jobs="" ;; esac
# the Makefile's own -I $(srctree)/$(src) points into the headers tree: KCFLAGS
# shellcheck disable=SC2086
if ! make -C "$kdir" M="$out/xfs" SX_SRC="$srcdir" \
		KCFLAGS="-I$out/xfs -I$out/xfs/libxfs" CONFIG_XFS_FS=m $jobs modules \
		> "$out/build.log" 2>&1; then
	grep -E 'error|Error|warning' "$out/build.log" | head -n 40 >&2 || true
	tail -n 20 "$out/build.log" >&2
	echo "xfsmod: build failed (log: $out/build.log)" >&2
	exit 1
fi
grep -E 'warning:' "$out/build.log" | grep -v 'Skipping BTF' | head -n 20 || true
strip --strip-debug -o "$out/xfs.ko.tmp" "$out/xfs/xfs.ko"
mv "$out/xfs.ko.tmp" "$out/xfs.ko"
echo "xfsmod: $out/xfs.ko ($(($(stat -c %s "$out/xfs.ko") / 1024)) KiB, $(($(date +%s) - start)) s)"
