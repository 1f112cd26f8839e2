// SPDX-License-Identifier: GPL-2.0
/*
 * rkdblk_srv's commands (docs/blockdev.md): a connection's RECVs, each command's file I/O, the
 * RDMA READ of a WRITE's data from the client's grant, the completion (a SEND with invalidate,
 * a plain SEND, or an in-capsule READ's SEND with immediate data), and the send queue's flow
 * control (the wait list). The connections themselves are main.c's.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/wait_bit.h>
#include "../../include/rkdapl.h"

#include "srv.h"

static u64 cmd_off(struct srv_conn *c, u32 i)
{
	return (u64)i * sizeof(struct rkdblk_cmd);
}

static u64 resp_off(struct srv_conn *c, u32 tag)
{
	return (u64)c->depth * sizeof(struct rkdblk_cmd) + (u64)tag * sizeof(struct rkdblk_resp);
}

/*
 * The in-capsule and data buffers start on a page boundary, and are multiples of 512 bytes
 * long: O_DIRECT needs them aligned to the block size.
 */
static u64 inline_off(struct srv_conn *c, u32 i)
{
	return round_up((u64)c->depth * (sizeof(struct rkdblk_cmd) + sizeof(struct rkdblk_resp)),
			PAGE_SIZE) +
	       (u64)i * c->inline_len;
}

u64 data_off(struct srv_conn *c, u32 tag)
{
	return round_up(inline_off(c, c->depth), PAGE_SIZE) + (u64)tag * SRV_MAX_IO;
}

/* RECV @i: the command into its buffer, in-capsule data (if any) into its own. */
int post_recv(struct srv_conn *c, u32 i)
{
	struct rkdapl_lmr_triplet t[2] = {
		{ c->lmr, cmd_off(c, i), sizeof(struct rkdblk_cmd) },
		{ c->lmr, inline_off(c, i), c->inline_len },
	};

	return rkdapl_post_recv(c->ep, t, c->inline_len ? 2 : 1, COOKIE(K_RECV, i), 0);
}

/*
 * Posts again the RECV whose in-capsule data @sc's WRITE held. Before the command's response
 * is posted: the client sends its next command only after a response, so it always finds a
 * RECV (docs/blockdev.md, "Credits"). Process context (the command's work).
 */
static void release_recv(struct srv_cmd *sc)
{
	struct srv_conn *c = sc->c;
	int ret;

	if (sc->recv < 0)
		return;
	ret = post_recv(c, sc->recv);
	if (ret && !atomic_read(&c->dead))
		pr_warn("queue %u: RECV %d not posted again: %d\n", c->queue, sc->recv, ret);
	sc->recv = -1;
}

/* Writes the completion of the command in @sc with @status, to post next. Any context. */
static void prepare_response(struct srv_cmd *sc, int status)
{
	struct srv_conn *c = sc->c;
	u32 tag = sc - c->cmds, len = le32_to_cpu(sc->cmd.length);
	struct rkdblk_resp *r = c->mem + resp_off(c, tag);

	memset(r, 0, sizeof(*r));
	r->cid = sc->cmd.cid;
	r->status = cpu_to_le32((u32)status);
	rkdapl_lmr_sync_rdma_read(c->lmr, resp_off(c, tag), sizeof(*r));
	if (!status && sc->cmd.op == RKDBLK_OP_READ && len)
		rkdapl_lmr_sync_rdma_read(c->lmr, data_off(c, tag), len);
	sc->status = status;
	sc->pending = P_RESPOND;
	sc->next = 0;
	atomic64_inc(&srv.served);
	if (!status && sc->cmd.op == RKDBLK_OP_READ && (sc->cmd.flags & RKDBLK_FLAG_INLINE))
		atomic64_inc(&srv.inline_reads);
}

/* Posts the one SEND @d (as rkdapl_post_chain() would); @posted: 1 if it was. */
static int post_one(struct rkdapl_ep *ep, const struct rkdapl_dto *d, u32 *posted)
{
	int ret;

	switch (d->op) {
	case RKDAPL_DTO_SEND_IMM:
		ret = rkdapl_post_send_imm(ep, d->iov, d->num_iov, d->immediate, d->cookie,
					   d->flags);
		break;
	case RKDAPL_DTO_SEND_INVALIDATE:
		ret = rkdapl_post_send_with_invalidate(ep, d->iov, d->num_iov, d->invalidate_rkey,
						       d->cookie, d->flags);
		break;
	default:
		ret = rkdapl_post_send(ep, d->iov, d->num_iov, d->cookie, d->flags);
		break;
	}
	*posted = !ret;
	return ret;
}

