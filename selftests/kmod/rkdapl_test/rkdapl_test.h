/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the files of rkdapl_test.ko share. The roles are described in main.c; the files:
 *
 *   main.c         module parameters, the roles, module_init
 *   tap.c          TAP lines, names of errnos, events, statuses and ops, test patterns
 *   side.c         one side of a connection (server, client): events, messages, set-up
 *   server.c       role=server (and loopback's server thread)
 *   client.c       role=client (and loopback's client): the data tests
 *   badarg.c       role=badarg: bad arguments on unconnected objects, then connected.c
 *   pair.c         badarg's loopback pair (struct bctx) and its helpers
 *   connected.c    state errors on a connected pair (CRs, DTO arguments); runs the suites below
 *   rmr.c          rmr_bind errors, grants and what they allow
 *   completions.c  completions at disconnect and teardown, EVD overflow, suppression
 *   dto_forms.c    WRITE with immediate, SEND with invalidate, fence, solicited, chains
 *   send_sg.c      rkdapl_post_send_sg(): SENDs from lent pages, bytes compared; its refusals
 *   events.c       EVD upcalls, CRs answered in an upcall, an interrupted evd_wait, the async EVD
 *   cm_free.c      an EP freed while its connection event is in delivery; calls refused in upcalls
 *   atomics.c      fetch-and-add and compare-and-swap: a shared counter, a lock, refusals
 *   lmr_kinds.c    LMRs of page arrays, scatterlists and provider-allocated memory
 *   ep_attr.c      RNR retries, RDMA READ limits
 *   iwarp.c        on iWARP (siw): what the transport reports and refuses
 *   ep_reset.c     role=reset: EP reuse (rkdapl_ep_reset); the small pair set-up it shares with
 *   port_events.c  role=ports: port events on the async EVD across a link down/up
 *   net.c          addresses of either family; each side's network namespace and local address
 *   netns.c        role=netns: two network namespaces joined by a veth pair, rxe on each end
 *   fuzz.c         role=fuzz: random sequences of calls with bad handles, a concurrent freer
 */
#ifndef _RKDAPL_TEST_H
#define _RKDAPL_TEST_H

#include <linux/module.h>
#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/mm.h>
#include <linux/kthread.h>
#include <linux/sched/signal.h>
#include <linux/completion.h>
#include <linux/mutex.h>
#include <linux/jiffies.h>
#include <linux/random.h>
#include <linux/delay.h>
#include <linux/random.h>
#include <linux/inet.h>
#include <linux/in.h>
#include <linux/un.h>
#include <linux/string.h>
#include <linux/netdevice.h>
#include <linux/inetdevice.h>
#include <linux/log2.h>
#include <linux/preempt.h>
#include <linux/highmem.h>
#include <linux/scatterlist.h>
#include "../../../include/rkdapl.h"

/* module parameters (main.c) */
extern char *role;
extern char *dev;
extern char *peer;
extern ushort port;
extern uint timeout_ms;
extern uint listen_ms;
extern uint connect_ms;

#define WHY 200
#define GUARD 64
#define BIGBUF (1024 * 1024)
#define STASH 64
#define SLOT 256

/* ---- tap.c -------------------------------------------------------------------------------- */

__printf(3, 4) bool tap(bool ok, const char *name, const char *fmt, ...);
void tap_start(void);
void tap_skip(const char *name, const char *reason);
int tap_finish(void);
const char *ename(int e);
bool expect(int got, int want, const char *what);
/* Names of event types, DTO statuses and DTO ops: rkdapl's own (include/rkdapl.h). */
#define evname(t) rkdapl_event_msg(t)
#define stname(s) rkdapl_status_msg(s)
#define opname(op) rkdapl_op_msg(op)

/* Test patterns: a byte stream per 32-bit seed; position i of the stream is byte i. */
static inline u32 mix32(u32 x)
{
	x ^= x >> 16;
	x *= 0x7feb352d;
	x ^= x >> 15;
	x *= 0x846ca68b;
	x ^= x >> 16;
	return x;
}

static inline u32 pat_word(u32 seed, u64 i)
{
	return mix32(seed * 0x9e3779b1u + (u32)(i >> 2) + (u32)(i >> 34) * 0x85ebca77u);
}

void pat_fill(void *buf, u64 off, u64 len, u32 seed);
s64 pat_check(const void *buf, u64 off, u64 len, u32 seed);
u32 poison_seed(u32 seed);

/* ---- side.c: one side of a connection ------------------------------------------------------ */

struct side {
	const char *who;
	bool server;		/* the server side (nside[0]), or the client (nside[1]) */
	struct rkdapl_ia *ia;
	struct rkdapl_pz *pz;
	struct rkdapl_evd *dto_evd, *conn_evd, *psp_evd;
	struct rkdapl_psp *psp;
	struct rkdapl_ep *ep;
	struct rkdapl_ia_attr attr;
	bool dead;		/* connection lost: the remaining tests fail at once */
	/*
	 * The SEND in flight is the last message: the peer disconnects as soon as it has it,
	 * which may flush the SEND before its ACK is processed. FLUSHED then counts as sent.
	 */
	bool last_send;
	u64 cookie;
	u32 seq;
	/* messages: slot 0 sends, slot 1 receives */
	u8 *msg;
	struct rkdapl_lmr *msg_lmr;
	u64 rx_cookie;
	/* SEND data (client: source, kmalloc; server: RECV target, kmalloc) */
	u8 *dbuf;
	u64 dlen;
	struct rkdapl_lmr *d_lmr;
	/* RDMA (client: local buffer; server: the granted buffer) */
	u8 *rbuf;
	u64 rlen;
	/*
	 * Bytes of rbuf the server grants: all of it, or max_rmr_pages pages if fewer (siw
	 * maps 256 per registration, one less than rbuf's 1 MiB + 1 page); at least BIGBUF.
	 */
	u64 rgrant;
	bool rbuf_vmalloc;
	struct rkdapl_lmr *r_lmr;
	struct rkdapl_rmr *rmr;
	/* client: the server's grant */
	u32 rkey;
	u64 raddr, rgranted;
	int nstash;
	struct rkdapl_event stash[STASH];
	struct rkdapl_event last;	/* the last event dto_expect() accepted */
};

#define TMSG_MAGIC 0x544b4452	/* "RDKT" */
#define CLIENT_PDATA "rkdapl_test client hello"
#define SERVER_PDATA "rkdapl_test server accept"

enum tcmd {
	CMD_HELLO = 1,		/* server -> client: the grant (rkey, addr, len) */
	CMD_SEND_PREP,		/* post a RECV for a SEND of len bytes, then RESULT after it */
	CMD_WRITE_PREP,		/* poison the granted buffer before an RDMA WRITE */
	CMD_CHECK,		/* verify the granted buffer after an RDMA WRITE */
	CMD_READ_PREP,		/* fill the granted buffer before an RDMA READ */
	CMD_BYE,		/* unbind the grant; the client disconnects next */
	CMD_READY,		/* server -> client: prepared (status 0) or not */
	CMD_RESULT,		/* server -> client: verified (status 0) or not */
	/*
	 * Poison the granted buffer and post a RECV for an RDMA WRITE with immediate (addr:
	 * the length it writes, seed: its immediate data); after it, RESULT.
	 */
	CMD_WRITE_IMM_PREP,
	/*
	 * Sent with SEND with invalidate of the grant's rkey: check that the grant ended, bind
	 * it again and answer RESULT with the new rkey and address.
	 */
	CMD_INVALIDATED,
	/*
	 * iWARP: client -> server, the first message. MPA (RFC 5044) has the connecting side
	 * send first; siw fails its connect if the server's grant arrives with the MPA reply.
	 */
	CMD_START,
};

struct tmsg {
	u32 magic;
	u32 cmd;
	u32 seq;
	u32 seed;
	u64 len;
	s32 status;
	u32 rkey;
	u64 addr;
	s64 bad;
	char why[96];
};

u64 next_cookie(struct side *s);
int ev_wait(struct rkdapl_evd *evd, u32 ms, struct rkdapl_event *ev);
int wait_cookie(struct side *s, u64 cookie, struct rkdapl_event *ev);
int dto_expect(struct side *s, u64 cookie, u32 op, s64 len, char *why);
int conn_expect(struct rkdapl_evd *evd, struct rkdapl_ep *ep, u32 type, u32 ms,
		struct rkdapl_event *ev);
void evd_drain(struct rkdapl_evd *evd);
int send_msg_inv(struct side *s, struct tmsg *m, u32 inv_rkey, char *why);
int send_msg(struct side *s, struct tmsg *m, char *why);
int post_rx(struct side *s, char *why);
int recv_msg(struct side *s, struct tmsg *m, char *why);
int side_open(struct side *s, bool server, char *why);
int side_close(struct side *s, char *why);
int parse_peer(struct sockaddr_in *sin, u16 p);

/* ---- the roles ---------------------------------------------------------------------------- */

extern bool server_abort;	/* loopback: the client gave up before connecting */
int server_run(void);
int client_run(void);
int badarg_run(void);

/* ---- pair.c: badarg's loopback pair -------------------------------------------------------- */

/* Pages that are never physically adjacent: one DMA segment (and one RMR page) each. */
struct sparse {
	struct page **pages;
	unsigned int n;
	void *addr;
};

struct bctx {
	struct rkdapl_ia *ia;
	struct rkdapl_ia_attr attr;
	struct rkdapl_pz *pz, *pz2;
	struct rkdapl_evd *evd, *psp_evd;
	struct rkdapl_psp *psp;
	void *foreign;
	struct sockaddr_in self;
	/* pair_connect_attr()'s source: self's address, port from_port (0: any) */
	struct sockaddr_in from;
	u16 from_port;
	/* connected part */
	struct side *c, *s;
	u8 *bufa, *bufb, *bufx;
	struct rkdapl_lmr *lmr_a;	/* bufa (vmalloc): all privileges (the server's target) */
	struct rkdapl_lmr *lmr_k;	/* bufb (kmalloc): all privileges */
	struct rkdapl_lmr *lmr_b;	/* bufb: local write (the client's buffer) */
	struct rkdapl_lmr *lmr_ro;	/* bufb: remote read only, no local write */
	struct rkdapl_lmr *lmr_lw;	/* bufb: local write only */
	struct rkdapl_lmr *lmr_rd;	/* bufa: local write + remote read */
	struct rkdapl_lmr *lmr_x;	/* bufx, on pz2: all privileges */
	struct rkdapl_lmr *lmr_sp;	/* sparse pages: all privileges */
	struct rkdapl_rmr *rmr, *rmr_x;
	struct sparse sp;
	/* rkdapl_cr_query() of the last CR pair_connect_attr() accepted, and its return */
	struct rkdapl_cr_param crp;
	int crq;
};

#define ALL_PRIV (RKDAPL_MEM_LOCAL_WRITE | RKDAPL_MEM_REMOTE_READ | RKDAPL_MEM_REMOTE_WRITE)
#define BUFSZ (4 * PAGE_SIZE)

/* True if @len bytes at @p are all @v. */
static inline bool all_bytes(const u8 *p, size_t len, u8 v)
{
	return !memchr_inv(p, v, len);
}

int sparse_alloc(struct sparse *sp, unsigned int n);
void sparse_free(struct sparse *sp);
int pair_connect_attr(struct bctx *b, struct rkdapl_ep_attr *cattr,
		      struct rkdapl_ep_attr *sattr, char *why);
int pair_connect(struct bctx *b, char *why);
void pair_close(struct bctx *b);
int grant(struct bctx *b, struct rkdapl_rmr *rmr, struct rkdapl_lmr *lmr, u64 off,
	  u64 len, u32 priv, struct rkdapl_rmr_triplet *rt, char *why);
int ungrant(struct bctx *b, struct rkdapl_rmr *rmr, char *why);
int pair_grant(struct bctx *b, struct rkdapl_rmr **rmr, u64 len, u32 priv,
	       struct rkdapl_rmr_triplet *rt, char *why);
int write_status(struct bctx *b, u64 loff, u64 len, struct rkdapl_rmr_triplet rt,
		 u64 roff, s32 *status, char *why);

/* ---- the connected suites, in the order connected.c runs them ------------------------------ */

void badarg_connected(struct bctx *b);
int badarg_connected_free(struct bctx *b);
void rmr_tests(struct bctx *b);
void pooled_rmr_tests(struct bctx *b);
void completion_tests(struct bctx *b);
void dto_forms(struct bctx *b);
void send_sg_tests(struct bctx *b);
void upcall_tests(struct bctx *b);
void cr_upcall_tests(struct bctx *b);
void async_evd_tests(struct bctx *b);
void lmr_kinds(struct bctx *b);
void rnr_tests(struct bctx *b);
void evd_intr_test(struct bctx *b);
void rd_negotiation_test(struct bctx *b);
void cm_free_tests(struct bctx *b);
void atomic_tests(struct bctx *b);
/* iwarp.c: an iWARP device's rules (in place of rnr_tests) */
bool is_iwarp(const struct rkdapl_ia_attr *a);
void iwarp_tests(struct bctx *b);
int rej_status(const struct bctx *b);
bool write_refused(struct bctx *b, s32 status, bool split, char *why);
void iwarp_suppressed_refused(struct bctx *b, int r, u64 c);

/* ---- ep_reset.c, port_events.c: roles reset and ports ------------------------------------ */

int xpair_setup(struct bctx *b, u16 psp_port, char *why);
void xpair_teardown(struct bctx *b);
int xpair_connect(struct bctx *b, char *why);
int xpair_verify(struct bctx *b, u32 seed, char *why);
int xpair_disconnect(struct bctx *b, char *why);
int reset_run(void);
int ports_run(void);
int fuzz_run(void);
int removal_free_run(void);

/* ---- net.c, netns.c: IPv6 and network namespaces ----------------------------------------- */

struct sockaddr_storage;
struct net;

/* What side_open() opens a side's IA with: nside[0] the server, nside[1] the client. */
struct net_side {
	struct net *net;	/* NULL: the initial namespace (rkdapl_ia_open[_addr]) */
	const char *local;	/* open the IA by this address; NULL or "": by dev= */
	const char *peer;	/* the peer's address, checked by check_cr_peer/check_ep_peer */
};

extern struct net_side nside[2];
extern char *local;
extern int netns_pid;
int parse_addr(struct sockaddr_storage *ss, const char *s, u16 p);
bool same_ip(const struct sockaddr_storage *a, const struct sockaddr_storage *b);
u16 addr_port(const struct sockaddr_storage *a);
int side_ia_open(struct side *s, char *why);
void check_cr_peer(struct side *s, struct rkdapl_cr *cr);
void check_ep_peer(struct side *s);
int net_setup(void);
void net_teardown(void);
int netns_run(void);

#endif /* _RKDAPL_TEST_H */
