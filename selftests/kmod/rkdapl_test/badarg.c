// SPDX-License-Identifier: GPL-2.0
/* rkdapl_test role=badarg: at least one bad-argument test per exported function. */
#include "rkdapl_test.h"

/* Opening an IA by address and by network device; port attributes. */
static void ia_open_forms(struct bctx *b)
{
	struct rkdapl_ia_attr attr = {};
	struct rkdapl_port_attr pa;
	struct rkdapl_ia *ia = NULL;
	struct net_device *nd = NULL;
	struct sockaddr_in sin, other;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int r;

	if (parse_peer(&sin, 7777)) {
		tap(false, "ia_open_addr(this guest's address)", "no address: peer=%s", peer);
		return;
	}
	r = rkdapl_ia_open_addr((struct sockaddr *)&sin, &ia);
	r = r ?: rkdapl_ia_query(ia, &attr);
	tap(!r && !strcmp(attr.name, dev), "ia_open_addr(this guest's IPv4 address, any port) opens its device",
	    "%d %s, device '%.16s', want %s", r, ename(r), attr.name, dev);
	if (ia)
		expect(rkdapl_ia_close(ia), 0, "ia_close of the IA opened by address");
	ia = NULL;
	other = sin;
	other.sin_addr.s_addr = htonl(0x0afffffe);	/* 10.255.255.254: not on this guest */
	expect(rkdapl_ia_open_addr((struct sockaddr *)&other, &ia), -EADDRNOTAVAIL,
	       "ia_open_addr(an address no device has)");
	expect(rkdapl_ia_open_addr((struct sockaddr *)&sun, &ia), -EAFNOSUPPORT,
	       "ia_open_addr(AF_UNIX)");
	expect(rkdapl_ia_open_addr(NULL, &ia), -EINVAL, "ia_open_addr(NULL addr)");
	expect(rkdapl_ia_open_addr((struct sockaddr *)&sin, NULL), -EINVAL, "ia_open_addr(NULL ia)");

	nd = ip_dev_find(&init_net, sin.sin_addr.s_addr);
	if (!tap(nd != NULL, "the network device of this guest's address", "ip_dev_find failed"))
		return;
	memset(&attr, 0, sizeof(attr));
	r = rkdapl_ia_open_netdev(nd, &ia);
	r = r ?: rkdapl_ia_query(ia, &attr);
	tap(!r && !strcmp(attr.name, dev), "ia_open_netdev(the guest's NIC) opens its device",
	    "%d %s, %s -> '%.16s', want %s", r, ename(r), nd->name, attr.name, dev);
	if (ia) {
		memset(&pa, 0xa5, sizeof(pa));
		r = rkdapl_ia_query_port(ia, 1, &pa);
		tap(!r && pa.port == 1 && pa.port_count == 1 && pa.state == RKDAPL_PORT_ACTIVE &&
		    pa.link_layer == 2 && is_power_of_2(pa.active_mtu) && pa.active_mtu >= 256 &&
		    pa.active_mtu <= pa.max_mtu && pa.max_mtu <= 4096 &&
		    pa.active_mtu <= nd->mtu && 2 * pa.active_mtu > nd->mtu - 100 &&
		    pa.max_msg_size >= BIGBUF,
		    "ia_query_port(1): ACTIVE, Ethernet, the IB MTU that fits the NIC's MTU, max message >= 1 MiB",
		    "%d %s: port %u of %u, state %u phys %u, mtu %u (max %u; %s mtu %u), max_msg_size %u, link layer %u",
		    r, ename(r), pa.port, pa.port_count, pa.state, pa.phys_state, pa.active_mtu,
		    pa.max_mtu, nd->name, nd->mtu, pa.max_msg_size, pa.link_layer);
		pr_info("rkdapl_test: # %s port 1: state %u, active_mtu %u, max_mtu %u, max_msg_size %u, link_layer %u\n",
			dev, pa.state, pa.active_mtu, pa.max_mtu, pa.max_msg_size, pa.link_layer);
		expect(rkdapl_ia_query_port(ia, 0, &pa), -EINVAL, "ia_query_port(port 0)");
		expect(rkdapl_ia_query_port(ia, 2, &pa), -EINVAL, "ia_query_port(port 2 of 1)");
		expect(rkdapl_ia_query_port(ia, 1, NULL), -EINVAL, "ia_query_port(NULL attr)");
		expect(rkdapl_ia_query_port(NULL, 1, &pa), -EINVAL, "ia_query_port(NULL ia)");
		expect(rkdapl_ia_query_port(b->foreign, 1, &pa), -EINVAL,
		       "ia_query_port(foreign object)");
		expect(rkdapl_ia_close(ia), 0, "ia_close of the IA opened by network device");
		ia = NULL;
	}
	dev_put(nd);
	nd = dev_get_by_name(&init_net, "lo");
	if (nd) {
		expect(rkdapl_ia_open_netdev(nd, &ia), -ENODEV,
		       "ia_open_netdev(lo, no RDMA device on it)");
		dev_put(nd);
	}
	expect(rkdapl_ia_open_netdev(NULL, &ia), -EINVAL, "ia_open_netdev(NULL)");
	if (ia)
		rkdapl_ia_close(ia);
}

/*
 * RECVs on an UNCONNECTED EP (DAT allows them; iWARP needs them): accepted, no event while
 * the EP is unconnected, and its free completes each FLUSHED, in order, leaving the LMR free.
 */
