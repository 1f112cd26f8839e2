#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# One guest (qemu/run-guests.sh --one): the rkdblk block device suite alone
# (selftests/blockdev.sh: blockdev_suite, blockdev_send_queue, blockdev_file_export,
# blockdev_timeout, blockdev_access, blockdev_removal), its reconnects (selftests/blkreconn.sh)
# and multipath (selftests/blkmpath.sh), between loading and unloading rkdapl.ko.
set -u
. "$RKDAPL_TOP/selftests/guest-lib.sh" || exit 1
. "$RKDAPL_TOP/selftests/blockdev.sh" || exit 1
. "$RKDAPL_TOP/selftests/removal.sh" || exit 1
. "$RKDAPL_TOP/selftests/blkreconn.sh" || exit 1
. "$RKDAPL_TOP/selftests/blkmpath.sh" || exit 1
load_provider || { finish; exit 1; }
blockdev_suite
blockdev_send_queue
blockdev_file_export
blockdev_timeout
blockdev_access
blockdev_removal
blkreconn_suite
blkmpath_suite
unload_provider
finish
