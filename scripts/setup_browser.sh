#!/usr/bin/env sh
# Headless Chromium + chromedriver for the browser tests of timor_core.viz (they skip without them).
# Installs with apt-get when missing; never fails the build (exit 0 even if the install does not work).
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    echo "chromium and chromedriver present"
    exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
if command -v apt-get >/dev/null 2>&1; then
    $SUDO apt-get update -qq || true
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver \
        || echo "warning: could not install chromium; browser tests will be skipped" >&2
else
    echo "warning: no apt-get; install chromium and chromedriver yourself, or browser tests are skipped" >&2
fi
exit 0