static void unconnected_recv(struct bctx *b, struct rkdapl_lmr *lmr)
{
	struct rkdapl_lmr_triplet t = { lmr, 0, 16 }, t2 = { lmr, 16, 16 };
	struct rkdapl_event ev = {};
	struct rkdapl_ep *e = NULL;
	int r, n = 0, bad = 0;

	r = rkdapl_ep_create(b->pz, b->evd, b->evd, NULL, &e);
	if (!r)
		r = rkdapl_post_recv(e, &t, 1, 0x71, 0);
	if (!r)
		r = rkdapl_post_recv(e, &t2, 1, 0x72, 0);
	tap(!r && rkdapl_evd_dequeue(b->evd, &ev) == -EAGAIN,
	    "post_recv(unconnected EP) -> 0 twice, no event while unconnected", "%d %s", r,
	    ename(r));
	t.length = BUFSZ + 1;
	expect(e ? rkdapl_post_recv(e, &t, 1, 0x73, 0) : -ENOENT, -ERANGE,
	       "post_recv(unconnected EP, segment leaves the LMR)");
	r = e ? rkdapl_ep_free(e) : -ENOENT;
	while (!r && rkdapl_evd_dequeue(b->evd, &ev) == 0) {
		if (ev.type != RKDAPL_DTO_COMPLETION_EVENT || ev.op != RKDAPL_DTO_RECV ||
		    ev.status != RKDAPL_DTO_FLUSHED || ev.cookie != 0x71 + (u64)n)
			bad++;
		n++;
	}
	tap(!r && n == 2 && !bad,
	    "ep_free of the unconnected EP completes its 2 RECVs FLUSHED, in order",
	    "ep_free %d %s, %d events, %d wrong (last: type %u op %u status %d cookie %#llx)", r,
	    ename(r), n, bad, ev.type, ev.op, ev.status, ev.cookie);
}

/*
 * rkdapl_status_msg(), rkdapl_event_msg(), rkdapl_op_msg(): each enumerator of the header gets
 * its own spelling without the prefix (the tables stringize the enumerators), a value that is
 * none the "UNKNOWN_..." string.
 */
struct value_name {
	s64 v;
	const char *name;
};

#define VN(prefix, x) { prefix##x, #x }

static int names_wrong(const char *(*msg)(s64), const struct value_name *t, int n,
		       const s64 *bad, int nbad, const char *unknown, const char *what)
{
	int i, wrong = 0;

	for (i = 0; i < n; i++)
		if (strcmp(msg(t[i].v), t[i].name) && wrong++ < 3)
			pr_info("rkdapl_test: # %s(%lld) is '%s', want '%s'\n", what, t[i].v,
				msg(t[i].v), t[i].name);
	for (i = 0; i < nbad; i++)
		if (strcmp(msg(bad[i]), unknown) && wrong++ < 3)
			pr_info("rkdapl_test: # %s(%lld) is '%s', want '%s'\n", what, bad[i],
				msg(bad[i]), unknown);
	return wrong;
}

static const char *status_msg(s64 v) { return rkdapl_status_msg(v); }
static const char *event_msg(s64 v) { return rkdapl_event_msg(v); }
static const char *op_msg(s64 v) { return rkdapl_op_msg(v); }

static void value_names(void)
{
	static const struct value_name st[] = {
		VN(RKDAPL_DTO_, SUCCESS), VN(RKDAPL_DTO_, FLUSHED),
		VN(RKDAPL_DTO_, LOCAL_LENGTH_ERROR), VN(RKDAPL_DTO_, LOCAL_EP_ERROR),
		VN(RKDAPL_DTO_, LOCAL_PROTECTION_ERROR), VN(RKDAPL_DTO_, BAD_RESPONSE),
		VN(RKDAPL_DTO_, REMOTE_ACCESS_ERROR), VN(RKDAPL_DTO_, REMOTE_RESPONDER_ERROR),
		VN(RKDAPL_DTO_, TRANSPORT_ERROR), VN(RKDAPL_DTO_, RECEIVER_NOT_READY),
		VN(RKDAPL_DTO_, RMR_OPERATION_FAILED), VN(RKDAPL_DTO_, GENERIC_ERROR),
	};
	static const struct value_name ev[] = {
		/* The first three without their _EVENT. */
		{ RKDAPL_DTO_COMPLETION_EVENT, "DTO_COMPLETION" },
		{ RKDAPL_RMR_BIND_COMPLETION_EVENT, "RMR_BIND_COMPLETION" },
		{ RKDAPL_CONNECTION_REQUEST_EVENT, "CONNECTION_REQUEST" },
		VN(RKDAPL_CONNECTION_EVENT_, ESTABLISHED),
		VN(RKDAPL_CONNECTION_EVENT_, PEER_REJECTED),
		VN(RKDAPL_CONNECTION_EVENT_, NON_PEER_REJECTED),
		VN(RKDAPL_CONNECTION_EVENT_, UNREACHABLE), VN(RKDAPL_CONNECTION_EVENT_, TIMED_OUT),
		VN(RKDAPL_CONNECTION_EVENT_, DISCONNECTED), VN(RKDAPL_CONNECTION_EVENT_, BROKEN),
		VN(RKDAPL_ASYNC_, EVD_OVERFLOW), VN(RKDAPL_ASYNC_, IA_CATASTROPHIC),
		VN(RKDAPL_ASYNC_, SRQ_LIMIT_REACHED), VN(RKDAPL_ASYNC_, SRQ_ERROR),
		VN(RKDAPL_ASYNC_, PORT_ACTIVE), VN(RKDAPL_ASYNC_, PORT_ERROR),
		VN(RKDAPL_ASYNC_, GID_CHANGE), VN(RKDAPL_ASYNC_, LID_CHANGE),
		VN(RKDAPL_ASYNC_, CLIENT_REREGISTER), VN(RKDAPL_ASYNC_, PKEY_CHANGE),
		VN(RKDAPL_ASYNC_, SM_CHANGE), VN(RKDAPL_ASYNC_, EP_BROKEN),
		VN(RKDAPL_ASYNC_, CQ_ERROR),
	};
	static const struct value_name op[] = {
		VN(RKDAPL_DTO_, SEND), VN(RKDAPL_DTO_, RECV), VN(RKDAPL_DTO_, RDMA_WRITE),
		VN(RKDAPL_DTO_, RDMA_READ), VN(RKDAPL_DTO_, RMR_BIND), VN(RKDAPL_DTO_, RMR_UNBIND),
		VN(RKDAPL_DTO_, RDMA_WRITE_IMM), VN(RKDAPL_DTO_, SEND_INVALIDATE),
		VN(RKDAPL_DTO_, FETCH_ADD), VN(RKDAPL_DTO_, CMP_SWAP), VN(RKDAPL_DTO_, SEND_IMM),
	};
	static const s64 st_bad[] = { -1, 12, -EIO, S32_MAX };
	static const s64 ev_bad[] = { 0, 15, 19, 29, U32_MAX };
	static const s64 op_bad[] = { 0, 12, U32_MAX };
	int w;

	w = names_wrong(status_msg, st, ARRAY_SIZE(st), st_bad, ARRAY_SIZE(st_bad),
			"UNKNOWN_DTO_STATUS", "rkdapl_status_msg");
	tap(!w, "rkdapl_status_msg() names the 12 DTO statuses, others UNKNOWN_DTO_STATUS",
	    "%d wrong", w);
	w = names_wrong(event_msg, ev, ARRAY_SIZE(ev), ev_bad, ARRAY_SIZE(ev_bad),
			"UNKNOWN_EVENT", "rkdapl_event_msg");
	tap(!w, "rkdapl_event_msg() names all 23 event types as the header, others UNKNOWN_EVENT",
	    "%d wrong", w);
	w = names_wrong(op_msg, op, ARRAY_SIZE(op), op_bad, ARRAY_SIZE(op_bad),
			"UNKNOWN_DTO_OP", "rkdapl_op_msg");
	tap(!w, "rkdapl_op_msg() names all 11 DTO ops as the header, others UNKNOWN_DTO_OP",
	    "%d wrong", w);
}

