/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the three files of rkdapl_sample share: its wire messages, struct sample, and the
 * functions main.c offers server.c and client.c. The protocol (one RC connection, messages in
 * host byte order: both sides are the same arch):
 *
 *   client                                   server
 *     connect("rkdapl-sample")  ----------->   CONNECTION_REQUEST, accept
 *     SEND request {size}       ----------->   RMR per payload segment, bind
 *                               <-----------   SEND advertisement {nseg, {addr, rkey, len}[]}
 *     RDMA WRITE pattern into the segments (timed)
 *     RDMA READ it back (timed), compare
 *     SEND with invalidate of segment 0's rkey:
 *       done {checksum}         ----------->   compare its buffer with the pattern + checksum;
 *                                              the RECV says the client ended grant 0
 *                               <-----------   SEND verdict {ok}
 *     disconnect                ----------->   DISCONNECTED
 */
#ifndef _RKDAPL_SAMPLE_H
#define _RKDAPL_SAMPLE_H

#define pr_fmt(fmt) "rkdapl_sample: " fmt

#include <linux/sizes.h>
#include <linux/types.h>

#include "../sample_conn.h"

/* The module's parameters (main.c) that the two sides read. */
extern char *dev;
extern char *server;
extern ushort port;
extern ulong size;
extern uint inflight;
extern bool lmr_per_seg;

#define SAMPLE_MAX_SIZE SZ_64M
#define SAMPLE_PRIVATE "rkdapl-sample"
/* Largest DTO the client posts: 1 MiB = 256 vmalloc pages, one SGE each. */
#define SAMPLE_MAX_DTO SZ_1M
/* Largest RMR segment the server grants. */
#define SAMPLE_MAX_SEG SZ_1M

#define MSG_REQUEST 0x524b5131u	/* "RKQ1" */
#define MSG_ADVERT 0x524b4131u	/* "RKA1" */
#define MSG_DONE 0x524b4431u	/* "RKD1" */
#define MSG_VERDICT 0x524b5631u	/* "RKV1" */

struct sample_seg {
	u64 address;
	u32 rkey;
	u32 len;
};

/* Every message: a fixed header, the advertisement adds its segments. */
struct sample_msg {
	u32 magic;
	u32 nseg;	/* advertisement: entries in seg[] */
	u32 ok;		/* done: client's own check passed; verdict: server's check passed */
	u32 reserved;
	u64 size;	/* request, advertisement, done: payload bytes */
	u64 checksum;	/* done, verdict: checksum of the payload */
	struct sample_seg seg[];
};

#define SAMPLE_MSG_BUF 8192
#define SAMPLE_MAX_SEGS ((SAMPLE_MSG_BUF - sizeof(struct sample_msg)) / sizeof(struct sample_seg))

/* The kinds of the cookies (COOKIE()): an index below. */
enum sample_kind { K_SEND = 1, K_RECV, K_WRITE, K_READ, K_BIND };

struct sample {
	struct sconn c;		/* IA, PZ, EVD, PSP, EP and the connection's events */

	u8 *payload;
	struct rkdapl_lmr *payload_lmr;
	u8 *readback;
	struct rkdapl_lmr *readback_lmr;
	struct sample_msg *tx, *rx;
	struct rkdapl_lmr *tx_lmr, *rx_lmr;

	struct rkdapl_rmr **rmrs;
	u32 nrmr;
	struct rkdapl_lmr **seg_lmrs;	/* lmr_per_seg */
	u32 nseg_lmr;
	struct sample_seg *segs;
	u32 nseg;

	/* DTO state, updated by sample_dto_event(). */
	u32 sq_inflight;
	u32 sends_posted, sends_done;
	u32 recvs_posted, recvs_done;
	u64 rx_len;
	u32 rx_flags;		/* &enum rkdapl_event_flags of the last RECV */
	u32 rx_inv_rkey;	/* its invalidated rkey */
	u32 binds_done;
	u32 rdma_done;
	u64 rdma_bytes;
	unsigned long *seen;
	u32 nseen;
};

/* main.c: the payload */
void sample_pattern_fill(u8 *buf, u64 len);
u64 sample_pattern_check(const u8 *buf, u64 len);
u64 sample_checksum(const u8 *buf, u64 len);

/* main.c: messages, DTO batches, set-up */
int sample_post_recv(struct sample *s);
int sample_post_send_inv(struct sample *s, u32 len, u32 inv_rkey);
int sample_post_send(struct sample *s, u32 len);
int sample_start_msg(struct sample *s, u32 magic);
int sample_send(struct sample *s, u32 len, const char *what);
int sample_recv(struct sample *s, u32 magic, u64 min_len, const char *what);
int sample_new_batch(struct sample *s, u32 n);
int sample_sq_room(struct sample *s, u32 window, const char *what);
int sample_open(struct sample *s);

/* server.c, client.c */
int server_run(struct sample *s);
int client_run(struct sample *s);

#endif /* _RKDAPL_SAMPLE_H */
