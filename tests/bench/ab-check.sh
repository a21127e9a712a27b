#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# scripts/ab.sh against two stand-in programs whose figures are known: the
# order of each pair, the "{}" argument, the medians, the per-pair ratio, the
# wins and the sign test, and its refusals.  Ends with "N passed, N failed".

set -uo pipefail

ab=${1:-scripts/ab.sh}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAILED: $*"; failed=$((failed + 1)); }

# A stand-in: logs "NAME ARG" to $tmp/order, then prints the next figure of
# its list (one per run) on a RESULT line, among other key=value pairs.
fake() {
	local name=$1 key=$2
	shift 2
	printf '%s\n' "$@" > "$tmp/$name.list"
	cat > "$tmp/$name" <<-EOF
		#!/usr/bin/env bash
		echo "$name \$1" >> "$tmp/order"
		n=\$(wc -l < "$tmp/$name.seen" 2> /dev/null || echo 0)
		echo x >> "$tmp/$name.seen"
		v=\$(sed -n "\$((n + 1))p" "$tmp/$name.list")
		echo "setting up"
		echo "RESULT workload=t other_s=1 $key=\$v secs=0.1"
	EOF
	chmod +x "$tmp/$name"
}

fake A ops_s 100 100 100 100
fake B ops_s 110 90 120 130
out=$(bash "$ab" -n 4 "$tmp/A" "$tmp/B" "$tmp/img-{}" 2>&1)
st=$?
last=$(tail -n 1 <<< "$out")
want="median A 100, median B 115; B/A per pair: median 1.150; B won 3 of 4 pairs (sign test p = 0.625)"
if [ $st = 0 ] && [ "$last" = "$want" ]; then
	ok "medians, ratio, wins and p: $last"
else
	bad "summary: status $st, '$last', want '$want'"
	echo "$out" | sed 's/^/     /'
fi
order=$(tr '\n' ' ' < "$tmp/order")
want="A $tmp/img-a B $tmp/img-b B $tmp/img-b A $tmp/img-a A $tmp/img-a B $tmp/img-b B $tmp/img-b A $tmp/img-a "
if [ "$order" = "$want" ]; then
	ok "pairs alternate which runs first, and {} becomes a or b"
else
	bad "order: '$order', want '$want'"
fi
if grep -q "^pair 2: A 100  B 90$" <<< "$out"; then
	ok "each pair is printed"
else
	bad "no line 'pair 2: A 100  B 90'"
fi

# an even split is no evidence: p = 1
rm -f "$tmp"/*.seen "$tmp/order"
fake A extents_s 10 10
fake B extents_s 12 8
last=$(bash "$ab" -n 2 -k extents_s "$tmp/A" "$tmp/B" 2>&1 | tail -n 1)
want="median A 10, median B 10; B/A per pair: median 1.000; B won 1 of 2 pairs (sign test p = 1.000)"
if [ "$last" = "$want" ]; then
	ok "-k picks the figure; an even split has p = 1"
else
	bad "even split: '$last', want '$want'"
fi

# refusals: exit status 2 and a message that says why
rm -f "$tmp"/*.seen "$tmp/order"
fake C speed 5 5
for t in "no figure|-n 1 $tmp/C $tmp/C|printed no ops_s" \
	 "zero pairs|-n 0 $tmp/A $tmp/B|PAIRS must be a positive number" \
	 "not a program|$tmp/none $tmp/B|is not an executable program" \
	 "one program|$tmp/A|usage"; do
	IFS='|' read -r what args msg <<< "$t"
	# shellcheck disable=SC2086
	out=$(bash "$ab" $args 2>&1)
	st=$?
	if [ $st = 2 ] && grep -q "$msg" <<< "$out"; then
		ok "refuses $what: $(tail -n 1 <<< "$out")"
	else
		bad "$what: status $st, '$out'"
	fi
done

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
