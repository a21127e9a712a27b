#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Collect gcov data of a --coverage build, keep core/ and engine/ only, write
# the HTML report and print the line and branch coverage of each folder
# (core/, engine/, engine/diag/) and of both together.
#
# usage: coverage.sh OBJDIR HTMLDIR   (as `make coverage` calls it)

set -euo pipefail

objdir=${1:?usage: coverage.sh OBJDIR HTMLDIR}
htmldir=${2:?usage: coverage.sh OBJDIR HTMLDIR}
top=$(pwd)
rc=(--rc lcov_branch_coverage=1)
all="$objdir/coverage-all.info"
eng="$objdir/coverage-engine.info"

if ! find "$objdir" -name '*.gcda' -print -quit | grep -q .; then
	echo "coverage: no .gcda files under $objdir (did any test run?)" >&2
	exit 1
fi

# run CMD...: run an lcov tool, showing its stderr only when it fails (lcov
# 1.16 under Debian 12's perl prints "Subroutine ... redefined" noise).
run() {
	if ! "$@" 2> "$objdir/coverage.err"; then
		cat "$objdir/coverage.err" >&2
		echo "coverage: $1 failed" >&2
		exit 1
	fi
}

run lcov "${rc[@]}" --quiet --capture --directory "$objdir" --base-directory "$top" \
	--output-file "$all"
run lcov "${rc[@]}" --quiet --extract "$all" "$top/engine/*" "$top/core/*" --output-file "$eng"
mkdir -p "$htmldir"
run genhtml "${rc[@]}" --quiet --branch-coverage --title "swapext core/ and engine/" \
	--prefix "$top" --output-directory "$htmldir" "$eng"

# summarize INFO LABEL: one line of line and branch coverage
summarize() {
	local summary lines branches
	summary=$(lcov "${rc[@]}" --summary "$1" 2>&1)
	lines=$(echo "$summary" | awk '/lines\.*:/ { print $2, $3, $4, $5, $6; exit }')
	branches=$(echo "$summary" | awk '/branches\.*:/ { print $2, $3, $4, $5, $6; exit }')
	echo "coverage of $2: lines ${lines:-n/a}, branches ${branches:-n/a}"
}
for d in core engine/diag; do
	run lcov "${rc[@]}" --quiet --extract "$eng" "$top/$d/*" --output-file "$objdir/cov-part.info"
	summarize "$objdir/cov-part.info" "$d/"
done
run lcov "${rc[@]}" --quiet --remove "$eng" "$top/engine/diag/*" "$top/core/*" \
	--output-file "$objdir/cov-part.info"
summarize "$objdir/cov-part.info" "engine/ (the store, without diag/)"
summarize "$eng" "core/ and engine/"
echo "coverage: report in $htmldir/index.html"
