// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_srq: TAP tests of rkdapl's shared receive queues (rkdapl_srq_* in include/rkdapl.h).
 *
 *   insmod rkdapl_srq.ko role=badarg   [dev=rxe0]
 *   insmod rkdapl_srq.ko role=loopback peer=<own IPv4> [port=7580]
 *   insmod rkdapl_srq.ko role=server   [port=7580] [listen_ms=300000]
 *   insmod rkdapl_srq.ko role=client   peer=<server IPv4> [port=7580] [connect_ms=120000]
 *   insmod rkdapl_srq.ko role=removal  (then `rdma link delete`; rmmod reports)
 *
 * Each test prints "rkdapl_srq: ok N - <name>" or "not ok N - <name> # <reason>", then
 * "rkdapl_srq: 1..N" and "rkdapl_srq: # done P passed F failed"; insmod fails (-EIO) if any
 * test failed (role=removal reports at rmmod).
 *
 * server: one SRQ of 64 RECVs (one 256-byte slot each) serves @neps EPs made with
 *   rkdapl_ep_create_with_srq() for @neps connections (the client opens them all). It drives
 *   the clients over SENDs of its own (struct cmd):
 *   1. every client sends @nmsg messages on each EP (struct smsg + a pattern of its client,
 *      sequence number and length); every RECV completion is checked: on the DTO EVD of the
 *      EP that consumed it (each EP has its own), with that EP in ev.ep, the cookie of a
 *      posted RECV, the bytes received, the header and every byte of the pattern, and each
 *      (client, sequence) counted exactly once; the RECV is posted again.
 *   2. the low watermark: armed at 40 with 64 RECVs posted, 24 consumed (40 left: nothing),
 *      8 more (RKDAPL_ASYNC_SRQ_LIMIT_REACHED with the SRQ's handle in cookie, once), query
 *      shows it disarmed and 32 outstanding, re-armed at 30 and 8 more: a second event.
 *   3. teardown with RECVs outstanding: rkdapl_srq_free() refused (-EBUSY) while EPs are on
 *      it (the SRQ still takes a RECV), the EPs disconnected and freed (no RECV of the SRQ is
 *      reported then), rkdapl_srq_free(): each of the 25 outstanding RECVs reported FLUSHED
 *      exactly once on the SRQ's EVD, none reported twice, the LMR no longer busy.
 * client: opens @neps EPs to the server and sends what it is told.
 * loopback: the server in a kthread, the client in module_init, over the guest's own address.
 * badarg: every SRQ call with bad arguments, each against the errno rkdapl.h documents, and an
 *   SRQ freed with RECVs posted on an unconnected EP's QP-less SRQ.
 * removal: an SRQ with RECVs posted and an EP on it are left open; after the device is removed
 *   (`rdma link delete`), rmmod reports the IA catastrophic event, each RECV flushed once, and
 *   that the frees succeed.
 */
#include "srq.h"

char *role = "badarg";
module_param(role, charp, 0444);
MODULE_PARM_DESC(role, "badarg (default) | loopback | server | client | removal");
char *dev = "rxe0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device (default rxe0)");
char *peer = "";
module_param(peer, charp, 0444);
MODULE_PARM_DESC(peer, "IPv4: the server's (client) or own (loopback)");
ushort port = 7580;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "PSP port (default 7580)");
uint neps = 8;
module_param(neps, uint, 0444);
MODULE_PARM_DESC(neps, "EPs sharing the SRQ (default 8, at most 16)");
uint nmsg = 32;
module_param(nmsg, uint, 0444);
MODULE_PARM_DESC(nmsg, "messages per EP in phase 1 (default 32, at most 64)");
uint timeout_ms = 30000;
module_param(timeout_ms, uint, 0444);
MODULE_PARM_DESC(timeout_ms, "longest wait for one event (default 30000)");
uint listen_ms = 300000;
module_param(listen_ms, uint, 0444);
MODULE_PARM_DESC(listen_ms, "server: how long to wait for the client (default 300000)");
uint connect_ms = 120000;
module_param(connect_ms, uint, 0444);
MODULE_PARM_DESC(connect_ms, "client: how long to retry connecting (default 120000)");
/* ---- KTAP ----------------------------------------------------------------------------------- */
/* As rkdapl_test's (rkdapl_test/tap.c): no plan (the count is not known in advance), totals last. */

static DEFINE_MUTEX(tap_lock);
static int tap_n, tap_failed;

__printf(3, 4) bool tap(bool ok, const char *name, const char *fmt, ...)
{
	char why[160] = "";
	va_list ap;

	if (!ok && fmt) {
		va_start(ap, fmt);
		vscnprintf(why, sizeof(why), fmt, ap);
		va_end(ap);
	}
	mutex_lock(&tap_lock);
	tap_n++;
	if (ok) {
		pr_info("ok %d - %s\n", tap_n, name);
	} else {
		tap_failed++;
		pr_info("not ok %d - %s # %s\n", tap_n, name, why);
	}
	mutex_unlock(&tap_lock);
	return ok;
}

bool expect(int got, int want, const char *name)
{
	return tap(got == want, name, "got %d, want %d", got, want);
}

int tap_finish(void)
{
	pr_info("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:0 error:0\n", tap_n - tap_failed,
		tap_failed);
	pr_info("# done %d passed %d failed\n", tap_n - tap_failed, tap_failed);
	return tap_failed ? -EIO : 0;
}

/* ---- roles ---------------------------------------------------------------------------------- */

struct srv_thread {
	struct completion done;
};

static int server_thread(void *arg)
{
	struct srv_thread *t = arg;

	server_run();
	kthread_complete_and_exit(&t->done, 0);
}

static bool removal_armed;

static int __init rkdapl_srq_init(void)
{
	struct srv_thread st;
	struct task_struct *task;

	if (neps < 1 || neps > NEP_MAX || nmsg < 1 || nmsg + 5 > MSG_MAX)
		return -EINVAL;
	pr_info("# role=%s dev=%s peer=%s port=%u neps=%u nmsg=%u\n", role, dev, peer, port, neps,
		nmsg);
	if (!strcmp(role, "badarg")) {
		badarg_run();
	} else if (!strcmp(role, "server")) {
		server_run();
	} else if (!strcmp(role, "client")) {
		client_run();
	} else if (!strcmp(role, "loopback")) {
		init_completion(&st.done);
		task = kthread_run(server_thread, &st, "rkdapl_srq_srv");
		if (IS_ERR(task)) {
			tap(false, "loopback: server thread", "%ld", PTR_ERR(task));
		} else {
			client_run();
			wait_for_completion(&st.done);
		}
	} else if (!strcmp(role, "removal")) {
		if (removal_start())
			return -EIO;
		removal_armed = true;
		return 0;
	} else {
		return -EINVAL;
	}
	return tap_finish();
}

static void __exit rkdapl_srq_exit(void)
{
	if (removal_armed)
		removal_finish();
}

module_init(rkdapl_srq_init);
module_exit(rkdapl_srq_exit);
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS("RKDAPL");
MODULE_DESCRIPTION("rkdapl shared receive queue selftests (TAP)");

