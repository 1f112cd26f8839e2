#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Single-guest (--one) smoke test: rping over rxe0 to the guest's own IP.
. "$RKDAPL_TOP/qemu/guest-setup.sh" || exit 1
rping -s -a "$RKDAPL_IP" -C 3 -v -S 1024 &
srv=$!
for ((i = 0; i < 100; i++)); do
	rdma res show cm_id 2>/dev/null | grep -q LISTEN && break
	sleep 0.2
done
rping -c -a "$RKDAPL_IP" -C 3 -v -S 1024 || exit 1
wait $srv
