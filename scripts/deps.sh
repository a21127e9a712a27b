#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Check (and, as root, install) what swapext needs to build and test.
#
# usage: deps.sh [--check] [GROUP]
#   GROUP  build     compiler, make, libc headers, pkg-config, liburcu
#          test      build + cmocka                    (make check, asan, ubsan)
#          coverage  test + lcov                       (make coverage)
#          tsan      test + clang and its ThreadSanitizer runtime (make tsan;
#                    make check runs the thread stress under it when it can)
#          kernel    build + Debian's Linux 6.1 headers and image, qemu,
#                    busybox-static, cpio              (make kmod, kcheck)
#          xfs       test + xfsprogs, losetup/mount, gnuplot
#                                                      (make bench, bench-xfs)
#          xfsmod    kernel + Debian's linux-source-6.1 (make xfsmod)
#          all       everything, clang included        (default)
#   --check  never install, only report
#
# Each need is checked by what it provides (a command, or a header and library
# that compile and link), so it also works off Debian.  As root with apt-get,
# every missing package of every group is installed in one apt-get run (so one
# `make check` as root prepares the machine for every target).  Otherwise the
# missing packages are listed with the command that installs them; the exit
# status is 1 if something GROUP needs is missing.

set -euo pipefail

install=1
group=all
while [ $# -gt 0 ]; do
	case "$1" in
	--check) install=0 ;;
	build|test|coverage|tsan|kernel|xfs|xfsmod|all) group=$1 ;;
	-h|--help) sed -n '3,25p' "$0"; exit 0 ;;
	*) echo "deps: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done

cc=${CC:-cc}
tmpd=$(mktemp -d)
trap 'rm -rf "$tmpd"' EXIT

# can_link HEADERS FUNC LIBS: a program using FUNC from HEADERS links with LIBS
can_link() {
	local hdrs=$1 call=$2 libs=$3 h
	{
		for h in $hdrs; do echo "#include <$h>"; done
		echo "int main(void) { $call; return 0; }"
	} > "$tmpd/t.c"
	# shellcheck disable=SC2086
	"$cc" -o "$tmpd/t" "$tmpd/t.c" $libs > /dev/null 2>&1
}

have_cmd() { command -v "$1" > /dev/null 2>&1; }

# The needs: "group package description" and a check function each.
need_make()	{ have_cmd make; }
need_cc()	{ have_cmd "$cc"; }
need_libc()	{ can_link "stdio.h pthread.h" 'pthread_self()' "-lpthread"; }
need_pkgconf()	{ have_cmd pkg-config; }
need_urcu()	{ can_link "urcu/urcu-memb.h" 'urcu_memb_register_thread()' "-lurcu-memb -lpthread"; }
need_cmocka()	{ can_link "stdarg.h stddef.h setjmp.h stdint.h cmocka.h" \
			'_cmocka_run_group_tests("x", 0, 0, 0, 0)' "-lcmocka"; }
need_lcov()	{ have_cmd lcov && have_cmd genhtml && have_cmd gcov; }
need_clang()	{ have_cmd clang; }
# clang's ThreadSanitizer runtime: Debian 12 ships it in libclang-rt-14-dev,
# which clang only recommends (and apt-get here installs no recommends)
need_tsanrt()	{ have_cmd clang && echo 'int main(void) { return 0; }' > "$tmpd/r.c" &&
		  clang -fsanitize=thread -o "$tmpd/r" "$tmpd/r.c" > /dev/null 2>&1; }
# XFS's uapi header: test_swapext_compat checks our XFS_IOC_SWAPEXT layouts against it
need_xfshdr()	{ [ -f /usr/include/xfs/xfs_fs.h ]; }
need_kmod()	{ can_link "libkmod.h" 'kmod_new(0, 0)' "-lkmod"; }
# Debian's 6.1 kernel (bookworm): what the module builds against and kcheck boots
need_kheaders()	{ compgen -G '/usr/src/linux-headers-6.1*-amd64/Makefile' > /dev/null; }
need_kimage()	{ compgen -G '/boot/vmlinuz-6.1*-amd64' > /dev/null; }
need_qemu()	{ have_cmd qemu-system-x86_64; }
need_busybox()	{ [ -x /bin/busybox ] && ! ldd /bin/busybox > /dev/null 2>&1; }
need_cpio()	{ have_cmd cpio; }
need_xfsprogs()	{ have_cmd mkfs.xfs && have_cmd xfs_bmap; }
need_mount()	{ have_cmd losetup && have_cmd mount && have_cmd findmnt; }
# make bench's plots
need_gnuplot()	{ have_cmd gnuplot; }
# the fs/xfs that make xfsmod patches and builds, and patch(1) to patch it
need_ksource()	{ [ -r /usr/src/linux-source-6.1.tar.xz ]; }
need_patch()	{ have_cmd patch; }
need_xz()	{ have_cmd xz; }

