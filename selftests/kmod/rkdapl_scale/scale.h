/* SPDX-License-Identifier: GPL-2.0 */
/* rkdapl_scale.ko (main.c): what its files share. */
#ifndef _RKDAPL_SCALE_H
#define _RKDAPL_SCALE_H

#include <linux/hashtable.h>
#include <linux/ktime.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/types.h>
#include <linux/wait.h>

#include "../../../include/rkdapl.h"

extern char *scale_role, *scale_dev, *scale_peer;
extern ushort scale_port;
extern uint scale_eps, scale_psps, scale_evds, scale_pzs, scale_bytes, scale_window,
	scale_data_window, scale_inflight, scale_read_eps, scale_timeout_ms;

#define SCALE_MAGIC 0x5343414cu	/* "SCAL" */
#define SLOT 64			/* bytes per message slot (a struct scale_msg); 4 per EP */
#define EP_ATTR_DEPTH 8

/* Cookie kinds (low byte; the EP index above it). */
enum { K_ADV = 1, K_ACK, K_NOTIFY, K_WRITE, K_BIND, K_READ };
#define COOKIE(i, k) (((u64)(i) << 8) | (k))

/* EP flags. */
enum {
	S_CONN = 1 << 0,	/* ESTABLISHED */
	S_ADV = 1 << 1,		/* client: advertisement received; server: its SEND completed */
	S_WRITE = 1 << 2,	/* client: RDMA WRITE completed */
	S_NOTIFY = 1 << 3,	/* client: notify SEND completed; server: notify received */
	S_ACK = 1 << 4,		/* client: ack received; server: ack SEND completed */
	S_DISC = 1 << 5,	/* DISCONNECTED */
	S_DONE = 1 << 6,	/* counted as done */
	S_READ = 1 << 7,	/* client: the read-back completed (or was flushed) */
};

struct scale_msg {
	__u32 magic;
	__u32 index;
	__u64 address;
	__u32 rkey;
	__u32 length;
	__u64 csum;
};

struct scale_ep {
	struct rkdapl_ep *ep;
	struct rkdapl_lmr *lmr;	/* the @bytes data buffer */
	struct rkdapl_rmr *rmr;	/* server: the grant over it */
	u32 *buf;
	struct hlist_node node;
	u32 idx;
	u32 flags;
	u64 address;		/* client: the server's grant */
	u32 rkey;
};

/* One upcalled event, as much of it as the handlers use. */
struct scale_ev {
	u32 type;
	s32 status;
	u32 op;
	u32 pdlen;
	struct rkdapl_ep *ep;
	struct rkdapl_cr *cr;
	u64 cookie;
	u32 pd[2];
};

struct mem {
	unsigned long free_kib, slab_kib;
};

struct scale {
	bool server;
	struct rkdapl_ia *ia;
	struct rkdapl_pz *pz[16];
	struct rkdapl_lmr *msg_lmr[16];	/* the message slots, registered in each PZ */
	struct rkdapl_evd *evd[64];
	struct rkdapl_evd *cr_evd;
	struct rkdapl_evd *async_evd;	/* the IA's async EVD: EP_BROKEN, CQ_ERROR, overflow */
	struct rkdapl_psp *psp[16];
	void *msgs;			/* 4 slots of SLOT bytes per EP */
	struct scale_ep *st;
	/* The event ring: filled by the upcall, emptied by the insmod thread. */
	spinlock_t lock;
	wait_queue_head_t wq;
	struct scale_ev *ring;
	u32 ring_size, head, tail, lost;
	/* Progress. */
	u32 started, connecting, nconn, nadv, next_data, moving, ndone, nverified, ndisc;
	u32 nread, nread_posted, nread_ok, nread_flushed;
	bool reading, tearing_down;
	s32 fail_ep;			/* the EP of the first failed completion, or -1 */
	ktime_t t_first, t_conn, t_data0, t_data1, t_disc0, t_end;
	struct mem m0, m1;
	char why[160];
};

extern struct scale sc;

/* Records the first failure's reason; evaluates to -EIO. */
#define FAIL(fmt, ...) ({						\
	if (!sc.why[0])							\
		snprintf(sc.why, sizeof(sc.why), fmt, ##__VA_ARGS__);	\
	-EIO;								\
})

struct scale_msg *scale_slot(u32 idx, u32 n);
int scale_new_ep(struct scale_ep *st);
int scale_post_slot_recv(struct scale_ep *st, u32 n, u32 kind);
int scale_post_slot_send(struct scale_ep *st, u32 n, u32 kind);
bool scale_msg_ok(const struct scale_msg *m, u32 idx);
int scale_ep_done(struct scale_ep *st);
struct scale_ep *scale_by_ep(struct rkdapl_ep *ep);
u32 scale_pattern(u32 idx, u32 k);
u64 scale_csum(const u32 *p, u32 n);
void scale_read_mem(struct mem *m);
int server_request(const struct scale_ev *v);
int server_conn_event(const struct scale_ev *v);
int server_dto_event(const struct scale_ev *v, struct scale_ep *st, u32 kind);
int scale_async_setup(void);
void scale_async_free(void);
int scale_async_report(bool failed);

#endif
