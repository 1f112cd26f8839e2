/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What rkdblk_srv's files share: the server's state and its connections (main.c: module
 * parameters, the PSP, accepting and freeing connections, the device's removal), the commands
 * (cmd.c: RECVs, the file I/O, RDMA READ of a WRITE's data, completions, send-queue flow
 * control), and access.c's allow-list and rejects.
 */
#ifndef RKDBLK_SRV_H
#define RKDBLK_SRV_H

#include <linux/atomic.h>
#include <linux/bvec.h>
#include <linux/fs.h>
#include <linux/list.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include "../../include/rkdapl.h"

#include "proto.h"

struct rkdapl_cr;
struct rkdapl_event;

/* Bytes per command at most. */
#define SRV_MAX_IO (128 * 1024)
/* In-capsule bytes per command at most. */
#define SRV_MAX_INLINE (16 * 1024)

/* Cookies: the kind in the top 32 bits, the RECV index or the tag below. */
enum { K_RECV = 1, K_READ, K_SEND, K_WRITE };
#define COOKIE(k, i) (((u64)(k) << 32) | (i))

struct srv_conn;

/* What a command posts next: its RDMA READ (a WRITE command's data) or its completion. */
enum { P_FETCH = 1, P_RESPOND };

/* One command slot, picked by the command's tag. */
struct srv_cmd {
	struct work_struct work;
	struct srv_conn *c;
	struct rkdblk_cmd cmd;
	/* Set by the upcall for a command refused before any I/O; then the completion's status. */
	int status;
	/* 1 once its RDMA READ (a WRITE command's data) completed. */
	int fetched;
	/*
	 * The RECV an in-capsule WRITE's data is in, posted again once the data is written
	 * (respond()); -1: none.
	 */
	int recv;
	/* P_FETCH or P_RESPOND, and the first DTO of the completion's chain not yet posted. */
	u8 pending;
	u8 next;
	/* Under the connection's lock: a command of this tag is being served. */
	bool busy;
	/* Under the connection's lock: on its wait list (empty when not). */
	struct list_head wait;
	/*
	 * The file I/O submitted from the DTO upcall (serve()), and, when its completion
	 * came where the response cannot be posted, the status the work responds with (io_done).
	 */
	struct kiocb iocb;
	int io_status;
	bool io_done;
	/* That I/O's buffer's pages: the kiocb's iov_iter, which its bio uses until it ends. */
	struct bio_vec bvec[SRV_MAX_IO / PAGE_SIZE + 1];
};

struct srv_port;

struct srv_conn {
	struct list_head node;
	/* The device (listener) it came in on. */
	struct srv_port *port;
	struct rkdapl_ep *ep;
	struct rkdapl_evd *evd;
	struct rkdapl_lmr *lmr;
	/*
	 * depth command buffers and depth completions, then (page-aligned) depth in-capsule
	 * buffers of inline_len, each the second buffer of its RECV, and depth data buffers of
	 * SRV_MAX_IO.
	 */
	void *mem;
	/* mem's pages, for the I/O submitted from the upcall (serve()). */
	struct page **pages;
	u32 depth;
	/* In-capsule bytes per command: inline_data_size at accept (0: RECVs of a command only). */
	u32 inline_len;
	/* READs with RKDBLK_FLAG_INLINE are answered in-capsule (the accept said so). */
	bool inline_reads;
	u32 queue;
	atomic_t dead;
	struct srv_cmd *cmds;
	/*
	 * Guards each command's busy and wait, and the posts in wait-list order. Taken in
	 * process context only (the commands' work and the DTO upcall, which runs in the CQ's
	 * completion work), as nvmet-rdma takes its wait list's lock.
	 */
	spinlock_t lock;
	/* Commands waiting for send-queue slots, oldest first. */
	struct list_head waiting;
	/*
	 * Responses posted with RKDAPL_COMPLETION_SUPPRESS since the last one posted with its
	 * completion event, and how many may be in a row (post_pending()). Under the lock.
	 */
	u32 quiet;
	u32 report_every;
	/*
	 * Coalesced completions (the connect asked, RKDBLK_ACCEPT_COALESCE): up to batch_max
	 * plain completions go out in one SEND. batch holds the tags of those prepared and not
	 * yet posted (batch_n of them), which batch_work posts once the CQ's completion work that
	 * prepared them has returned (coalesce()). Under the lock.
	 */
	bool coalesce;
	u32 batch_max;
	u32 batch_n;
	u16 batch[RKDBLK_COALESCE_MAX];
	struct rkdapl_lmr_triplet batch_sges[RKDBLK_COALESCE_MAX];
	struct work_struct batch_work;
	/* Set once the client broke the protocol: nothing more is served (conn_drop()). */
	atomic_t dropped;
	/* Disconnects a client that broke the protocol. */
	struct work_struct drop;
	/* File I/O submitted from the upcall and not yet answered (conn_free() waits for it). */
	atomic_t io;
};

/* Devices the server listens on at most (dev=A,B: a client's two paths). */
#define SRV_MAX_PORTS 2

/*
 * One device the server listens on: its IA, PSP and connections, and the thread that accepts
 * them and listens again after the device's removal.
 */
struct srv_port {
	char dev[64];
	u16 port;
	struct rkdapl_ia *ia;
	struct rkdapl_pz *pz;
	struct rkdapl_evd *psp_evd;
	struct rkdapl_psp *psp;
	struct task_struct *thread;
	struct list_head conns;
	/* The device has SEND with immediate data (not iWARP): in-capsule READs are offered. */
	bool imm;
	/* Work requests per queue the device takes (&rkdapl_ia_attr.max_dtos). */
	u32 max_dtos;
	/* SGEs per work request the device takes (&rkdapl_ia_attr.max_iov). */
	u32 max_iov;
	/* Times the PSP was made again after the device came back. */
	unsigned int relistened;
};

/* The server: one export, and one IA, PSP and connections per device. */
struct srv_state {
	struct file *file;
	u64 capacity;
	struct srv_port ports[SRV_MAX_PORTS];
	unsigned int nports;
	struct workqueue_struct *wq;
	/*
	 * Commands served, WRITEs of them with in-capsule data, READs answered in-capsule, posts
	 * that waited for send-queue slots, and responses posted without a completion event, for
	 * the unload line.
	 */
	atomic64_t served;
	atomic64_t inlined;
	atomic64_t inline_reads;
	atomic64_t waited;
	atomic64_t quiet;
	/* Completions that went out coalesced, and the SENDs that carried them. */
	atomic64_t coalesced;
	atomic64_t coalesced_sends;
	/* Connections disconnected for breaking the protocol (conn_drop()). */
	atomic64_t dropped;
	/* WRITE commands refused because the export is read-only. */
	atomic64_t refused_writes;
	/* Connection requests refused for naming another export than nqn=. */
	atomic64_t other_export;
	/* rkdblk_nqn_hash() of nqn= (0: the export has no name, any connect is taken). */
	u32 nqn_hash;
	/* I/Os submitted from the DTO upcall (serve()), and those of them redone in the work. */
	atomic64_t upcall_io;
	atomic64_t io_retried;
	/* path was opened read-only (read_only=1 at load). */
	bool file_ro;
	/*
	 * path (a block device, or a regular file on a filesystem such as ext4 or XFS) was opened
	 * with O_DIRECT and takes IOCB_NOWAIT (FMODE_NOWAIT): its I/O is submitted from the DTO
	 * upcall as an asynchronous kiocb with IOCB_NOWAIT (serve()), as nvmet's file backend
	 * does, not from a work item.
	 */
	bool async_io;
	/*
	 * WRITEs too (a block device). A regular file's WRITEs go to the work: kernel_write()
	 * holds the filesystem's freeze protection (sb_start_write), which a kiocb submitted here
	 * would not, and ext4 answers IOCB_NOWAIT with -EAGAIN whenever the file's mtime must
	 * change, which is nearly every write.
	 */
	bool async_writes;
	/*
	 * The DMA and block-size alignment mask of path's block device (511 for a regular
	 * file, whose direct I/O checks its own): serve() gives the work the I/O it misses.
	 */
	unsigned int dio_align;
	struct dentry *debugfs;
	/*
	 * Test hook, in debugfs only (/sys/kernel/debug/rkdblk_srv/stall, root's, mode 0600):
	 * while nonzero, commands are taken (their tags busy) but never answered.
	 */
	u32 stall;
};

extern struct srv_state srv;

/* main.c */
bool srv_read_only(void);

/* cmd.c */
u64 data_off(struct srv_conn *c, u32 tag);
int post_recv(struct srv_conn *c, u32 i);
void cmd_work(struct work_struct *w);
void drop_work(struct work_struct *w);
void batch_work(struct work_struct *w);
void dto_upcall(void *ctx, const struct rkdapl_event *ev);

/* access.c */
int srv_allow_parse(const char *list);
void srv_allow_free(void);
bool srv_admit(struct rkdapl_cr *cr);
void srv_reject(struct rkdapl_cr *cr, u16 reason);
long long srv_refused(void);

#endif
