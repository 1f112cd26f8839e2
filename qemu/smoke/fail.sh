#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Harness self-test: a guest script that fails (run-guests.sh must fail).
echo "failing on purpose"
exit 1
