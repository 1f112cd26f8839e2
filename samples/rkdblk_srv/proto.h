/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The rkdblk wire protocol (docs/blockdev.md): a remote block device over rkdapl, shaped like
 * NVMe over Fabrics' RDMA transport. Everything little-endian. The Rust client has the same
 * layouts in samples/rust/rkdblk/proto.rs.
 */
#ifndef RKDBLK_PROTO_H
#define RKDBLK_PROTO_H

#include <linux/bits.h>
#include <linux/build_bug.h>
#include <linux/types.h>

#define RKDBLK_MAGIC 0x42444b52 /* "RKDB" */
#define RKDBLK_VERSION 1

/* Connect private data, client to server. */
struct rkdblk_connect {
	__le32 magic;
	__le16 version;
	__le16 queue;	/* the client's hardware queue index */
	__le16 depth;	/* commands the client wants in flight */
	__le16 flags;	/* RKDBLK_CONNECT_*; earlier clients sent 0 */
	__le32 nqn_hash;	/* rkdblk_nqn_hash() of the export the client means; 0: any */
};

/* The client's RECV buffers take inline_max bytes of READ data (in-capsule READs). */
#define RKDBLK_CONNECT_INLINE_READ BIT(0)
/*
 * The client's RECV buffers take RKDBLK_COALESCE_MAX completions, and it reads every one a
 * plain SEND carries (coalesced completions).
 */
#define RKDBLK_CONNECT_COALESCE BIT(1)

/* Completions one plain SEND carries at most, when coalesced. */
#define RKDBLK_COALESCE_MAX 16

/* Accept private data, server to client. */
struct rkdblk_accept {
	__le32 magic;
	__le16 version;
	__le16 depth;	/* granted: the connection's credits */
	__le32 max_io;	/* bytes per command at most */
	__le32 block_size;
	__le64 capacity;	/* 512-byte sectors */
	__le32 inline_max;	/* bytes of write data a command may carry in-capsule (0: none) */
	__le32 flags;	/* RKDBLK_ACCEPT_* */
};

/* The export is read-only: the server refuses WRITE commands with -EROFS. */
#define RKDBLK_ACCEPT_READ_ONLY BIT(0)
/*
 * READs of at most inline_max bytes with RKDBLK_FLAG_INLINE are answered in-capsule (set only
 * when the connect had RKDBLK_CONNECT_INLINE_READ).
 */
#define RKDBLK_ACCEPT_INLINE_READ BIT(1)
/* The server names its export (nqn=), and the connect's nqn_hash is its name's. */
#define RKDBLK_ACCEPT_NQN BIT(2)
/*
 * A plain SEND from the server may carry several completions, 1 to RKDBLK_COALESCE_MAX
 * struct rkdblk_resp one after the other (set only when the connect had
 * RKDBLK_CONNECT_COALESCE).
 */
#define RKDBLK_ACCEPT_COALESCE BIT(3)

/* Reject private data, server to client: why the connection was refused. */
struct rkdblk_reject {
	__le32 magic;
	__le16 version;
	__le16 reason;	/* enum rkdblk_reject_reason */
	__u8 reserved[8];
};

enum rkdblk_reject_reason {
	/* The client's address is not on the server's allow-list. */
	RKDBLK_REJ_NOT_ALLOWED = 1,
	/* The request's private data is not an rkdblk connect of this version. */
	RKDBLK_REJ_BAD_REQUEST = 2,
	/* The server could not set the connection up (memory, the RDMA device). */
	RKDBLK_REJ_NO_RESOURCES = 3,
	/* The server names its export (nqn=), and the connect's nqn_hash is another name's. */
	RKDBLK_REJ_OTHER_EXPORT = 4,
};

/*
 * The 32-bit FNV-1a hash of an export's name (nqn=) that a connect carries, never 0; 0 for no
 * name. Not a secret: it only tells a server that names its export that the client means
 * another one.
 */
static inline u32 rkdblk_nqn_hash(const char *name)
{
	u32 h = 0x811c9dc5;

	if (!name || !*name)
		return 0;
	for (; *name; name++)
		h = (h ^ (u8)*name) * 0x01000193;
	return h ?: 1;
}

enum rkdblk_op {
	RKDBLK_OP_READ = 1,
	RKDBLK_OP_WRITE = 2,
	RKDBLK_OP_FLUSH = 3,
};

#define RKDBLK_FLAG_FUA BIT(0)
/*
 * In-capsule data, no grant (rkey and address 0): a WRITE's data follows the command in the
 * same SEND; a READ's comes back as the response, a SEND with immediate data (the cid) of
 * exactly the command's length, meaning success (an error is a plain 16-byte response).
 */
#define RKDBLK_FLAG_INLINE BIT(1)
/*
 * The client has other commands waiting for their completions: this one's may wait for the
 * completions the server has ready right after it, to go out in one SEND with them (only
 * with RKDBLK_ACCEPT_COALESCE; a hint, never required).
 */
#define RKDBLK_FLAG_COALESCE BIT(2)

/* Command, client to server (SEND; with RKDBLK_FLAG_INLINE on a WRITE, followed by the data). */
struct rkdblk_cmd {
	__u8 op;
	__u8 flags;
	__le16 reserved;
	__le32 cid;	/* tag | generation << 16 */
	__le64 sector;
	__le32 length;
	__le32 rkey;
	__le64 address;
};

/*
 * Completion, server to client (SEND with invalidate of the command's rkey, or SEND; with
 * RKDBLK_ACCEPT_COALESCE, a plain SEND may carry several, one after the other).
 */
struct rkdblk_resp {
	__le32 cid;
	__le32 status;	/* 0 or a negative errno */
	__u8 reserved[8];
};

#define RKDBLK_TAG(cid) ((cid) & 0xffff)

static_assert(sizeof(struct rkdblk_connect) == 16);
static_assert(sizeof(struct rkdblk_accept) == 32);
static_assert(sizeof(struct rkdblk_reject) == 16);
static_assert(sizeof(struct rkdblk_cmd) == 32);
static_assert(sizeof(struct rkdblk_resp) == 16);

#endif