int badarg_run(void)
{
	struct bctx *b = kzalloc(sizeof(*b), GFP_KERNEL);
	struct rkdapl_ia *ia2 = NULL;
	struct rkdapl_pz *pz2 = NULL, *pzt = NULL;
	struct rkdapl_lmr *lmr = NULL, *lmrt = NULL, *lmr_v = NULL;
	struct rkdapl_rmr *rmr = NULL, *rmrt = NULL;
	struct rkdapl_evd *evdt = NULL;
	struct rkdapl_ep *ep = NULL, *ept = NULL;
	struct rkdapl_psp *pspt = NULL;
	struct rkdapl_ia_attr attr;
	struct rkdapl_lmr_triplet t = { NULL, 0, 16 };
	struct rkdapl_rmr_triplet rt = { 0x10000, 0x1234, 0, 16 };
	struct rkdapl_event ev = {};
	struct sockaddr_un sun;
	struct sockaddr_in sin;
	char big[RKDAPL_MAX_PRIVATE_DATA + 1];
	void *buf = NULL, *vbuf = NULL, *f;
	unsigned long t0;
	u32 rkey, st = ~0u;
	u64 addr;
	int r, bad;

	value_names();
	if (b)
		b->foreign = kzalloc(512, GFP_KERNEL);
	if (!b || !b->foreign) {
		tap(false, "badarg setup", "out of memory");
		goto free_b;
	}
	f = b->foreign;	/* a random kernel object passed as a handle */
	buf = kzalloc(BUFSZ, GFP_KERNEL);
	vbuf = vzalloc(BUFSZ);
	memset(big, 'x', sizeof(big));

	/* --- setup --- */
	r = rkdapl_ia_open(dev, &b->ia);
	if (!r)
		r = rkdapl_pz_create(b->ia, &b->pz);
	if (!r)
		r = rkdapl_pz_create(b->ia, &b->pz2);
	if (!r)
		r = rkdapl_evd_create(b->ia, 64, &b->evd);
	if (!r)
		r = rkdapl_evd_create(b->ia, 64, &b->psp_evd);
	if (!r && buf && vbuf)
		r = rkdapl_lmr_create(b->pz, buf, BUFSZ, RKDAPL_MEM_LOCAL_WRITE, &lmr);
	if (!r)
		r = rkdapl_rmr_create(b->pz, &rmr);
	if (!r)
		r = rkdapl_ep_create(b->pz, b->evd, b->evd, NULL, &ep);
	if (!tap(!r && buf && vbuf, "badarg setup (ia_open, pz, evd, lmr, rmr, ep)", "%d %s", r,
		 ename(r)))
		goto teardown;

	/* --- ia_open / ia_close / ia_query --- */
	expect(rkdapl_ia_open(NULL, &ia2), -EINVAL, "ia_open(NULL name)");
	expect(rkdapl_ia_open(dev, NULL), -EINVAL, "ia_open(NULL ia)");
	expect(rkdapl_ia_open("nosuchdev", &ia2), -ENODEV, "ia_open(\"nosuchdev\")");
	expect(rkdapl_ia_open("", &ia2), -ENODEV, "ia_open(\"\")");
	memset(&attr, 0xa5, sizeof(attr));
	r = rkdapl_ia_query(b->ia, &attr);
	tap(!r && !strcmp(attr.name, dev) && attr.max_private_data == RKDAPL_MAX_PRIVATE_DATA &&
	    attr.reserved == 0 && attr.max_iov >= 1 && attr.max_rmr_pages >= 1 &&
	    attr.max_evd_qlen >= 1 && attr.max_dtos >= 1 && attr.max_mr_size >= BIGBUF,
	    "ia_query: name, limits, reserved 0",
	    "returned %d, name '%.8s', max_iov %u, max_rmr_pages %u, max_private_data %u, reserved %u",
	    r, attr.name, attr.max_iov, attr.max_rmr_pages, attr.max_private_data, attr.reserved);
	b->attr = attr;
	pr_info("rkdapl_test: # %s: max_mr_size %llu max_dtos %u max_iov %u rd_in %u rd_out %u max_rmr_pages %u max_evd_qlen %u\n",
		attr.name, attr.max_mr_size, attr.max_dtos, attr.max_iov, attr.max_rdma_read_in,
		attr.max_rdma_read_out, attr.max_rmr_pages, attr.max_evd_qlen);
	expect(rkdapl_ia_query(NULL, &attr), -EINVAL, "ia_query(NULL ia)");
	expect(rkdapl_ia_query(b->ia, NULL), -EINVAL, "ia_query(NULL attr)");
	expect(rkdapl_ia_query(f, &attr), -EINVAL, "ia_query(foreign object)");
	expect(rkdapl_ia_query((struct rkdapl_ia *)b->pz, &attr), -EINVAL, "ia_query(PZ handle)");
	expect(rkdapl_ia_close(NULL), -EINVAL, "ia_close(NULL)");
	expect(rkdapl_ia_close(f), -EINVAL, "ia_close(foreign object)");
	ia_open_forms(b);
	expect(rkdapl_ia_close((struct rkdapl_ia *)b->evd), -EINVAL, "ia_close(EVD handle)");
	r = rkdapl_ia_open(dev, &ia2);
	if (tap(!r, "ia_open of a second IA", "%d %s", r, ename(r))) {
		/* Objects keep their IA: a PZ outlives the close of its IA handle. */
		r = rkdapl_pz_create(ia2, &pz2);
		expect(rkdapl_ia_close(ia2), 0, "ia_close");
		expect(rkdapl_ia_close(ia2), -EINVAL, "ia_close(closed IA)");
		expect(rkdapl_ia_query(ia2, &attr), -EINVAL, "ia_query(closed IA)");
		expect(rkdapl_pz_create(ia2, &pzt), -EINVAL, "pz_create(closed IA)");
		if (!r) {
			r = rkdapl_lmr_create(pz2, buf, 64, 0, &lmrt);
			if (!r)
				r = rkdapl_lmr_free(lmrt);
			tap(!r, "a PZ keeps working after its IA handle is closed", "%d %s", r,
			    ename(r));
			lmrt = NULL;
			expect(rkdapl_pz_free(pz2), 0, "pz_free of that PZ");
		}
		pz2 = NULL;
	}

	/* --- pz_create / pz_free --- */
	expect(rkdapl_pz_create(NULL, &pzt), -EINVAL, "pz_create(NULL ia)");
	expect(rkdapl_pz_create(b->ia, NULL), -EINVAL, "pz_create(NULL pz)");
	expect(rkdapl_pz_create(f, &pzt), -EINVAL, "pz_create(foreign object)");
	expect(rkdapl_pz_create((struct rkdapl_ia *)b->pz, &pzt), -EINVAL, "pz_create(PZ handle)");
	expect(rkdapl_pz_free(NULL), -EINVAL, "pz_free(NULL)");
	expect(rkdapl_pz_free(f), -EINVAL, "pz_free(foreign object)");
	expect(rkdapl_pz_free((struct rkdapl_pz *)b->ia), -EINVAL, "pz_free(IA handle)");
	r = rkdapl_pz_create(b->ia, &pzt);
	if (tap(!r, "pz_create", "%d %s", r, ename(r))) {
		expect(rkdapl_pz_free(pzt), 0, "pz_free");
		expect(rkdapl_pz_free(pzt), -EINVAL, "pz_free(freed PZ)");
	}
	pzt = NULL;

	/* --- lmr_create / lmr_free / lmr_sync_* --- */
	expect(rkdapl_lmr_create(NULL, buf, 64, 0, &lmrt), -EINVAL, "lmr_create(NULL pz)");
	expect(rkdapl_lmr_create(f, buf, 64, 0, &lmrt), -EINVAL, "lmr_create(foreign object)");
	expect(rkdapl_lmr_create((struct rkdapl_pz *)b->ia, buf, 64, 0, &lmrt), -EINVAL,
	       "lmr_create(IA handle as PZ)");
	expect(rkdapl_lmr_create(b->pz, NULL, 64, 0, &lmrt), -EINVAL, "lmr_create(NULL addr)");
	expect(rkdapl_lmr_create(b->pz, buf, 0, 0, &lmrt), -EINVAL, "lmr_create(length 0)");
	expect(rkdapl_lmr_create(b->pz, buf, 64, 0, NULL), -EINVAL, "lmr_create(NULL lmr)");
	expect(rkdapl_lmr_create(b->pz, buf, 64, 1 << 4, &lmrt), -EINVAL,
	       "lmr_create(unknown privilege 1 << 4)");
	expect(rkdapl_lmr_create(b->pz, buf, 64, 0x80000000u | RKDAPL_MEM_LOCAL_WRITE, &lmrt),
	       -EINVAL, "lmr_create(unknown privilege 1 << 31)");
	expect(rkdapl_lmr_create(b->pz, (void *)0x1000, 64, 0, &lmrt), -EFAULT,
	       "lmr_create(address 0x1000)");
	expect(rkdapl_lmr_create(b->pz, (void *)0x7fff12345000UL, 4096, 0, &lmrt), -EFAULT,
	       "lmr_create(user-space address)");
	r = rkdapl_lmr_create(b->pz, (u8 *)buf + 3, 1021, ALL_PRIV, &lmrt);
	if (tap(!r, "lmr_create(unaligned kmalloc memory, all privileges)", "%d %s", r, ename(r))) {
		expect(rkdapl_lmr_free(lmrt), 0, "lmr_free");
		expect(rkdapl_lmr_free(lmrt), -EINVAL, "lmr_free(freed LMR)");
	}
	lmrt = NULL;
	r = rkdapl_lmr_create(b->pz, vbuf, BUFSZ, RKDAPL_MEM_LOCAL_WRITE, &lmr_v);
	tap(!r, "lmr_create(vmalloc memory)", "%d %s", r, ename(r));
	expect(rkdapl_lmr_free(NULL), -EINVAL, "lmr_free(NULL)");
	expect(rkdapl_lmr_free(f), -EINVAL, "lmr_free(foreign object)");
	expect(rkdapl_lmr_free((struct rkdapl_lmr *)rmr), -EINVAL, "lmr_free(RMR handle)");
	expect(rkdapl_lmr_sync_rdma_read(NULL, 0, 1), -EINVAL, "lmr_sync_rdma_read(NULL)");
	expect(rkdapl_lmr_sync_rdma_read(f, 0, 1), -EINVAL, "lmr_sync_rdma_read(foreign object)");
	expect(rkdapl_lmr_sync_rdma_read(lmr, 0, BUFSZ + 1), -ERANGE,
	       "lmr_sync_rdma_read(length + 1)");
	expect(rkdapl_lmr_sync_rdma_read(lmr, BUFSZ, 1), -ERANGE,
	       "lmr_sync_rdma_read(offset at the end)");
	expect(rkdapl_lmr_sync_rdma_read(lmr, 1, U64_MAX), -ERANGE,
	       "lmr_sync_rdma_read(offset + length overflows)");
	expect(rkdapl_lmr_sync_rdma_read(lmr, 0, BUFSZ), 0, "lmr_sync_rdma_read(whole LMR)");
	expect(rkdapl_lmr_sync_rdma_write(NULL, 0, 1), -EINVAL, "lmr_sync_rdma_write(NULL)");
	expect(rkdapl_lmr_sync_rdma_write(f, 0, 1), -EINVAL,
	       "lmr_sync_rdma_write(foreign object)");
	expect(rkdapl_lmr_sync_rdma_write(lmr, 1, BUFSZ), -ERANGE,
	       "lmr_sync_rdma_write(range leaves the LMR)");
	expect(rkdapl_lmr_sync_rdma_write(lmr, U64_MAX, 2), -ERANGE,
	       "lmr_sync_rdma_write(offset + length overflows)");
	expect(rkdapl_lmr_sync_rdma_write(lmr, 100, 100), 0, "lmr_sync_rdma_write(inner range)");

	/* --- rmr_create / rmr_bind / rmr_unbind / rmr_free --- */
	expect(rkdapl_rmr_create(NULL, &rmrt), -EINVAL, "rmr_create(NULL pz)");
	expect(rkdapl_rmr_create(b->pz, NULL), -EINVAL, "rmr_create(NULL rmr)");
	expect(rkdapl_rmr_create(f, &rmrt), -EINVAL, "rmr_create(foreign object)");
	expect(rkdapl_rmr_bind(NULL, lmr, 0, 64, RKDAPL_MEM_REMOTE_READ, ep, 1, &rkey, &addr),
	       -EINVAL, "rmr_bind(NULL rmr)");
	expect(rkdapl_rmr_bind(f, lmr, 0, 64, RKDAPL_MEM_REMOTE_READ, ep, 1, &rkey, &addr),
	       -EINVAL, "rmr_bind(foreign object as rmr)");
	expect(rkdapl_rmr_bind(rmr, NULL, 0, 64, RKDAPL_MEM_REMOTE_READ, ep, 1, &rkey, &addr),
	       -EINVAL, "rmr_bind(NULL lmr)");
	expect(rkdapl_rmr_bind(rmr, f, 0, 64, RKDAPL_MEM_REMOTE_READ, ep, 1, &rkey, &addr),
	       -EINVAL, "rmr_bind(foreign object as lmr)");
	expect(rkdapl_rmr_bind(rmr, lmr, 0, 64, RKDAPL_MEM_REMOTE_READ, NULL, 1, &rkey, &addr),
	       -EINVAL, "rmr_bind(NULL ep)");
	expect(rkdapl_rmr_bind(rmr, lmr, 0, 64, RKDAPL_MEM_REMOTE_READ, f, 1, &rkey, &addr),
	       -EINVAL, "rmr_bind(foreign object as ep)");
	expect(rkdapl_rmr_bind(rmr, lmr, 0, 64, RKDAPL_MEM_REMOTE_READ, ep, 1, NULL, &addr),
	       -EINVAL, "rmr_bind(NULL rkey)");
	expect(rkdapl_rmr_bind(rmr, lmr, 0, 64, RKDAPL_MEM_REMOTE_READ, ep, 1, &rkey, NULL),
	       -EINVAL, "rmr_bind(NULL address)");
	r = rkdapl_lmr_create(b->pz, vbuf, BUFSZ, ALL_PRIV, &lmrt);
	if (!r) {
		expect(rkdapl_rmr_bind(rmr, lmrt, 0, 64, RKDAPL_MEM_REMOTE_READ, ep, 1, &rkey,
				       &addr), -ENOTCONN, "rmr_bind(unconnected EP)");
		expect(rkdapl_lmr_free(lmrt), 0, "lmr_free after the refused bind");
		lmrt = NULL;
	}
	expect(rkdapl_rmr_unbind(NULL, ep, 1), -EINVAL, "rmr_unbind(NULL rmr)");
	expect(rkdapl_rmr_unbind(f, ep, 1), -EINVAL, "rmr_unbind(foreign object)");
	expect(rkdapl_rmr_unbind(rmr, NULL, 1), -EINVAL, "rmr_unbind(NULL ep)");
	expect(rkdapl_rmr_unbind(rmr, ep, 1), -EINVAL, "rmr_unbind(unbound RMR)");
	expect(rkdapl_rmr_free(NULL), -EINVAL, "rmr_free(NULL)");
	expect(rkdapl_rmr_free(f), -EINVAL, "rmr_free(foreign object)");
	expect(rkdapl_rmr_free((struct rkdapl_rmr *)lmr), -EINVAL, "rmr_free(LMR handle)");
	expect(rkdapl_lmr_sync_rdma_read(lmr, 0, 1), 0, "the LMR survives rmr_free(LMR handle)");
	r = rkdapl_rmr_create(b->pz, &rmrt);
	if (tap(!r, "rmr_create", "%d %s", r, ename(r))) {
		expect(rkdapl_rmr_free(rmrt), 0, "rmr_free");
		expect(rkdapl_rmr_free(rmrt), -EINVAL, "rmr_free(freed RMR)");
	}
	rmrt = NULL;

	/* --- evd_create / evd_dequeue / evd_wait / evd_free --- */
	expect(rkdapl_evd_create(NULL, 8, &evdt), -EINVAL, "evd_create(NULL ia)");
	expect(rkdapl_evd_create(f, 8, &evdt), -EINVAL, "evd_create(foreign object)");
	expect(rkdapl_evd_create(b->ia, 8, NULL), -EINVAL, "evd_create(NULL evd)");
	expect(rkdapl_evd_create(b->ia, 0, &evdt), -EINVAL, "evd_create(qlen 0)");
	expect(rkdapl_evd_create(b->ia, 65537, &evdt), -EINVAL, "evd_create(qlen 65537)");
	expect(rkdapl_evd_create(b->ia, U32_MAX, &evdt), -EINVAL, "evd_create(qlen U32_MAX)");
	r = rkdapl_evd_create(b->ia, 65536, &evdt);
	if (expect(r, 0, "evd_create(qlen 65536, the largest)"))
		expect(rkdapl_evd_free(evdt), 0, "evd_free of it");
	evdt = NULL;
	r = rkdapl_evd_create(b->ia, 1, &evdt);
	if (expect(r, 0, "evd_create(qlen 1)")) {
		expect(rkdapl_evd_dequeue(evdt, &ev), -EAGAIN, "evd_dequeue(empty EVD)");
		t0 = jiffies;
		r = rkdapl_evd_wait(evdt, 50, &ev);
		tap(r == -ETIMEDOUT && time_after_eq(jiffies, t0 + msecs_to_jiffies(40)),
		    "evd_wait(empty EVD, 50 ms) -> -ETIMEDOUT after >= 50 ms",
		    "returned %d (%s) after %u ms", r, ename(r), jiffies_to_msecs(jiffies - t0));
		expect(rkdapl_evd_free(evdt), 0, "evd_free");
		expect(rkdapl_evd_free(evdt), -EINVAL, "evd_free(freed EVD)");
		expect(rkdapl_evd_dequeue(evdt, &ev), -EINVAL, "evd_dequeue(freed EVD)");
		expect(rkdapl_evd_wait(evdt, 10, &ev), -EINVAL, "evd_wait(freed EVD)");
	}
	evdt = NULL;
	expect(rkdapl_evd_dequeue(NULL, &ev), -EINVAL, "evd_dequeue(NULL evd)");
	expect(rkdapl_evd_dequeue(f, &ev), -EINVAL, "evd_dequeue(foreign object)");
	expect(rkdapl_evd_dequeue(b->evd, NULL), -EINVAL, "evd_dequeue(NULL event)");
	expect(rkdapl_evd_wait(NULL, 10, &ev), -EINVAL, "evd_wait(NULL evd)");
	expect(rkdapl_evd_wait(f, 10, &ev), -EINVAL, "evd_wait(foreign object)");
	expect(rkdapl_evd_wait((struct rkdapl_evd *)ep, 10, &ev), -EINVAL, "evd_wait(EP handle)");
	expect(rkdapl_evd_wait(b->evd, 10, NULL), -EINVAL, "evd_wait(NULL event)");
	expect(rkdapl_evd_free(NULL), -EINVAL, "evd_free(NULL)");
	expect(rkdapl_evd_free(f), -EINVAL, "evd_free(foreign object)");
	expect(rkdapl_evd_free((struct rkdapl_evd *)b->pz), -EINVAL, "evd_free(PZ handle)");

	/* --- ep_create / ep_connect / ep_disconnect / ep_get_state / ep_free --- */
	expect(rkdapl_ep_create(NULL, b->evd, b->evd, NULL, &ept), -EINVAL, "ep_create(NULL pz)");
	expect(rkdapl_ep_create(f, b->evd, b->evd, NULL, &ept), -EINVAL,
	       "ep_create(foreign object as pz)");
	expect(rkdapl_ep_create(b->pz, NULL, b->evd, NULL, &ept), -EINVAL,
	       "ep_create(NULL dto_evd)");
	expect(rkdapl_ep_create(b->pz, b->evd, NULL, NULL, &ept), -EINVAL,
	       "ep_create(NULL conn_evd)");
	expect(rkdapl_ep_create(b->pz, b->evd, f, NULL, &ept), -EINVAL,
	       "ep_create(foreign object as conn_evd)");
	expect(rkdapl_ep_create(b->pz, b->evd, b->evd, NULL, NULL), -EINVAL, "ep_create(NULL ep)");
	{
		/* Values beyond what the header allows. */
		static const struct {
			struct rkdapl_ep_attr a;
			const char *what;
		} bad_attrs[] = {
			{ { .max_request_dtos = 4097 }, "ep_create(max_request_dtos 4097)" },
			{ { .max_recv_dtos = 4097 }, "ep_create(max_recv_dtos 4097)" },
			{ { .max_request_iov = 257 }, "ep_create(max_request_iov 257)" },
			{ { .retry_count = 8 }, "ep_create(retry_count 8)" },
			{ { .rnr_retry_count = 8 }, "ep_create(rnr_retry_count 8)" },
		};
		int i;

		for (i = 0; i < ARRAY_SIZE(bad_attrs); i++)
			expect(rkdapl_ep_create(b->pz, b->evd, b->evd, &bad_attrs[i].a, &ept),
			       -EINVAL, bad_attrs[i].what);
	}
	{
		/* The largest values the header and ia_query allow. */
		u32 dtos = min_t(u32, 4096, b->attr.max_dtos);
		const struct {
			struct rkdapl_ep_attr a;
			const char *what;
		} big_attrs[] = {
			{ { .max_request_dtos = dtos }, "ep_create(max_request_dtos = max_dtos)" },
			{ { .max_recv_dtos = dtos }, "ep_create(max_recv_dtos = max_dtos)" },
			{ { .max_request_iov = 256 }, "ep_create(max_request_iov 256)" },
			{ { .max_recv_iov = b->attr.max_iov }, "ep_create(max_recv_iov = max_iov)" },
			{ { .retry_count = 7, .rnr_retry_count = 7 },
			  "ep_create(retry_count 7, rnr_retry_count 7)" },
		};
		char n[96];
		int i;

		for (i = 0; i < ARRAY_SIZE(big_attrs); i++) {
			ept = NULL;
			r = rkdapl_ep_create(b->pz, b->evd, b->psp_evd, &big_attrs[i].a, &ept);
			snprintf(n, sizeof(n), "%s (max_dtos %u, max_iov %u)", big_attrs[i].what,
				 b->attr.max_dtos, b->attr.max_iov);
			if (expect(r, 0, n))
				expect(rkdapl_ep_free(ept), 0, "ep_free of it");
		}
		ept = NULL;
	}

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	strscpy(sun.sun_path, "/tmp/rkdapl", sizeof(sun.sun_path));
	expect(rkdapl_ep_connect(NULL, (struct sockaddr *)&sin, 1000, NULL, 0), -EINVAL,
	       "ep_connect(NULL ep)");
	expect(rkdapl_ep_connect(f, (struct sockaddr *)&sin, 1000, NULL, 0), -EINVAL,
	       "ep_connect(foreign object)");
	expect(rkdapl_ep_connect(ep, NULL, 1000, NULL, 0), -EINVAL, "ep_connect(NULL address)");
	expect(rkdapl_ep_connect(ep, (struct sockaddr *)&sun, 1000, NULL, 0), -EAFNOSUPPORT,
	       "ep_connect(AF_UNIX address)");
	expect(rkdapl_ep_connect(ep, (struct sockaddr *)&sin, 0, NULL, 0), -EINVAL,
	       "ep_connect(timeout 0)");
	expect(rkdapl_ep_connect(ep, (struct sockaddr *)&sin, 1000, big, sizeof(big)), -EINVAL,
	       "ep_connect(57 bytes of private data)");
	{
		/* rkdapl_ep_connect_from(): its source address checked before anything starts. */
		struct sockaddr_in nowhere = { .sin_family = AF_INET };
		struct sockaddr_in6 six = { .sin6_family = AF_INET6 };

		nowhere.sin_addr.s_addr = htonl(0xc0000201);	/* 192.0.2.1, TEST-NET-1 */
		expect(rkdapl_ep_connect_from(NULL, (struct sockaddr *)&sin, (struct sockaddr *)&sin,
					      1000, NULL, 0), -EINVAL, "ep_connect_from(NULL ep)");
		expect(rkdapl_ep_connect_from(ep, (struct sockaddr *)&sun, (struct sockaddr *)&sin,
					      1000, NULL, 0), -EAFNOSUPPORT,
		       "ep_connect_from(AF_UNIX local address)");
		expect(rkdapl_ep_connect_from(ep, (struct sockaddr *)&six, (struct sockaddr *)&sin,
					      1000, NULL, 0), -EINVAL,
		       "ep_connect_from(IPv6 local address, IPv4 remote)");
		expect(rkdapl_ep_connect_from(ep, (struct sockaddr *)&sin, NULL, 1000, NULL, 0),
		       -EINVAL, "ep_connect_from(NULL remote address)");
		expect(rkdapl_ep_connect_from(ep, (struct sockaddr *)&nowhere,
					      (struct sockaddr *)&sin, 1000, NULL, 0),
		       -EADDRNOTAVAIL, "ep_connect_from(local address not on this machine)");
	}
	r = rkdapl_ep_get_state(ep, &st);
	tap(!r && st == RKDAPL_EP_STATE_UNCONNECTED,
	    "ep_get_state: UNCONNECTED (also after the refused connects)", "returned %d, state %u",
	    r, st);
	expect(rkdapl_ep_get_state(NULL, &st), -EINVAL, "ep_get_state(NULL ep)");
	expect(rkdapl_ep_get_state(f, &st), -EINVAL, "ep_get_state(foreign object)");
	expect(rkdapl_ep_get_state(ep, NULL), -EINVAL, "ep_get_state(NULL state)");
	expect(rkdapl_ep_disconnect(NULL), -EINVAL, "ep_disconnect(NULL)");
	expect(rkdapl_ep_disconnect(f), -EINVAL, "ep_disconnect(foreign object)");
	expect(rkdapl_ep_disconnect((struct rkdapl_ep *)b->psp_evd), -EINVAL,
	       "ep_disconnect(EVD handle)");
	expect(rkdapl_ep_disconnect(ep), -ENOTCONN, "ep_disconnect(unconnected EP)");
	expect(rkdapl_ep_free(NULL), -EINVAL, "ep_free(NULL)");
	expect(rkdapl_ep_free(f), -EINVAL, "ep_free(foreign object)");
	r = rkdapl_ep_create(b->pz, b->evd, b->evd, NULL, &ept);
	if (expect(r, 0, "ep_create(default attributes)")) {
		expect(rkdapl_ep_free(ept), 0, "ep_free");
		expect(rkdapl_ep_free(ept), -EINVAL, "ep_free(freed EP)");
		expect(rkdapl_ep_get_state(ept, &st), -EINVAL, "ep_get_state(freed EP)");
	}
	ept = NULL;

	/* --- psp_create / psp_free --- */
	expect(rkdapl_psp_create(NULL, port, 8, b->psp_evd, &pspt), -EINVAL,
	       "psp_create(NULL ia)");
	expect(rkdapl_psp_create(f, port, 8, b->psp_evd, &pspt), -EINVAL,
	       "psp_create(foreign object as ia)");
	expect(rkdapl_psp_create(b->ia, port, 8, NULL, &pspt), -EINVAL, "psp_create(NULL evd)");
	expect(rkdapl_psp_create(b->ia, port, 8, b->psp_evd, NULL), -EINVAL,
	       "psp_create(NULL psp)");
	expect(rkdapl_psp_create(b->ia, 0, 8, b->psp_evd, &pspt), -EINVAL, "psp_create(port 0)");
	expect(rkdapl_psp_create(b->ia, port, 0, b->psp_evd, &pspt), -EINVAL,
	       "psp_create(backlog 0)");
	r = rkdapl_psp_create(b->ia, port + 1, 4, b->psp_evd, &pspt);
	if (expect(r, 0, "psp_create")) {
		struct rkdapl_psp *p2 = NULL;

		expect(rkdapl_psp_create(b->ia, port + 1, 4, b->psp_evd, &p2), -EADDRINUSE,
		       "psp_create(same port again)");
		if (p2)
			rkdapl_psp_free(p2);
		expect(rkdapl_psp_free(pspt), 0, "psp_free");
		expect(rkdapl_psp_free(pspt), -EINVAL, "psp_free(freed PSP)");
		r = rkdapl_psp_create(b->ia, port + 1, 4, b->psp_evd, &pspt);
		if (expect(r, 0, "psp_create(the port is free again)"))
			rkdapl_psp_free(pspt);
	}
	pspt = NULL;
	expect(rkdapl_psp_free(NULL), -EINVAL, "psp_free(NULL)");
	expect(rkdapl_psp_free(f), -EINVAL, "psp_free(foreign object)");

	/* --- cr_accept / cr_reject without a CR --- */
	expect(rkdapl_cr_accept(NULL, ep, NULL, 0), -EINVAL, "cr_accept(NULL cr)");
	expect(rkdapl_cr_accept(f, ep, NULL, 0), -EINVAL, "cr_accept(foreign object)");
	expect(rkdapl_cr_accept((struct rkdapl_cr *)ep, ep, NULL, 0), -EINVAL,
	       "cr_accept(EP handle as cr)");
	expect(rkdapl_cr_reject(NULL, NULL, 0), -EINVAL, "cr_reject(NULL cr)");
	expect(rkdapl_cr_reject(f, NULL, 0), -EINVAL, "cr_reject(foreign object)");

	/* --- DTOs on an unconnected EP, NULL and foreign EPs --- */
	t.lmr = lmr;
	expect(rkdapl_post_send(NULL, &t, 1, 1, 0), -EINVAL, "post_send(NULL ep)");
	expect(rkdapl_post_send(f, &t, 1, 1, 0), -EINVAL, "post_send(foreign object)");
	expect(rkdapl_post_send(ep, &t, 1, 1, 0), -ENOTCONN, "post_send(unconnected EP)");
	expect(rkdapl_post_recv(NULL, &t, 1, 1, 0), -EINVAL, "post_recv(NULL ep)");
	expect(rkdapl_post_recv(f, &t, 1, 1, 0), -EINVAL, "post_recv(foreign object)");
	unconnected_recv(b, lmr);
	expect(rkdapl_post_rdma_write(NULL, &t, 1, &rt, 1, 0), -EINVAL, "post_rdma_write(NULL ep)");
	expect(rkdapl_post_rdma_write(f, &t, 1, &rt, 1, 0), -EINVAL,
	       "post_rdma_write(foreign object)");
	expect(rkdapl_post_rdma_write(ep, &t, 1, &rt, 1, 0), -ENOTCONN,
	       "post_rdma_write(unconnected EP)");
	expect(rkdapl_post_rdma_read(NULL, &t, 1, &rt, 1, 0), -EINVAL, "post_rdma_read(NULL ep)");
	expect(rkdapl_post_rdma_read(f, &t, 1, &rt, 1, 0), -EINVAL,
	       "post_rdma_read(foreign object)");
	expect(rkdapl_post_rdma_read(ep, &t, 1, &rt, 1, 0), -ENOTCONN,
	       "post_rdma_read(unconnected EP)");
	t.lmr = f;
	expect(rkdapl_post_send(ep, &t, 1, 1, 0), -EINVAL, "post_send(foreign object as LMR)");
	expect(rkdapl_evd_dequeue(b->evd, &ev), -EAGAIN, "no event was generated by all this");

	/* --- state-dependent errors on real loopback connections --- */
	if (parse_peer(&b->self, port) == 0)
		badarg_connected(b);
	else
		tap_skip("connected EP, CR, grant and disconnect tests",
			 "no peer= (the guest's own IPv4 address)");

teardown:
	bad = 0;
	if (ep && rkdapl_ep_free(ep))
		bad++;
	if (rmr && rkdapl_rmr_free(rmr))
		bad++;
	if (lmr && rkdapl_lmr_free(lmr))
		bad++;
	if (lmr_v && rkdapl_lmr_free(lmr_v))
		bad++;
	bad += badarg_connected_free(b);
	if (b->evd && rkdapl_evd_free(b->evd))
		bad++;
	if (b->psp_evd && rkdapl_evd_free(b->psp_evd))
		bad++;
	if (b->pz2 && rkdapl_pz_free(b->pz2))
		bad++;
	if (b->pz && rkdapl_pz_free(b->pz))
		bad++;
	if (b->ia && rkdapl_ia_close(b->ia))
		bad++;
	tap(!bad, "badarg teardown (every free returns 0)", "%d frees failed", bad);

	/* --- the provider still works --- */
	ia2 = NULL;
	pz2 = NULL;
	lmrt = NULL;
	evdt = NULL;
	r = rkdapl_ia_open(dev, &ia2);
	if (!r)
		r = rkdapl_pz_create(ia2, &pz2);
	if (!r && buf)
		r = rkdapl_lmr_create(pz2, buf, BUFSZ, ALL_PRIV, &lmrt);
	if (!r)
		r = rkdapl_evd_create(ia2, 16, &evdt);
	if (!r)
		r = rkdapl_ep_create(pz2, evdt, evdt, NULL, &ept);
	if (!r)
		r = rkdapl_ep_free(ept);
	if (!r)
		r = rkdapl_evd_free(evdt);
	if (!r)
		r = rkdapl_lmr_free(lmrt);
	if (!r)
		r = rkdapl_pz_free(pz2);
	if (!r)
		r = rkdapl_ia_close(ia2);
	tap(!r, "provider still works after the bad calls (ia, pz, lmr, evd, ep create + free)",
	    "%d %s", r, ename(r));
	if (!r && !bad) {
		kfree(buf);
		vfree(vbuf);
	}
free_b:
	if (b)
		kfree(b->foreign);
	kfree(b);
	return 0;
}
