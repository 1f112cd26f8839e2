// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_test: kselftest-style TAP tests of rkdapl's C API (include/rkdapl.h only).
 *
 *   insmod rkdapl_test.ko role=badarg   [dev=rxe0] [peer=<own IPv4>] [port=7480]
 *   insmod rkdapl_test.ko role=loopback peer=<own IPv4> [port=7480]
 *   insmod rkdapl_test.ko role=server   [port=7480] [listen_ms=300000]
 *   insmod rkdapl_test.ko role=client   peer=<server IPv4> [port=7480] [connect_ms=120000]
 *   insmod rkdapl_test.ko role=none     (runs nothing; only holds a reference on rkdapl)
 *   insmod rkdapl_test.ko role=reset    peer=<own IPv4> [port=7480]   (ep_reset.c)
 *   insmod rkdapl_test.ko role=ports    peer=<own IPv4> [port=7480]   (port_events.c; the
 *                                       guest script flaps the link, selftests/ports.sh)
 *   insmod rkdapl_test.ko role=netns    netns_a=<pid> netns_b=<pid> addr_a=.. addr_b=.. (netns.c)
 *   insmod rkdapl_test.ko role=fuzz     peer=<own IPv4> [seed=N] [fuzz_ops=N]  (fuzz.c: random
 *                                       sequences of calls; seed=0 picks one and prints it)
 *   insmod rkdapl_test.ko role=removal_free peer=<own IPv4>  (cm_free.c: an EP freed while the
 *                                       device removal's BROKEN event is in delivery)
 * server and client also take local=<own address> and netns_pid=<pid> (net.c); their peer=
 * may be IPv4 or IPv6.
 *
 * Everything runs in module_init, which prints one line per test,
 *   rkdapl_test: ok N - <name>
 *   rkdapl_test: not ok N - <name> # <reason>
 * then "rkdapl_test: 1..N" and "rkdapl_test: # done P passed F failed", and returns 0 if every
 * test passed, -EIO otherwise (so a failed run also unloads the module again).
 *
 * badarg:   at least one bad-argument test per exported function (NULL handles and
 *           out-pointers, foreign objects, handles of another kind, double frees, bad lengths,
 *           privileges, flags and states), each checked against the errno the header
 *           documents. With peer= (the guest's own address), the state-dependent errors are
 *           also checked on real loopback connections (connected EPs, CRs, RMR grants, remote
 *           access errors, disconnect). Ends with a check that the provider still works.
 * server:   listens on port, serves one client (below), then tears down.
 * client:   connects to peer:port and runs the data tests: SEND, RDMA WRITE and RDMA READ of
 *           0, 1, 1023, 1024, 1025, 4096 and 1048576 bytes, every byte verified against a
 *           pattern seeded per test, with guard bytes after the transfer.
 * loopback: server in a kthread, client in module_init, over the guest's own address.
 *
 * The client drives the server with a small message protocol over SEND/RECV (struct tmsg):
 * the server keeps a RECV posted for commands, grants its buffer once with rkdapl_rmr_bind()
 * (HELLO), and prepares/verifies its side of each data test on request.
 *
 * The suites are in the files rkdapl_test.h lists; this one holds the parameters and the roles.
 */
#include "rkdapl_test.h"

char *role = "badarg";
module_param(role, charp, 0444);
MODULE_PARM_DESC(role, "server | client | loopback | badarg (default) | reset | ports | netns | fuzz | none (load only)");
char *dev = "rxe0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device (default rxe0)");
char *peer = "";
module_param(peer, charp, 0444);
MODULE_PARM_DESC(peer, "IPv4 address: the server (client), own address (loopback, badarg)");
ushort port = 7480;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "PSP port (default 7480; badarg also uses port+1 and port+2)");
uint timeout_ms = 30000;
module_param(timeout_ms, uint, 0444);
MODULE_PARM_DESC(timeout_ms, "longest wait for one event (default 30000)");
uint listen_ms = 300000;
module_param(listen_ms, uint, 0444);
MODULE_PARM_DESC(listen_ms, "server: how long to wait for the client (default 300000)");
uint connect_ms = 120000;
module_param(connect_ms, uint, 0444);
MODULE_PARM_DESC(connect_ms, "client: how long to retry connecting (default 120000)");

struct srv_thread {
	struct completion done;
	int ret;
};

static int server_thread(void *arg)
{
	struct srv_thread *t = arg;

	t->ret = server_run();
	kthread_complete_and_exit(&t->done, 0);
}

static int __init rkdapl_test_init(void)
{
	struct srv_thread st;
	struct task_struct *task;

	if (!strcmp(role, "none"))
		return 0;	/* only holds a reference on rkdapl (module refcount test) */
	tap_start();
	pr_info("rkdapl_test: # role=%s dev=%s peer=%s port=%u\n", role, dev, peer, port);
	if (!strcmp(role, "netns")) {
		netns_run();	/* netns.c */
		return tap_finish();
	}
	if ((!strcmp(role, "server") || !strcmp(role, "client")) && net_setup())
		return tap_finish();	/* net.c: local=, netns_pid= */
	if (!strcmp(role, "badarg")) {
		badarg_run();
	} else if (!strcmp(role, "server")) {
		server_run();
	} else if (!strcmp(role, "client")) {
		client_run();
	} else if (!strcmp(role, "reset")) {
		reset_run();
	} else if (!strcmp(role, "ports")) {
		ports_run();
	} else if (!strcmp(role, "fuzz")) {
		fuzz_run();	/* fuzz.c */
	} else if (!strcmp(role, "removal_free")) {
		removal_free_run();	/* cm_free.c; selftests/removal.sh deletes the device */
	} else if (!strcmp(role, "loopback")) {
		init_completion(&st.done);
		WRITE_ONCE(server_abort, false);
		task = kthread_run(server_thread, &st, "rkdapl_test_srv");
		if (IS_ERR(task)) {
			tap(false, "loopback: server thread", "kthread_run = %ld", PTR_ERR(task));
		} else {
			client_run();
			wait_for_completion(&st.done);
		}
	} else {
		pr_err("rkdapl_test: unknown role '%s'\n", role);
		return -EINVAL;
	}
	net_teardown();
	return tap_finish();
}

static void __exit rkdapl_test_exit(void)
{
}

module_init(rkdapl_test_init);
module_exit(rkdapl_test_exit);
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS("RKDAPL");
MODULE_DESCRIPTION("rkdapl selftests (TAP): data transfers, bad arguments");