/*
 * Counts a response posted (one command's, or a batch's) with completion suppress or not:
 * the run of suppressed ones that post_pending()'s rule bounds. Under the lock.
 */
static void response_posted(struct srv_conn *c, bool quiet)
{
	c->quiet = quiet ? c->quiet + 1 : 0;
	if (quiet)
		atomic64_inc(&srv.quiet);
}

/*
 * Posts what @sc has pending (sc->pending): its RDMA READ, or its completion from DTO
 * sc->next of the chain on. The completion is a SEND with invalidate of the client's grant
 * when the command had one, with the data's RDMA WRITE chained before it for a successful
 * READ; a successful in-capsule READ's is the data itself, a SEND with immediate data (the
 * cid). The tag is free again before the post, as the client may reuse it as soon as the
 * completion arrives, and busy again if the send queue is full. Under the connection's lock.
 *
 * A response is posted with RKDAPL_COMPLETION_SUPPRESS: its completion would tell this side
 * nothing (the client's next command on the tag means it arrived, and its buffers are
 * reused only then), and rkdapl posts it unsignalled, so no work completion is polled for
 * it. Only a completion event posts what waits for send-queue slots (dto_upcall()), so one
 * response in report_every (a quarter of the send queue's DTOs, accept_one()) is posted with
 * its event, and so is every response while other commands wait: then at most
 * 2 * report_every - 1 suppressed DTOs (a response's WRITE and SEND) are posted in a row,
 * fewer than fill the send queue's contexts or its work requests, and a send queue full
 * enough to refuse a post always holds one whose event comes later. RDMA READs always
 * report.
 */
static int post_pending(struct srv_cmd *sc)
{
	struct srv_conn *c = sc->c;
	u32 tag = sc - c->cmds, len = le32_to_cpu(sc->cmd.length);
	struct rkdapl_lmr_triplet data = { c->lmr, data_off(c, tag), len };
	struct rkdapl_lmr_triplet resp = { c->lmr, resp_off(c, tag), sizeof(struct rkdblk_resp) };
	struct rkdapl_rmr_triplet remote = {
		.address = le64_to_cpu(sc->cmd.address),
		.rkey = le32_to_cpu(sc->cmd.rkey),
		.length = len,
	};
	struct rkdapl_dto dtos[2] = {};
	u32 n = 0, posted = 0;
	bool quiet;
	int ret;

	lockdep_assert_held(&c->lock);
	if (sc->pending == P_FETCH)
		return rkdapl_post_rdma_read(c->ep, &data, 1, &remote, COOKIE(K_READ, tag), 0);
	if (!sc->status && sc->cmd.op == RKDBLK_OP_READ && (sc->cmd.flags & RKDBLK_FLAG_INLINE)) {
		dtos[n].op = RKDAPL_DTO_SEND_IMM;
		dtos[n].immediate = le32_to_cpu(sc->cmd.cid);
		dtos[n].iov = &data;
		dtos[n].num_iov = 1;
		dtos[n].cookie = COOKIE(K_SEND, tag);
		n++;
		goto post;
	}
	if (!sc->status && sc->cmd.op == RKDBLK_OP_READ && len) {
		dtos[n].op = RKDAPL_DTO_RDMA_WRITE;
		dtos[n].flags = RKDAPL_COMPLETION_SUPPRESS;
		dtos[n].iov = &data;
		dtos[n].num_iov = 1;
		dtos[n].remote = remote;
		dtos[n].cookie = COOKIE(K_WRITE, tag);
		n++;
	}
	dtos[n].op = remote.rkey ? RKDAPL_DTO_SEND_INVALIDATE : RKDAPL_DTO_SEND;
	dtos[n].invalidate_rkey = remote.rkey;
	dtos[n].iov = &resp;
	dtos[n].num_iov = 1;
	dtos[n].cookie = COOKIE(K_SEND, tag);
	n++;
post:
	quiet = c->quiet + 1 < c->report_every && list_is_singular(&c->waiting);
	if (quiet)
		dtos[n - 1].flags = RKDAPL_COMPLETION_SUPPRESS;
	sc->busy = false;
	if (n - sc->next == 1)
		/* One SEND (the common case): its own post call, without a chain's lists. */
		ret = post_one(c->ep, &dtos[sc->next], &posted);
	else
		ret = rkdapl_post_chain(c->ep, dtos + sc->next, n - sc->next, &posted);
	if (!ret)
		response_posted(c, quiet);
	if (ret == -ENOSPC) {
		/* The chain stops at the first DTO without a slot: the next post resumes there. */
		sc->next += posted;
		sc->busy = true;
	}
	return ret;
}

