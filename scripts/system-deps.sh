#!/usr/bin/env bash
# System packages the tests need beyond Python: Xvfb and a tray host (trayer) for the
# desktop end-to-end test, the xcb libraries Qt's xcb platform loads, and
# xdotool/xwininfo to find windows; and icupkg, objcopy and cc for the bundle's ICU
# data trim (packaging/linux/icu_trim.py, also tested in the ordinary run). Installs
# only what is missing; a machine without apt (or without root) prints what to
# install and goes on: those tests then skip with that reason.
set -uo pipefail
need=()
command -v Xvfb >/dev/null 2>&1 || need+=(xvfb)
command -v trayer >/dev/null 2>&1 || need+=(trayer)
command -v xdotool >/dev/null 2>&1 || need+=(xdotool)
command -v xwininfo >/dev/null 2>&1 || need+=(x11-utils)
command -v icupkg >/dev/null 2>&1 || need+=(icu-devtools)
command -v objcopy >/dev/null 2>&1 || need+=(binutils)
command -v cc >/dev/null 2>&1 || need+=(gcc)
# The Wayland libraries too: the bundle's Wayland plugins load them, and the .deb's Depends
# are found from the build host's copies (packaging/linux/deb_depends.py).
for lib in libxcb-cursor0:libxcb-cursor.so.0 libxcb-icccm4:libxcb-icccm.so.4 \
           libxcb-keysyms1:libxcb-keysyms.so.1 libwayland-client0:libwayland-client.so.0 \
           libwayland-cursor0:libwayland-cursor.so.0 libwayland-egl1:libwayland-egl.so.1; do
  ldconfig -p 2>/dev/null | grep -q "${lib#*:}" || need+=("${lib%%:*}")
done
[ ${#need[@]} -eq 0 ] && exit 0
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "system-deps: installing ${need[*]}" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}") \
    >/tmp/ctx-system-deps.log 2>&1 || echo "system-deps: apt-get failed (see /tmp/ctx-system-deps.log)" >&2
else
  echo "system-deps: please install ${need[*]} (the desktop end-to-end tests skip without them)" >&2
fi
exit 0
