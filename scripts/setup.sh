#!/usr/bin/env bash
# Installs what `lab` needs on a Debian/Ubuntu machine beyond Go 1.26, gcc and npm: the C/C++
# headers the Ollama build needs. Uses apt-get when it may (root, or sudo without a password);
# otherwise it names the exact packages and stops. llama-server (lab server prepare) needs only
# apt-get, apt-cache and dpkg-deb, which every Debian/Ubuntu machine has; no root.
set -euo pipefail

packages=(nlohmann-json3-dev libstb-dev g++)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
for cmd in go gcc npm; do
  command -v "$cmd" >/dev/null || { echo "setup: $cmd is not installed; lab needs Go 1.26 (https://go.dev/dl), gcc and npm (Debian packages gcc, npm)" >&2; exit 1; }
done

for cmd in apt-get apt-cache dpkg-deb; do
  command -v "$cmd" >/dev/null || echo "setup: warning: $cmd is not installed: lab server prepare cannot fetch llama-server (Ollama still works)" >&2
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
apt=()
if [ "$(id -u)" -eq 0 ]; then
  apt=(apt-get)
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  apt=(sudo -n apt-get)
else
  echo "setup: missing Debian packages: ${missing[*]}" >&2
  echo "setup: install them with: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! "${apt[@]}" install -y --no-install-recommends "${missing[@]}" >&2; then
  "${apt[@]}" update >&2
  "${apt[@]}" install -y --no-install-recommends "${missing[@]}" >&2
fi