/*
 * Posts the pending DTOs of the waiting commands, oldest first, until the send queue is full.
 * A failed RDMA READ turns into its command's completion with the error. Under the
 * connection's lock.
 */
static void post_waiting(struct srv_conn *c)
{
	struct srv_cmd *sc;
	int ret;

	lockdep_assert_held(&c->lock);
	while ((sc = list_first_entry_or_null(&c->waiting, struct srv_cmd, wait))) {
		ret = post_pending(sc);
		if (ret == -ENOSPC)
			return;
		if (ret && sc->pending == P_FETCH) {
			prepare_response(sc, ret);
			continue;
		}
		list_del_init(&sc->wait);
		if (ret && !atomic_read(&c->dead))
			pr_warn("queue %u: completion of tag %u not posted: %d\n", c->queue,
				(u32)(sc - c->cmds), ret);
	}
}

/*
 * Posts @sc's pending DTOs behind the commands already waiting for send-queue slots, or
 * leaves it waiting with them (counted in srv.waited: a WRITE command whose RDMA READ and
 * response both waited counts twice). Process context (the command's work).
 */
static void submit(struct srv_cmd *sc)
{
	struct srv_conn *c = sc->c;

	spin_lock(&c->lock);
	list_add_tail(&sc->wait, &c->waiting);
	post_waiting(c);
	if (!list_empty(&sc->wait))
		atomic64_inc(&srv.waited);
	spin_unlock(&c->lock);
}

/*
 * Whether the prepared completion of @sc is a plain SEND of its struct rkdblk_resp alone (no
 * grant to invalidate, no READ data to send or write), which may go out coalesced.
 */
static bool plain_response(struct srv_cmd *sc)
{
	return !sc->cmd.rkey &&
	       !(!sc->status && sc->cmd.op == RKDBLK_OP_READ &&
		 ((sc->cmd.flags & RKDBLK_FLAG_INLINE) || sc->cmd.length));
}

/*
 * Posts the completions of the connection's batch in one SEND, gathered from their tags'
 * buffers (a struct rkdblk_resp each, one after the other on the wire), suppressed or not as
 * post_pending() decides for one: the batch counts as one response, one DTO. With commands
 * waiting for send-queue slots, or if the post finds none (-ENOSPC) or no memory for its
 * SGE lists (-ENOMEM: a single completion's post allocates nothing), each joins the wait
 * list to go out with its own SEND. Under the lock.
 */
static void post_batch(struct srv_conn *c)
{
	struct rkdapl_lmr_triplet *t = c->batch_sges;
	u32 i, n = c->batch_n;
	bool quiet;
	int ret = -ENOSPC;

	lockdep_assert_held(&c->lock);
	if (!n)
		return;
	c->batch_n = 0;
	for (i = 0; i < n; i++) {
		t[i].lmr = c->lmr;
		t[i].offset = resp_off(c, c->batch[i]);
		t[i].length = sizeof(struct rkdblk_resp);
		c->cmds[c->batch[i]].busy = false;
	}
	if (list_empty(&c->waiting)) {
		quiet = c->quiet + 1 < c->report_every;
		ret = rkdapl_post_send(c->ep, t, n, COOKIE(K_SEND, c->batch[0]),
				       quiet ? RKDAPL_COMPLETION_SUPPRESS : 0);
		if (!ret) {
			response_posted(c, quiet);
			if (n > 1) {
				atomic64_add(n, &srv.coalesced);
				atomic64_inc(&srv.coalesced_sends);
			}
			return;
		}
	}
	if (ret != -ENOSPC && ret != -ENOMEM) {
		if (!atomic_read(&c->dead))
			pr_warn("queue %u: %u completions not posted: %d\n", c->queue, n, ret);
		return;
	}
	for (i = 0; i < n; i++) {
		struct srv_cmd *sc = &c->cmds[c->batch[i]];

		sc->busy = true;
		list_add_tail(&sc->wait, &c->waiting);
		atomic64_inc(&srv.waited);
	}
	post_waiting(c);
}

