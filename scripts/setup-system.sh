#!/usr/bin/env bash
# System packages nini uses: R (for run_r_code) and bubblewrap (the code sandbox), from Debian.
# Idempotent and quick when everything is present. Without root or apt, it says what is skipped
# and why, and exits 0: nini works without them (`nini doctor` reports what is missing).
set -euo pipefail

PACKAGES=(bubblewrap r-base-core r-base-dev r-cran-jsonlite r-cran-ggplot2 r-cran-dplyr
          r-cran-tidyr r-cran-readr r-cran-data.table)

missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup: apt-get is not available, so R and bubblewrap are skipped (R tests skip, code runs unsandboxed): ${missing[*]}"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "setup: not root, so these Debian packages are skipped (R tests skip, code runs unsandboxed): ${missing[*]}"
  echo "setup: to install them: sudo apt-get install -y --no-install-recommends ${missing[*]}"
  exit 0
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/tmp/nini-apt.log 2>&1; then
  echo "setup: apt-get install failed, R and the sandbox are skipped; see /tmp/nini-apt.log:"
  tail -n 5 /tmp/nini-apt.log
fi
exit 0
