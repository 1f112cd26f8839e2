#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# hide-udev.sh <empty-dir> <command...>: run inside a private mount namespace (unshare -m):
# covers /usr/lib/systemd with <empty-dir> so a virtme-ng guest sharing the host root finds no
# systemd-udevd and skips udev, then runs the command.
set -e
mount --bind "$1" /usr/lib/systemd
shift
exec "$@"
