#!/usr/bin/env bash
# bootstrap.sh: Quick start command 1 — install what is missing (Debian 12,
# as root or through sudo), configure, build, and run the main job on the
# sample tree in sample/ (scripts/demo.sh).
set -euo pipefail
cd "$(dirname "$0")"

# The build, then every program `make check` calls (tests/*.bats,
# tests/*.sh, bench/fuzz.sh): a test skips only for what setup cannot
# give (not root, no loop device, no user xattrs on the host
# filesystem); a program missing from here is a failure, not a skip.
#   python3           tests/cmptree.py, archives made with tarfile/zipfile,
#                     JSON checks of e3fsck --json, bench/fuzz_mutate.py
#   zip cpio          zip and cpio (newc) archives for e3cp
#   libarchive-tools  bsdtar: a second zip writer
#   genext2fs         device tables compared with genext2fs' own
#   acl attr          getfacl/setfattr/getfattr: ACLs and xattrs
#   zstd xz-utils bzip2  compressed tarballs
#   util-linux mount  flock, setpriv, runuser, losetup, findmnt, mount
#   passwd            useradd: .ci/run's unprivileged pass
#   gcc's libasan (build-essential) the sanitizer builds
#   ss-dev            libss and mk_cmds: e3debugfs' request table
#   jq                JSON checks of e3debugfs -J
#   librsvg2-bin      rsvg-convert: the block-map pictures must render
#   libpng-dev        the block-map picture as PNG (map -o FILE.png)
#   libselinux1-dev   copy-in's --file-contexts (selabel_lookup)
#   linux-perf strace valgrind  the benchmarks' profiles and counts
#                     (bench/copyin_spin.sh, mixload_ab.sh --fsync-time,
#                     copyin_ir.sh: user-space instructions)
PKGS=(build-essential autoconf pkgconf libext2fs-dev comerr-dev uuid-dev
      zlib1g-dev libarchive-dev libbsd-dev libpng-dev libselinux1-dev e2fsprogs bats gnuplot-nox
      genext2fs acl attr zstd xz-utils bzip2 time
      python3 zip cpio libarchive-tools util-linux mount passwd
      ss-dev jq librsvg2-bin linux-perf strace valgrind)

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
