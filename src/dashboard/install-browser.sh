#!/bin/sh
# What the dashboard's browser test needs on the machine: Debian's Chromium (driven by
# playwright-core, which downloads no browser of its own) and a font to render text with.
# Installs the packages when something is missing; quick and quiet when all is there.
set -eu
browser="${SWITCHYARD_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$browser" ] && [ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup:browser: install Chromium with your system's packages (or set SWITCHYARD_CHROMIUM to its path)" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "setup:browser: installing chromium fonts-dejavu-core (Debian packages)" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
