/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the files of rkdapl_srq.ko share (main.c describes the roles):
 *
 *   main.c     module parameters, TAP lines, the roles, module_init/exit
 *   data.c     role=server and role=client (loopback runs both): 8 EPs on one SRQ
 *   badarg.c   role=badarg, and role=removal (the SRQ when the device goes away)
 */
#ifndef _RKDAPL_SRQ_H
#define _RKDAPL_SRQ_H

#define pr_fmt(fmt) "rkdapl_srq: " fmt

#include <linux/delay.h>
#include <linux/in.h>
#include <linux/inet.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "../../../include/rkdapl.h"

/* module parameters (main.c) */
extern char *role, *dev, *peer;
extern ushort port;
extern uint neps, nmsg, timeout_ms, listen_ms, connect_ms;

#define NEP_MAX 16
#define MSG_MAX 80		/* sequence numbers per client: nmsg + 3 + 1 + 1 */
#define SLOT 256
#define SRQ_N 64
#define MAGIC 0x51525352	/* "RSRQ" */

enum { CMD_SEND = 1, CMD_BYE = 2 };

struct cmd {
	u32 magic, op, n, seq0;
};

struct smsg {
	u32 magic, client, seq, len;
	u8 data[];
};

/* main.c */
__printf(3, 4) bool tap(bool ok, const char *name, const char *fmt, ...);
bool expect(int got, int want, const char *name);
int tap_finish(void);

/* data.c */
int server_run(void);
int client_run(void);

/* badarg.c */
void badarg_run(void);
int removal_start(void);
void removal_finish(void);

static inline u8 pat(u32 client, u32 seq, u32 i)
{
	u32 x = client * 0x9e3779b1u + seq * 0x85ebca77u + i * 0xc2b2ae3du;

	x ^= x >> 15;
	x *= 0x2c1b3c6d;
	x ^= x >> 12;
	return (u8)x;
}

static inline u32 msg_len(u32 client, u32 seq)
{
	return sizeof(struct smsg) + 1 + (client * 31 + seq * 37) % (SLOT - sizeof(struct smsg));
}

/* The next event of @evd within @ms, or an error. */
static inline int wait_ev(struct rkdapl_evd *evd, u32 ms, struct rkdapl_event *ev)
{
	return rkdapl_evd_wait(evd, ms, ev);
}


#endif /* _RKDAPL_SRQ_H */
