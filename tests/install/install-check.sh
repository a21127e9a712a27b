#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The library as a user gets it: `make install` into a scratch DESTDIR,
# then tests/install/consumer.c built with what pkg-config says, against
# the shared and the static library, and run.  Checks that only the
# application headers are installed and that swapext.pc adds no folder
# but the include root (no generic names like format.h on the path).
#
# usage: install-check.sh BUILD_DIR     (from the source tree's top)
#
# SX_VARIANT_CC, SX_VARIANT_CFLAGS, SX_VARIANT_LDFLAGS: the compiler and
# flags of a variant build (make tsan: clang, -fsanitize=thread; make
# coverage: --coverage, whose objects call libgcov), which `make install`
# links the shared library with and the consumer is built with: objects
# built for TSan link only against its runtime.
# Ends with "N passed, N failed".

set -u
build=${1:?usage: install-check.sh BUILD_DIR}
src=$(pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sx-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
prefix=/usr/local
passed=0
failed=0

ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1"; failed=$((failed + 1)); }

variant=()
[ -n "${SX_VARIANT_CC:-}" ] && variant+=(CC="$SX_VARIANT_CC")
[ -n "${SX_VARIANT_CFLAGS:-}" ] && variant+=(VARIANT_CFLAGS="$SX_VARIANT_CFLAGS")
[ -n "${SX_VARIANT_LDFLAGS:-}" ] && variant+=(VARIANT_LDFLAGS="$SX_VARIANT_LDFLAGS")
if make --no-print-directory -C "$src" install DESTDIR="$root" PREFIX="$prefix" \
	BUILD="$build" NODEPS=1 "${variant[@]}" > "$tmp/install.log" 2>&1; then
	ok "make install DESTDIR=... PREFIX=$prefix"
else
	bad "make install"
	sed 's/^/     /' "$tmp/install.log"
	echo "$passed passed, $failed failed"
	exit 1
fi

inc=$root$prefix/include/swapext
leaked=""
for h in sx_platform.h platform.h format.h host.h swap_log.h; do
	[ -e "$inc/$h" ] && leaked="$leaked $h"
done
if [ -z "$leaked" ] && [ -f "$inc/swapext.h" ] && [ -f "$inc/types.h" ]; then
	ok "installed headers: $(cd "$inc" && echo *.h)"
else
	bad "installed headers: the application API only (found:$leaked)"
fi

export PKG_CONFIG_PATH=$root$prefix/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root
# the include root, not include/swapext (whose names, like types.h, are generic);
# liburcu's own flags may follow (its .pc is a private requirement)
cflags=$(pkg-config --cflags swapext 2>&1)
case " $cflags " in
" -I$root$prefix/include "*)
	case "$cflags" in
	*"/include/swapext"*) bad "pkg-config --cflags swapext: '$cflags' adds include/swapext" ;;
	*) ok "pkg-config --cflags swapext: $cflags" ;;
	esac ;;
*) bad "pkg-config --cflags swapext: '$cflags' (want -I$root$prefix/include first)" ;;
esac
if pkg-config --print-requires-private swapext | grep -q '^liburcu-memb'; then
	ok "swapext.pc: Requires.private liburcu-memb"
else
	bad "swapext.pc: Requires.private liburcu-memb"
fi

cc=${SX_VARIANT_CC:-${CC:-cc}}
# shellcheck disable=SC2046
if "$cc" -std=c11 -Wall -Wextra -Werror $cflags "$src/tests/install/consumer.c" \
	-o "$tmp/consumer" $(pkg-config --libs swapext) ${SX_VARIANT_LDFLAGS:-} \
	> "$tmp/cc.log" 2>&1 &&
   LD_LIBRARY_PATH=$root$prefix/lib "$tmp/consumer" > "$tmp/run.log" 2>&1; then
	ok "a program with its own u8 and ASSERT, shared library: $(tail -n 1 "$tmp/run.log")"
else
	bad "a program with its own u8 and ASSERT, shared library"
	sed 's/^/     /' "$tmp/cc.log" "$tmp/run.log" 2> /dev/null
fi
# shellcheck disable=SC2046
if "$cc" -std=c11 -Wall -Wextra -Werror $cflags "$src/tests/install/consumer.c" \
	-o "$tmp/consumer-static" "$root$prefix/lib/libswapext.a" \
	$(pkg-config --static --libs-only-l swapext | sed 's/-lswapext//') \
	${SX_VARIANT_LDFLAGS:-} > "$tmp/cc2.log" 2>&1 &&
   "$tmp/consumer-static" > "$tmp/run2.log" 2>&1; then
	ok "the same program, static library: $(tail -n 1 "$tmp/run2.log")"
else
	bad "the same program, static library"
	sed 's/^/     /' "$tmp/cc2.log" "$tmp/run2.log" 2> /dev/null
fi

# one version everywhere: version.h, swapext.pc, the SONAME, the tool, the library
vh=$src/include/swapext/version.h
want=$(sed -n 's/^#define SX_LIB_VERSION[[:space:]]*"\(.*\)"/\1/p' "$vh")
so=$(sed -n 's/^#define SX_LIB_SOVERSION[[:space:]]*\([0-9]*\).*/\1/p' "$vh")
pcv=$(pkg-config --modversion swapext)
soname=$(readelf -d "$root$prefix/lib/libswapext.so" 2> /dev/null | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
toolv=$(LD_LIBRARY_PATH=$root$prefix/lib "$root$prefix/bin/swapext" --version 2>&1)
runv=$(tail -n 1 "$tmp/run.log" 2> /dev/null | sed -n 's/.*version //p')
if [ -n "$want" ] && [ "$pcv" = "$want" ] && [ "$soname" = "libswapext.so.$so" ] &&
   [ "$toolv" = "swapext $want" ] && [ "$runv" = "$want" ]; then
	ok "one version: $want (swapext.pc, SONAME $soname, swapext --version, sx_version())"
else
	bad "one version: version.h '$want', .pc '$pcv', SONAME '$soname' (want libswapext.so.$so), tool '$toolv', sx_version() '$runv'"
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
