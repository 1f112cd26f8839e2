#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest B of the harness smoke test: rping client to guest A once A is ready.
. "$RKDAPL_TOP/qemu/guest-setup.sh" || exit 1
rkdapl_wait a.ready || exit 1
rping -c -a "$RKDAPL_PEER_IP" -C 3 -v -S 1024
