/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What rkdblk_srv's files share: access.c's allow-list and rejects, used by main.c's
 * connection handling.
 */
#ifndef RKDBLK_SRV_H
#define RKDBLK_SRV_H

#include <linux/types.h>

struct rkdapl_cr;

int srv_allow_parse(const char *list);
void srv_allow_free(void);
bool srv_admit(struct rkdapl_cr *cr);
void srv_reject(struct rkdapl_cr *cr, u16 reason);
long long srv_refused(void);

#endif
