#!/usr/bin/env bash
# The browser the console's tests drive: Debian's Chromium and ChromeDriver, installed
# when missing (`make browser`, as root). Playwright for Python drives /usr/bin/chromium;
# no browser is ever downloaded by a test tool.
set -uo pipefail
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "browser: installing Chromium needs root (apt-get install chromium chromium-driver)" >&2; exit 1; }
echo "browser: installing chromium chromium-driver from Debian's packages"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null 2>&1 || { echo "browser: apt-get update failed: Debian's package lists cannot be read" >&2; exit 1; }
apt-get install -y -q chromium chromium-driver >/tmp/sparkmark-browser-install.log 2>&1 \
  || { echo "browser: apt-get install chromium chromium-driver failed; see /tmp/sparkmark-browser-install.log" >&2; exit 1; }
