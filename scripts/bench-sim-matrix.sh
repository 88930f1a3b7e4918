#!/bin/sh
# Compares the sim matrix's CPU and wall time of two revisions, side by side on this machine:
#
#   scripts/bench-sim-matrix.sh BASE_REV [NEW_REV] [-n N]
#
# builds bin/lab at BASE_REV and at NEW_REV (default HEAD) in temporary git worktrees (committed
# work only), then runs them alternately N times each (default 5) with `lab run --backend sim
# --scenario all --arm all --quiet` and prints every run, the medians of CPU (user + system) and
# wall time with their spread, and the ratio new/old it is judged by (scripts/bench-sim-matrix:
# the rows of every run must be the same). Run it on a quiet machine. OLD_BIN or NEW_BIN, when
# set, is used instead of building that side. Each side is built with the scenarios both
# revisions hold (a scenario only one has is left out of its build), so both run the same matrix.
set -eu
usage() { echo "usage: $0 BASE_REV [NEW_REV] [-n N]" >&2; exit 2; }
[ $# -ge 1 ] || usage
base=$1; shift
new=HEAD
if [ $# -ge 1 ] && [ "$1" != "-n" ]; then new=$1; shift; fi
n=5
if [ $# -ge 1 ]; then
	[ "$1" = "-n" ] && [ $# -eq 2 ] || usage
	n=$2
fi
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
common=$tmp/common
cleanup() {
	for w in "$tmp/old" "$tmp/new"; do
		[ -d "$w" ] && git -C "$root" worktree remove --force "$w" >/dev/null 2>&1 || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
# The scenarios both revisions hold: a scenario one side lacks is left out of the other side's
# build (its folder removed before building; the binary embeds scenarios/*/), so both run the
# same matrix and their rows can be compared. Named on stdout.
scenarios_of() { git -C "$root" ls-tree --name-only "$1" scenarios/ | sed -n 's|^scenarios/||p'; }
scenarios_of "$base" | sort >"$common.old"
scenarios_of "$new" | sort >"$common.new"
comm -12 "$common.old" "$common.new" >"$common"
build() { # build SIDE REV: bin/lab of REV at $tmp/SIDE.bin, with the common scenarios only
	git -C "$root" worktree add --detach --quiet "$tmp/$1" "$2"
	for d in $(scenarios_of "$2"); do
		if [ -d "$tmp/$1/scenarios/$d" ] && ! grep -qx "$d" "$common"; then
			rm -rf "$tmp/$1/scenarios/$d"
			echo "$1: scenario $d left out (not in both revisions)"
		fi
	done
	(cd "$tmp/$1" && go build -o "$tmp/$1.bin" ./cmd/lab)
	echo "$1: $2 ($(git -C "$root" rev-parse --short "$2"))"
}
old_bin=${OLD_BIN:-}
new_bin=${NEW_BIN:-}
if [ -z "$old_bin" ]; then build old "$base"; old_bin=$tmp/old.bin; fi
if [ -z "$new_bin" ]; then build new "$new"; new_bin=$tmp/new.bin; fi
cd "$root"
go run ./scripts/bench-sim-matrix -old "$old_bin" -new "$new_bin" -n "$n"
