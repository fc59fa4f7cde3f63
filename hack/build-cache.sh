# shellcheck shell=bash
# Sourced by the install scripts that build Go binaries: each build is
# cached per user in a directory of its own, and counts only once complete,
# so an interrupted build is redone rather than used. The sourcing script
# defines REQUIRED (the programs a build must hold) and log.

# build_cache_dir NAME: the directory of the cached build NAME.
build_cache_dir() {
  echo "${XDG_CACHE_HOME:-$HOME/.cache}/configmap-mirror/$1"
}

# have_all DIR: every program in REQUIRED is executable in DIR.
have_all() {
  local bin
  for bin in "${REQUIRED[@]}"; do
    [ -x "$1/$bin" ] || return 1
  done
}

# print_if_cached DEST: prints DEST/bin, and succeeds, if a complete build
# is there.
print_if_cached() {
  [ -f "$1/.complete" ] && have_all "$1/bin" || return 1
  log "cached: $1/bin"
  echo "$1/bin"
}

# mark_complete DEST TEXT: written last, once DEST/bin is complete.
mark_complete() {
  echo "$2" >"$1/.complete"
}
