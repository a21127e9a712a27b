#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Check that engine/ stays portable between the user and the kernel build.
#
# usage: check-portable.sh sources          rules 1, 2 and 5
#        check-portable.sh symbols OBJECT... rule 3
#
# 1. Every #include in engine/*.[ch] names "sx_platform.h", a public header
#    <swapext/X.h> that exists in include/swapext/, or an engine header "X.h"
#    that exists in engine/.  The public headers in include/swapext/ (which
#    engine files include) may include only "sx_platform.h" and each other.
# 2. engine/ has no platform conditionals (__KERNEL__, __linux__, __GLIBC__,
#    _WIN32, __APPLE__, __unix__): platform code lives in the glue's *_os.c.
# 3. The OBJECTs (engine/*.c compiled -ffreestanding -fno-builtin by
#    `make check-portable`) call nothing outside the engine but sx_* functions
#    and the string and formatting functions every kernel has (memcpy, memset,
#    strlen, snprintf, vsnprintf, ...).
# 5. No compiler atomics (__atomic_*, __sync_*) in engine/: the platform's
#    atomics and barriers are the contract.

set -euo pipefail

fail=0
bad() { echo "check-portable: $*" >&2; fail=1; }

shopt -s nullglob

mode=${1:-sources}
[ $# -gt 0 ] && shift
case "$mode" in
sources|symbols) ;;
*) echo "usage: check-portable.sh sources | symbols OBJECT..." >&2; exit 2 ;;
esac

# check_includes FILE: apply rule 1 to FILE
check_includes() {
	local f=$1 dir n line target kind name shown
	dir=$(dirname "$f")
	n=0
	while IFS= read -r line; do
		n=$((n + 1))
		[[ "$line" =~ ^[[:space:]]*#[[:space:]]*include ]] || continue
		if [[ "$line" =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*([\"\<])([^\"\>]*)[\"\>] ]]; then
			kind=${BASH_REMATCH[1]}
			target=${BASH_REMATCH[2]}
		else
			bad "$f:$n: unrecognised include: $line"
			continue
		fi
		if [[ "$line" =~ include_next ]]; then
			bad "$f:$n: #include_next is not allowed: $line"
			continue
		fi
		if [ "$kind" = '<' ]; then shown="<$target>"; else shown="\"$target\""; fi
		if [ "$target" = sx_platform.h ]; then
			[ "$kind" = '"' ] || bad "$f:$n: write #include \"sx_platform.h\", not <sx_platform.h>"
			continue
		fi
		case "$target" in
		swapext/*)
			name=${target#swapext/}
			if [ "$kind" != '<' ]; then
				bad "$f:$n: write #include <$target>, not \"$target\""
			elif [[ "$name" == */* ]] || [ ! -f "include/swapext/$name" ]; then
				bad "$f:$n: <$target> is not a public header in include/swapext/"
			fi
			continue
			;;
		esac
		if [ "$kind" = '"' ] && [[ "$target" != */* ]] && [ -f "$dir/$target" ]; then
			continue
		fi
		if [ "$dir" = engine ]; then
			bad "$f:$n: #include $shown: engine/ may include only \"sx_platform.h\", <swapext/*.h> and engine headers"
		else
			bad "$f:$n: #include $shown: public headers may include only \"sx_platform.h\" and <swapext/*.h>"
		fi
	done < "$f"
}

files=(engine/*.c engine/*.h)
srcs=(engine/*.c)
nsrc=${#srcs[@]}

if [ "$mode" = sources ]; then
for f in "${files[@]}" include/swapext/*.h; do
	check_includes "$f"
done

# Rule 2: no platform conditionals in engine/.
if [ ${#files[@]} -gt 0 ]; then
	while IFS= read -r hit; do
		bad "$hit: platform conditional in engine/ (put it in a glue *_os.c)"
	done < <(grep -nE '^[[:space:]]*#[[:space:]]*(if|ifdef|ifndef|elif).*\b(__KERNEL__|__linux__|__GLIBC__|_WIN32|__APPLE__|__unix__)\b' \
		"${files[@]}" || true)
fi

# Rule 5: no compiler atomics in engine/.
if [ ${#files[@]} -gt 0 ]; then
	while IFS= read -r hit; do
		bad "$hit: compiler atomic (use the platform's sx_atomic*/sx_load_acquire/sx_store_release)"
	done < <(grep -nE '\b__(atomic|sync)_[a-z_]+' "${files[@]}" || true)
fi

	if [ "$fail" != 0 ]; then
		echo "check-portable: FAILED" >&2
		exit 1
	fi
	echo "check-portable: includes ok (${#files[@]} engine files)"
	exit 0
fi

# Rule 3: undefined symbols of the freestanding engine objects.
allowed_re='^(sx_[A-Za-z0-9_]*|memcpy|memmove|memset|memcmp|memchr|strlen|strnlen|strcmp|strncmp|strchr|strrchr|strstr|snprintf|vsnprintf|scnprintf|vscnprintf|_GLOBAL_OFFSET_TABLE_)$'
for o in "$@"; do
	[ -f "$o" ] || { bad "$o: missing object"; continue; }
	while read -r sym; do
		[ -n "$sym" ] || continue
		[[ "$sym" =~ $allowed_re ]] && continue
		src=${o#*/portable/}
		bad "${src%.o}.c: calls '$sym', which is neither an sx_* function nor a kernel string function"
	done < <(nm -u "$o" | awk '{ print $NF }')
done

if [ "$fail" != 0 ]; then
	echo "check-portable: FAILED" >&2
	exit 1
fi
echo "check-portable: ok: $nsrc engine sources compile freestanding and call only sx_*, string and snprintf-family functions"