/* Posts the connection's batch of completions (queued by coalesce()). */
void batch_work(struct work_struct *w)
{
	struct srv_conn *c = container_of(w, struct srv_conn, batch_work);

	spin_lock(&c->lock);
	post_batch(c);
	spin_unlock(&c->lock);
}

/*
 * Adds the prepared plain completion of @sc to its connection's batch. The batch goes out in
 * one SEND when it is full, or from batch_work, queued with the first completion on this
 * CPU's high-priority workqueue. The CQ's completion work (ib_cq's, on ib_comp_wq) runs in
 * the same per-CPU worker pool, which starts the next work item only when the running one
 * returns or sleeps: so batch_work runs after the completion work that prepared the batch
 * has handed over every command it polled, and the completions of the commands that arrived
 * together leave together, as a client's RECV completions polled together would be
 * (docs/blockdev.md, "Coalesced completions"). Process context.
 */
static void coalesce(struct srv_cmd *sc)
{
	struct srv_conn *c = sc->c;

	spin_lock(&c->lock);
	c->batch[c->batch_n++] = sc - c->cmds;
	if (c->batch_n == c->batch_max)
		post_batch(c);
	else if (c->batch_n == 1)
		queue_work_on(raw_smp_processor_id(), system_highpri_wq, &c->batch_work);
	spin_unlock(&c->lock);
}

/*
 * Sends the completion of the command in @sc with @status, after posting again the RECV its
 * in-capsule data held: coalesced with others if the client said it has other commands in
 * flight (RKDBLK_FLAG_COALESCE) and the completion is a plain SEND. Process context.
 */
static void respond(struct srv_cmd *sc, int status)
{
	release_recv(sc);
	prepare_response(sc, status);
	if (sc->c->coalesce && (sc->cmd.flags & RKDBLK_FLAG_COALESCE) && plain_response(sc))
		coalesce(sc);
	else
		submit(sc);
}

/*
 * A command can arrive before this side saw ESTABLISHED (rkdapl_cr_accept()), when posting
 * gets -ENOTCONN: wait for the state to settle, up to 5 s (work items may sleep).
 */
static void wait_connected(struct srv_conn *c)
{
	u32 state = RKDAPL_EP_STATE_PASSIVE_CONNECTION_PENDING;
	int i;

	for (i = 0; i < 5000; i++) {
		if (rkdapl_ep_get_state(c->ep, &state) ||
		    state != RKDAPL_EP_STATE_PASSIVE_CONNECTION_PENDING)
			return;
		usleep_range(1000, 2000);
	}
}

/* Where @sc's data is: an in-capsule WRITE's in its RECV's buffer, where it landed. */
static u64 io_off(struct srv_cmd *sc)
{
	struct srv_conn *c = sc->c;

	return sc->recv >= 0 ? inline_off(c, sc->recv) : data_off(c, sc - c->cmds);
}

/*
 * Points @iter (direction @dir) at the @len bytes of @sc's I/O buffer, through the pages the
 * connection looked up at accept: a bio_vec iterator, which the block layer's direct I/O takes
 * as the bio's own vector (no page lookup, no page references), as nvmet's file backend does.
 */
static void io_iter(struct srv_cmd *sc, struct iov_iter *iter, unsigned int dir, u32 len)
{
	u64 off = io_off(sc);
	u32 n = 0, done, in, take;

	for (done = 0; done < len; done += take, n++) {
		in = offset_in_page(off + done);
		take = min_t(u32, PAGE_SIZE - in, len - done);
		bvec_set_page(&sc->bvec[n], sc->c->pages[(off + done) >> PAGE_SHIFT], take, in);
	}
	iov_iter_bvec(iter, dir, sc->bvec, n, len);
}

static int io_status(struct srv_cmd *sc, ssize_t n)
{
	return n == le32_to_cpu(sc->cmd.length) ? 0 : n < 0 ? (int)n : -EIO;
}

