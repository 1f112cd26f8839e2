#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Harness self-test: the kernel's "lock debugging turned off" line in dmesg (splat-scan.sh must
# fail the guest: lockdep would have checked nothing from there on). User space cannot clear
# debug_locks itself, so this is the line add_taint() prints when it does.
echo "Disabling lock debugging due to kernel taint (rkdapl splat-scan self-test)" > /dev/kmsg
