#!/usr/bin/env bash
# setup.sh — installs what building and testing kbc needs on Debian 12:
# a C compiler, CMake and Ninja, Flex and Bison, cmocka, and (for the
# PyTorch oracle) Debian's python3-torch and python3-numpy for /usr/bin/python3.
# Installs only what is missing; needs root (or sudo).
set -eu
pkgs="build-essential cmake ninja-build flex bison libcmocka-dev python3-torch python3-numpy bc"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "setup: installing$missing"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo=sudo
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