/*
 * The file I/O serve() started is done (@ret bytes or an error): its response is posted
 * from here, in task context (where it was submitted, when the device completes at once, as
 * brd does), or from the command's work (a bio completed in interrupt context). An I/O the
 * device could not take without waiting (-EAGAIN: IOCB_NOWAIT met a full queue or needed
 * memory it could not get at once; -EOPNOTSUPP: a device without REQ_NOWAIT) is not an
 * answer: the command's work does it again, where waiting is allowed. Then conn_free() may
 * go on.
 */
static void io_done(struct kiocb *iocb, long ret)
{
	struct srv_cmd *sc = container_of(iocb, struct srv_cmd, iocb);
	struct srv_conn *c = sc->c;

	if (ret == -EAGAIN || ret == -EOPNOTSUPP) {
		atomic64_inc(&srv.io_retried);
		queue_work(srv.wq, &sc->work);
	} else if (in_task()) {
		respond(sc, io_status(sc, ret));
	} else {
		sc->io_status = io_status(sc, ret);
		sc->io_done = true;
		queue_work(srv.wq, &sc->work);
	}
	if (atomic_dec_and_test(&c->io))
		wake_up_var(&c->io);
}

/*
 * Serves @sc (a command taken by the DTO upcall) right there if it can: a READ, or a WRITE
 * whose data is here, without FUA, on a connected EP, of an export opened with O_DIRECT that
 * takes IOCB_NOWAIT (a block device; of a regular file on ext4 or XFS, its READs), is
 * submitted as an asynchronous kiocb (nvmet's file backend does the same from its completion
 * context): no work item, no thread switch. The upcall must not sleep, so the kiocb has
 * IOCB_NOWAIT: the block layer does not wait for a tag or for memory, a filesystem does not
 * wait for its inode lock, and an I/O that would wait comes back -EAGAIN. (A filesystem may
 * still wait to read its block map, as the bio's mempool allocation may, which nvmet's file
 * backend accepts in the same place; the file is opened O_NOATIME, so a read starts no
 * journal transaction.) Everything else, and an I/O the file refuses to start or take at
 * once, goes to the command's work. Called from the upcall.
 */
static void serve(struct srv_cmd *sc)
{
	struct srv_conn *c = sc->c;
	u32 len = le32_to_cpu(sc->cmd.length), state;
	bool write = sc->cmd.op == RKDBLK_OP_WRITE;
	struct iov_iter iter;
	ssize_t ret;

	if (!srv.async_io || sc->status || (!write && sc->cmd.op != RKDBLK_OP_READ) ||
	    (write && (!srv.async_writes || !sc->fetched || (sc->cmd.flags & RKDBLK_FLAG_FUA))) ||
	    rkdapl_ep_get_state(c->ep, &state) || state != RKDAPL_EP_STATE_CONNECTED)
		goto work;
	if (write)
		rkdapl_lmr_sync_rdma_write(c->lmr, io_off(sc), len);
	memset(&sc->iocb, 0, sizeof(sc->iocb));
	sc->iocb.ki_filp = srv.file;
	sc->iocb.ki_pos = (loff_t)le64_to_cpu(sc->cmd.sector) << 9;
	sc->iocb.ki_flags = srv.file->f_iocb_flags | IOCB_NOWAIT | (write ? IOCB_WRITE : 0);
	sc->iocb.ki_complete = io_done;
	io_iter(sc, &iter, write ? ITER_SOURCE : ITER_DEST, len);
	/*
	 * The block layer takes a bio_vec as it is, unchecked (a block device's asynchronous
	 * direct I/O): one its DMA alignment refuses (an in-capsule buffer of inline_data_size
	 * not a page multiple, on a device aligning to more than 512 bytes) goes to the work,
	 * whose kernel_read()/kernel_write() check it.
	 */
	if (iov_iter_alignment(&iter) & srv.dio_align)
		goto work;
	atomic_inc(&c->io);
	atomic64_inc(&srv.upcall_io);
	ret = write ? srv.file->f_op->write_iter(&sc->iocb, &iter) :
		      srv.file->f_op->read_iter(&sc->iocb, &iter);
	if (ret == -EIOCBQUEUED)
		return;
	/* Done at once (or refused: then io_done() hands it to the work). */
	io_done(&sc->iocb, ret);
	return;
work:
	queue_work(srv.wq, &sc->work);
}