NEEDS="
build make make need_make
build gcc C_compiler need_cc
build libc6-dev C_library_headers need_libc
build pkg-config pkg-config need_pkgconf
build liburcu-dev userspace_RCU need_urcu
build libkmod-dev libkmod need_kmod
test libcmocka-dev cmocka_unit_tests need_cmocka
coverage lcov lcov/genhtml need_lcov
tsan clang clang need_clang
all xfslibs-dev XFS_headers need_xfshdr
kernel linux-headers-amd64 Linux_6.1_headers need_kheaders
kernel linux-image-amd64 Linux_6.1_kernel_image need_kimage
kernel qemu-system-x86 qemu-system-x86_64 need_qemu
kernel busybox-static static_busybox need_busybox
kernel cpio cpio need_cpio
xfsmod linux-source-6.1 Linux_6.1_source need_ksource
xfsmod patch patch need_patch
xfsmod xz-utils xz need_xz
xfs xfsprogs XFS_tools_(mkfs.xfs,_xfs_bmap) need_xfsprogs
xfs mount losetup_and_mount need_mount
xfs gnuplot-nox gnuplot need_gnuplot
"

# The runtime's package goes with clang's major version (clang-N, the one
# apt would install when clang itself is missing).
clang_major=""
if have_cmd clang; then
	clang_major=$(clang -dumpversion 2> /dev/null | cut -d. -f1) || true
elif have_cmd apt-cache; then
	clang_major=$(apt-cache depends clang 2> /dev/null |
		      sed -n 's/.*Depends: clang-\([0-9][0-9]*\)$/\1/p' | head -n 1) || true
fi
NEEDS="$NEEDS
tsan libclang-rt-${clang_major:-14}-dev ThreadSanitizer_runtime need_tsanrt
"

# in_group G: true if a need of group G is required for $group
in_group() {
	case "$group:$1" in
	all:*|coverage:build|coverage:test|coverage:coverage|test:build|test:test|build:build|\
	tsan:build|tsan:test|tsan:tsan|kernel:build|kernel:kernel|xfs:build|xfs:test|xfs:xfs|\
	xfsmod:build|xfsmod:kernel|xfsmod:xfsmod)
		return 0 ;;
	esac
	return 1
}

# scan: sets missing_req (needed now) and missing_opt (other groups)
scan() {
	missing_req=""
	missing_opt=""
	missing_desc=""
	local g pkg desc fn
	while read -r g pkg desc fn; do
		[ -n "$g" ] || continue
		if ! "$fn"; then
			if in_group "$g"; then
				missing_req="$missing_req $pkg"
				missing_desc="$missing_desc ${desc//_/ } ($pkg);"
			else
				missing_opt="$missing_opt $pkg"
			fi
		fi
	done <<< "$NEEDS"
}

scan
all_missing="$missing_req$missing_opt"

if [ -z "$all_missing" ]; then
	echo "deps: everything is installed"
	exit 0
fi

if [ "$install" = 1 ] && [ "$(id -u)" = 0 ] && have_cmd apt-get; then
	echo "deps: installing:$all_missing"
	export DEBIAN_FRONTEND=noninteractive
	apt_opts=(-y -q --no-install-recommends -o DPkg::Lock::Timeout=600)
	# Fresh machines may have stale or empty package lists: update first.
	apt-get -q -o DPkg::Lock::Timeout=600 update < /dev/null || \
		echo "deps: warning: apt-get update failed; trying the install anyway"
	# shellcheck disable=SC2086
	if ! apt-get install "${apt_opts[@]}" $all_missing < /dev/null; then
		echo "deps: apt-get install failed; retrying only what '$group' needs"
		# shellcheck disable=SC2086
		[ -z "$missing_req" ] || apt-get install "${apt_opts[@]}" $missing_req < /dev/null || true
	fi
	hash -r
	scan
	tried=1
fi

if [ -n "$missing_opt" ]; then
	echo "deps: not needed for '$group' but missing:$missing_opt"
fi
if [ -n "$missing_req" ]; then
	echo "deps: MISSING for '$group':$missing_desc" >&2
	if [ "${tried:-0}" = 1 ]; then
		echo "deps: apt-get could not install them (see its output above)" >&2
	elif have_cmd apt-get; then
		echo "deps: install them with:  sudo apt-get install$missing_req" >&2
	else
		echo "deps: install the equivalent packages of your system:$missing_req" >&2
	fi
	exit 1
fi
echo "deps: ok for '$group'"
