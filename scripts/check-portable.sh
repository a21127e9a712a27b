#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Check that core/ and engine/ stay portable between the user build, our
# kernel module and a host filesystem's module, and that the swap core
# stays a unit of its own.
#
# usage: check-portable.sh sources          rules 1, 2 and 5
#        check-portable.sh symbols OBJECT... rule 3
#        check-portable.sh core OBJECT...    rule 4
#
# 1. Every #include in core/*.[ch] and engine/**.[ch] names "sx_platform.h",
#    a public header <swapext/X.h> that exists in include/swapext/, or a
#    header "X.h" of the file's own folder (engine/diag/ may also use the
#    engine's headers).  So the core never includes a store header.  The
#    public headers in include/swapext/ may include only "sx_platform.h"
#    and each other, but for types.h, which takes the fixed-width types
#    from <stdint.h> and friends (<linux/types.h> in the kernel).
# 2. core/ and engine/ have no platform conditionals (__KERNEL__, __linux__,
#    __GLIBC__, _WIN32, __APPLE__, __unix__): platform code lives in the
#    glue's *_os.c.
# 3. The OBJECTs (core/ and engine/ compiled -ffreestanding -fno-builtin by
#    `make check-portable`) call nothing outside them but sx_* functions and
#    the string and formatting functions every kernel has (memcpy, memset,
#    strlen, snprintf, vsnprintf, ...).
# 4. The core's OBJECTs reference only each other's symbols, the platform
#    contract (the functions include/swapext/platform.h declares, and
#    sx_assert_fail behind ASSERT/VERIFY) and those string and formatting
#    functions: nothing of the store.
# 5. No compiler atomics (__atomic_*, __sync_*) in core/ or engine/: the
#    platform's atomics and barriers are the contract.

set -euo pipefail

fail=0
bad() { echo "check-portable: $*" >&2; fail=1; }

shopt -s nullglob

mode=${1:-sources}
[ $# -gt 0 ] && shift
case "$mode" in
sources|symbols|core) ;;
*) echo "usage: check-portable.sh sources | symbols OBJECT... | core OBJECT..." >&2; exit 2 ;;
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
		if [ "$kind" = '"' ] && [ "$dir" = engine/diag ] && [ -f "engine/$target" ]; then
			continue
		fi
		# types.h alone picks the system's fixed-width types, by platform
		if [ "$f" = include/swapext/types.h ] && [ "$kind" = '<' ] &&
		   [[ "$target" =~ ^(linux/types\.h|linux/stddef\.h|stdbool\.h|stddef\.h|stdint\.h)$ ]]; then
			continue
		fi
		if [ "$dir" = core ]; then
			bad "$f:$n: #include $shown: core/ may include only \"sx_platform.h\", <swapext/*.h> and core headers"
		elif [[ "$dir" == engine* ]]; then
			bad "$f:$n: #include $shown: engine/ may include only \"sx_platform.h\", <swapext/*.h> and engine headers"
		else
			bad "$f:$n: #include $shown: public headers may include only \"sx_platform.h\" and <swapext/*.h>"
		fi
	done < "$f"
}

files=(core/*.c core/*.h engine/*.c engine/*.h engine/*/*.c engine/*/*.h)
srcs=(core/*.c engine/*.c engine/*/*.c)
nsrc=${#srcs[@]}

if [ "$mode" = sources ]; then
for f in "${files[@]}" include/swapext/*.h; do
	check_includes "$f"
done

# Rule 2: no platform conditionals in core/ or engine/.
if [ ${#files[@]} -gt 0 ]; then
	while IFS= read -r hit; do
		bad "$hit: platform conditional (put it in a glue *_os.c)"
	done < <(grep -nE '^[[:space:]]*#[[:space:]]*(if|ifdef|ifndef|elif).*\b(__KERNEL__|__linux__|__GLIBC__|_WIN32|__APPLE__|__unix__)\b' \
		"${files[@]}" || true)
fi

# Rule 5: no compiler atomics in core/ or engine/.
if [ ${#files[@]} -gt 0 ]; then
	while IFS= read -r hit; do
		bad "$hit: compiler atomic (use the platform's sx_atomic*/sx_load_acquire/sx_store_release)"
	done < <(grep -nE '\b__(atomic|sync)_[a-z_]+' "${files[@]}" || true)
fi

	if [ "$fail" != 0 ]; then
		echo "check-portable: FAILED" >&2
		exit 1
	fi
	echo "check-portable: includes ok (${#files[@]} core and engine files)"
	exit 0
fi

# Rule 4: the core's objects reference nothing of the store.
if [ "$mode" = core ]; then
	contract=$( { grep -oE '\bsx_[a-z0-9_]+\(' include/swapext/platform.h | tr -d '(';
		      echo sx_assert_fail; } | sort -u)
	defined=$(for o in "$@"; do nm --defined-only "$o" | awk '{ print $NF }'; done | sort -u)
	string_re='^(memcpy|memmove|memset|memcmp|memchr|strlen|strnlen|strcmp|strncmp|strchr|strrchr|strstr|snprintf|vsnprintf|scnprintf|vscnprintf|_GLOBAL_OFFSET_TABLE_)$'
	nsym=0
	for o in "$@"; do
		[ -f "$o" ] || { bad "$o: missing object"; continue; }
		while read -r sym; do
			[ -n "$sym" ] || continue
			nsym=$((nsym + 1))
			[[ "$sym" =~ $string_re ]] && continue
			grep -qxF "$sym" <<< "$contract" && continue
			grep -qxF "$sym" <<< "$defined" && continue
			src=${o#*/portable/}
			bad "${src%.o}.c: references '$sym', which is neither the core's, the platform contract's nor a string function"
		done < <(nm -u "$o" | awk '{ print $NF }')
	done
	if [ "$fail" != 0 ]; then
		echo "check-portable: FAILED" >&2
		exit 1
	fi
	echo "check-portable: ok: the core's $# objects reference only the core, the platform contract and string functions"
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
echo "check-portable: ok: $nsrc core and engine sources compile freestanding and call only sx_*, string and snprintf-family functions"