void cmd_work(struct work_struct *w)
{
	struct srv_cmd *sc = container_of(w, struct srv_cmd, work);
	struct srv_conn *c = sc->c;
	u32 len = le32_to_cpu(sc->cmd.length);
	loff_t pos = (loff_t)le64_to_cpu(sc->cmd.sector) << 9;
	u64 off = io_off(sc);
	void *buf = c->mem + off;
	ssize_t n;
	int ret;

	/* serve()'s I/O completed in interrupt context: its response goes from here. */
	if (sc->io_done) {
		sc->io_done = false;
		return respond(sc, sc->io_status);
	}
	wait_connected(c);
	if (sc->status)
		return respond(sc, sc->status);
	switch (sc->cmd.op) {
	case RKDBLK_OP_READ:
		n = kernel_read(srv.file, buf, len, &pos);
		return respond(sc, io_status(sc, n));
	case RKDBLK_OP_WRITE:
		if (!sc->fetched) {
			sc->pending = P_FETCH;
			return submit(sc);
		}
		rkdapl_lmr_sync_rdma_write(c->lmr, off, len);
		n = kernel_write(srv.file, buf, len, &pos);
		ret = io_status(sc, n);
		if (!ret && (sc->cmd.flags & RKDBLK_FLAG_FUA))
			ret = vfs_fsync_range(srv.file, pos - len, pos - 1, 1);
		return respond(sc, ret);
	case RKDBLK_OP_FLUSH:
		return respond(sc, vfs_fsync(srv.file, 0));
	}
	respond(sc, -EOPNOTSUPP);
}

/* Disconnects the client of @c (process context). */
void drop_work(struct work_struct *w)
{
	struct srv_conn *c = container_of(w, struct srv_conn, drop);
	int ret;

	/* A command can arrive before this side saw ESTABLISHED: disconnect needs CONNECTED. */
	wait_connected(c);
	ret = rkdapl_ep_disconnect(c->ep);
	/*
	 * -EINVAL: conn_free() freed the EP meanwhile (rkdapl refuses the stale handle);
	 * -ENOTCONN: the connection ended meanwhile. Either way the client is gone.
	 */
	if (!ret || ret == -EINVAL || ret == -ENOTCONN)
		atomic64_inc(&srv.dropped);
	else
		pr_warn("queue %u: disconnecting the client failed: %d\n", c->queue, ret);
}

/*
 * The client of @c broke the protocol (@why, about @tag): no more of its commands are served,
 * and its connection is disconnected (from a work item: the DTO upcall must not sleep). The
 * PSP thread frees it when DISCONNECTED arrives. Any context.
 */
static void conn_drop(struct srv_conn *c, const char *why, u32 tag)
{
	if (atomic_xchg(&c->dropped, 1))
		return;
	atomic_set(&c->dead, 1);
	pr_warn("queue %u: %s %u: the client broke the protocol, disconnecting it\n", c->queue,
		why, tag);
	queue_work(srv.wq, &c->drop);
}

/*
 * A new command arrived in RECV @i (@len bytes): the command copied out, the RECV posted again
 * (an in-capsule WRITE's only once its data is written: cmd_work()), the work queued.
 */
