#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Harness self-test: a fake kernel WARNING in dmesg (splat-scan.sh must catch it).
echo "WARNING: CPU: 0 PID: $$ at fake.c:1 rkdapl splat-scan self-test" > /dev/kmsg
