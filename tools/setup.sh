#!/usr/bin/env bash
# One-time setup on a fresh Debian/Ubuntu machine: LLVM assembler + linker (RISC-V/SVE guests),
# qemu-user and gdb-multiarch (reference peers for tests), then a virtualenv with emukern.
# Safe to re-run: it skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v llvm-mc >/dev/null 2>&1 || command -v llvm-mc-14 >/dev/null 2>&1 || need+=(llvm)
command -v ld.lld >/dev/null 2>&1 || command -v ld.lld-14 >/dev/null 2>&1 || need+=(lld)
command -v qemu-riscv64 >/dev/null 2>&1 || need+=(qemu-user)
command -v gdb-multiarch >/dev/null 2>&1 || need+=(gdb-multiarch)
command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || need+=(gcc)
# `emukern selftests`: make (the selftests' Makefiles, the tree's `make headers`), xz (the tarball)
command -v make >/dev/null 2>&1 || need+=(make)
command -v xz >/dev/null 2>&1 || need+=(xz-utils)
# optional: qemu-system (Debian's real kernels for `emukern linux` / `emukern compare` and the
# real-kernel CI step; qemu-system-misc brings riscv64, qemu-system-data the OpenSBI firmware)
command -v qemu-system-aarch64 >/dev/null 2>&1 || need+=(qemu-system-arm)
command -v qemu-system-riscv64 >/dev/null 2>&1 || need+=(qemu-system-misc)
# optional: what building a patched test kernel needs (`python -m emukern.oracle.build NAME`,
# the locally built profiles of emukern/oracle/kernels.py): the kernel's host tools and headers
command -v flex >/dev/null 2>&1 || need+=(flex)
command -v bison >/dev/null 2>&1 || need+=(bison)
command -v bc >/dev/null 2>&1 || need+=(bc)
[ -e /usr/include/openssl/ssl.h ] || need+=(libssl-dev)
[ -e /usr/include/libelf.h ] || need+=(libelf-dev)
# optional: GCC cross compilers + glibc, to test static and dynamic C programs built by another
# toolchain (their sysroots /usr/<triple> are the guest roots of tests/kernel/fs)
command -v riscv64-linux-gnu-gcc >/dev/null 2>&1 || need+=(gcc-riscv64-linux-gnu libc6-dev-riscv64-cross)
command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || need+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup: installing Debian packages: ${need[*]}" >&2
  if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"; } >/tmp/emukern-apt.log 2>&1; then
    echo "setup: apt-get failed (see /tmp/emukern-apt.log); emukern needs llvm and lld to assemble guests." >&2
    echo "       qemu-user, qemu-system, gdb-multiarch, the cross compilers and the kernel build tools are optional: their tests skip without them." >&2
  fi
fi
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
# optional: the policy study's RVV programs are built by LLVM from the ziglang wheel (the 'study'
# extra); without it (offline) `emukern reproduce` skips that half and says why
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[study]' \
  || echo "setup: ziglang not installed (optional: the policy study's RISC-V programs)" >&2
# Byte-compile emukern once: with PYTHONDONTWRITEBYTECODE set (as on this project's machines)
# Python never caches it, and every `emukern run` process would recompile ~160 modules first
# (measured: `emukern run hello.S` 1.45 s without the cache, 0.85 s with it).  A stale cache
# file is ignored by Python (it checks the source's mtime), so editing the tree stays safe.
.venv/bin/python -m compileall -q -j 0 emukern >/dev/null
echo "setup: ready (.venv/bin/emukern)" >&2
