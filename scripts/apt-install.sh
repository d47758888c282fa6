#!/usr/bin/env bash
# Install the named Debian packages with apt-get (as root), changing nothing it has not said.
#
#   scripts/apt-install.sh FOR PKG...   install PKG... (FOR says what for, in the messages)
#   scripts/apt-install.sh --plan PKG...  print what installing them would change; install nothing
#   scripts/apt-install.sh --parse      read `apt-get -s install` output on stdin, print the plan
#
# Only the named packages and the packages they depend on are installed
# (--no-install-recommends; never `apt-get upgrade`). apt-get -s first lists every change,
# and it is printed: new packages, and installed packages apt would upgrade or remove
# because a new one needs it (a newer libc6, or libudev1 in lockstep with udev). Such
# upgrades and removals are not made unless CI is set (a throwaway machine) or
# MEMLOCI_APT_UPGRADE=1: it stops with exit 3, having installed nothing.
# Plan lines: "new NAME VERSION", "upgrade NAME OLD NEW", "remove NAME OLD".
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
say() { echo "apt-install: $*" >&2; }

parse() {
  awk '
    /^Inst / {
      if ($3 ~ /^\[/) { print "upgrade", $2, substr($3, 2, length($3) - 2), substr($4, 2) }
      else { print "new", $2, substr($3, 2) }
    }
    /^Remv / { print "remove", $2, substr($3, 2, length($3) - 2) }
  '
}

plan() { apt-get -s install -y --no-install-recommends "$@" | parse; }

case "${1:-}" in
  --parse) parse; exit 0 ;;
  --plan) shift; plan "$@"; exit 0 ;;
  ""|-*) say "usage: $0 FOR PKG... | --plan PKG... | --parse"; exit 2 ;;
esac
for_what="$1"; shift
[ $# -gt 0 ] || { say "no package named"; exit 2; }
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  say "cannot install $* (needs root + apt-get)"; exit 1
fi
timeout 300 apt-get update -qq
changes="$(plan "$@")"
new="$(awk '$1 == "new" {printf " %s", $2}' <<<"$changes")"
# upgrades of the named packages themselves were asked for
others="$(awk -v named=" $* " '
  $1 == "upgrade" && index(named, " " $2 " ") == 0 {printf "\n    %s %s -> %s", $2, $3, $4}
  $1 == "remove" {printf "\n    %s %s (removed)", $2, $3}' <<<"$changes")"
say "for $for_what: installing $* with what it needs, system-wide"
say "  new packages ($(grep -c '^new' <<<"$changes" || true)):${new:- none}"
if [ -n "$others" ]; then
  say "  installed packages apt would also change, because the new ones need it:$others"
  if [ -z "${CI:-}" ] && [ "${MEMLOCI_APT_UPGRADE:-}" != 1 ]; then
    say "not installing: set MEMLOCI_APT_UPGRADE=1 to allow these changes (CI allows them)"
    exit 3
  fi
fi
timeout 900 apt-get install -y -qq --no-install-recommends "$@" >/dev/null
say "installed: $*"
