#!/usr/bin/env bash
# bootstrap.sh: Quick start command 1 — install what is missing (Debian 12,
# as root or through sudo), configure, build, and run the main job on the
# sample tree in sample/ (scripts/demo.sh).
set -euo pipefail
cd "$(dirname "$0")"

PKGS=(build-essential autoconf pkgconf libext2fs-dev comerr-dev uuid-dev
      zlib1g-dev libarchive-dev libbsd-dev e2fsprogs bats gnuplot-nox
      genext2fs acl attr zstd xz-utils bzip2 time ss-dev jq)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "bootstrap: installing ${missing[*]}"
	if [ "$(id -u)" -eq 0 ]; then SUDO=(); else SUDO=(sudo); fi
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

autoconf -f
./configure ${E3_CONFIGURE_FLAGS:-}
make -j"$(nproc)"
bash scripts/demo.sh