static void on_command(struct srv_conn *c, u32 i, u64 len)
{
	struct rkdblk_cmd cmd;
	struct srv_cmd *sc = NULL;
	bool inline_data = false, busy;
	u32 tag, io = 0;
	u64 end;
	int ret;

	if (len < sizeof(cmd) || len > sizeof(cmd) + c->inline_len || atomic_read(&c->dropped))
		goto post;
	rkdapl_lmr_sync_rdma_write(c->lmr, cmd_off(c, i), sizeof(cmd));
	memcpy(&cmd, c->mem + cmd_off(c, i), sizeof(cmd));
	tag = RKDBLK_TAG(le32_to_cpu(cmd.cid));
	io = le32_to_cpu(cmd.length);
	/*
	 * In-capsule data, no grant: a WRITE's, exactly the command's length after it; a READ's
	 * (to come back in the response), if the accept offered it, within inline_len.
	 */
	inline_data = cmd.flags & RKDBLK_FLAG_INLINE && cmd.op == RKDBLK_OP_WRITE;
	if (tag >= c->depth ||
	    (cmd.flags & RKDBLK_FLAG_INLINE &&
	     (cmd.rkey || !io || io > c->inline_len ||
	      (cmd.op != RKDBLK_OP_WRITE && (cmd.op != RKDBLK_OP_READ || !c->inline_reads)))) ||
	    len != sizeof(cmd) + (inline_data ? io : 0)) {
		pr_warn_ratelimited("queue %u: malformed command (%llu bytes, tag %u, flags %#x), ignored\n",
				    c->queue, len, tag, cmd.flags);
		goto post;
	}
	sc = &c->cmds[tag];
	spin_lock(&c->lock);
	busy = sc->busy;
	sc->busy = true;
	spin_unlock(&c->lock);
	if (busy) {
		/*
		 * The client sent a command for a tag whose command is still in flight: it does
		 * not follow the protocol (the tag's buffer is in use), and nothing it sends on
		 * this connection can be trusted. As nvmet-rdma does on a protocol error, the
		 * connection goes.
		 */
		conn_drop(c, "a command for busy tag", tag);
		sc = NULL;
		goto post;
	}
	/* Test hook: the command is taken (its tag busy) and never answered. */
	if (READ_ONCE(srv.stall)) {
		sc = NULL;
		goto post;
	}
	/* The data stays where it landed: the RECV is posted again once it is written. */
	if (inline_data) {
		atomic64_inc(&srv.inlined);
		goto queue;
	}
post:
	ret = post_recv(c, i);
	if (ret && !atomic_read(&c->dead))
		pr_warn("queue %u: RECV %u not posted again: %d\n", c->queue, i, ret);
	if (!sc)
		return;
queue:
	sc->cmd = cmd;
	sc->recv = inline_data ? i : -1;
	sc->fetched = inline_data;
	sc->status = 0;
	end = le64_to_cpu(cmd.sector) + (io >> 9);
	if (cmd.op < RKDBLK_OP_READ || cmd.op > RKDBLK_OP_FLUSH)
		sc->status = -EOPNOTSUPP;
	else if (cmd.op != RKDBLK_OP_FLUSH &&
		 (!io || io > SRV_MAX_IO || io & 511 ||
		  (!cmd.rkey && !(cmd.flags & RKDBLK_FLAG_INLINE)) || end > srv.capacity))
		sc->status = -EINVAL;
	else if (cmd.op == RKDBLK_OP_WRITE && srv_read_only())
		/* Refused before its data is fetched; the client's grant ends with the response. */
		sc->status = -EROFS;
	if (sc->status == -EROFS && atomic64_inc_return(&srv.refused_writes) == 1)
		pr_info("queue %u: a WRITE refused with -EROFS: the export is read-only\n",
			c->queue);
	serve(sc);
}

/* DTO completions of one connection (the CQ's completion work: must not sleep). */
void dto_upcall(void *ctx, const struct rkdapl_event *ev)
{
	struct srv_conn *c = ctx;
	u32 kind = ev->cookie >> 32, i = (u32)ev->cookie;

	if (ev->type != RKDAPL_DTO_COMPLETION_EVENT)
		return;
	if (ev->status != RKDAPL_DTO_SUCCESS) {
		if (!atomic_xchg(&c->dead, 1) && ev->status != RKDAPL_DTO_FLUSHED)
			pr_warn("queue %u: DTO (kind %u, %u) failed with status %d\n", c->queue,
				kind, i, ev->status);
		return;
	}
	/*
	 * A send-queue completion gave its slots back (before this upcall): post what waits for
	 * them. A command refused with -ENOSPC found every slot taken, and slots come back in
	 * posting order. At most 2 * report_every - 1 suppressed DTOs are posted in a row
	 * (post_pending()), fewer than fill the send queue, so a DTO with an event posted before
	 * the refusal is still outstanding. The list is read under the lock the refusal held:
	 * either this upcall takes the lock after the refused post released it and sees the
	 * command, or before it, and then the post (after rkdapl freed the slots) found them.
	 * Such events are one response in report_every and the RDMA READs, so the lock is
	 * cheap here.
	 */
	if (kind != K_RECV) {
		spin_lock(&c->lock);
		post_waiting(c);
		spin_unlock(&c->lock);
	}
	if (kind == K_RECV && i < c->depth) {
		on_command(c, i, ev->transferred_length);
	} else if (kind == K_READ && i < c->depth) {
		c->cmds[i].fetched = 1;
		serve(&c->cmds[i]);
	}
}
