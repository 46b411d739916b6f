#!/usr/bin/env bash
# System packages nini uses, from Debian, in groups: runtime (R for run_r_code, bubblewrap for the
# code sandbox: all `make demo` needs), browser (Chromium and fonts for the JupyterLab frontend's
# browser tests), database (PostgreSQL for the tests and benchmarks of the shared store: they start
# a throwaway cluster of their own; the package's own is not used). `setup-system.sh runtime`
# installs that group only; no argument means every group (`make test`). Each group is installed on
# its own, so one failing leaves the others. Idempotent and quick when everything is present.
# Without root or apt, it says what is skipped and why, and exits 0: nini works without them
# (`nini doctor` reports what is missing, and the tests that need them skip with that reason).
set -euo pipefail

RUNTIME=(bubblewrap r-base-core r-base-dev r-cran-jsonlite r-cran-ggplot2 r-cran-dplyr
         r-cran-tidyr r-cran-readr r-cran-data.table)
BROWSER=(chromium fonts-dejavu-core fonts-wqy-zenhei)  # a CJK font: the default UI language is Chinese
DATABASE=(postgresql)

missing_of() {
  local pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || echo "$pkg"
  done
}

# install <what they are for> <what is skipped without them> <package>...
install() {
  local purpose=$1 without=$2; shift 2
  local missing
  mapfile -t missing < <(missing_of "$@")
  [ ${#missing[@]} -eq 0 ] && return 0
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: apt-get is not available, so $purpose is skipped ($without): ${missing[*]}"
    return 0
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: not root, so $purpose is skipped ($without): ${missing[*]}"
    echo "setup: to install: sudo apt-get install -y --no-install-recommends ${missing[*]}"
    return 0
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  [ -n "${APT_UPDATED:-}" ] || { apt-get update -qq; APT_UPDATED=1; }
  if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/tmp/nini-apt.log 2>&1; then
    echo "setup: apt-get install failed, so $purpose is skipped ($without); see /tmp/nini-apt.log:"
    tail -n 5 /tmp/nini-apt.log
  fi
}

for group in "${@:-runtime browser database}"; do
  for name in $group; do
    case $name in
      runtime) install "R and the sandbox" "R tests skip, code runs unsandboxed" "${RUNTIME[@]}" ;;
      browser) install "Chromium" "the browser tests of the JupyterLab sidebar skip" "${BROWSER[@]}" ;;
      database) install "PostgreSQL" "the store's tests run on SQLite only" "${DATABASE[@]}" ;;
      *) echo "setup-system.sh: unknown group $name (runtime, browser, database)" >&2; exit 2 ;;
    esac
  done
done
exit 0
