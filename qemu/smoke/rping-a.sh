#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest A of the harness smoke test: userspace rping server on rxe0 (-S must
# match the client's: the server RDMA READs the client's size into its buffer),
# signals a.ready once its rdma_cm id is listening.
. "$RKDAPL_TOP/qemu/guest-setup.sh" || exit 1
rping -s -a "$RKDAPL_IP" -C 3 -v -S 1024 &
srv=$!
for ((i = 0; i < 100; i++)); do
	rdma res show cm_id 2>/dev/null | grep -q LISTEN && break
	sleep 0.2
done
rkdapl_signal a.ready
wait $srv
