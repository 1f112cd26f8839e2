// SPDX-License-Identifier: GPL-2.0

/*
 * C helpers for the Rust RDMA layer (rust/kernel/rdma): the static inline
 * verbs of <rdma/ib_verbs.h> that bindgen cannot see. Each one only forwards
 * its arguments; the restrack "caller" name is passed in by Rust instead of
 * KBUILD_MODNAME so objects are listed under the consumer module's name.
 */

#include <linux/netdevice.h>
#include <linux/workqueue.h>
#include <linux/nsproxy.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#if IS_REACHABLE(CONFIG_INFINIBAND)

__rust_helper int rust_helper_ib_post_send(struct ib_qp *qp, const struct ib_send_wr *wr,
					   const struct ib_send_wr **bad_wr)
{
	return ib_post_send(qp, wr, bad_wr);
}

__rust_helper int rust_helper_ib_post_recv(struct ib_qp *qp, const struct ib_recv_wr *wr,
					   const struct ib_recv_wr **bad_wr)
{
	return ib_post_recv(qp, wr, bad_wr);
}

__rust_helper void rust_helper_ib_dealloc_pd(struct ib_pd *pd)
{
	ib_dealloc_pd(pd);
}

__rust_helper int rust_helper_ib_dereg_mr(struct ib_mr *mr)
{
	return ib_dereg_mr(mr);
}

__rust_helper int rust_helper_ib_req_notify_cq(struct ib_cq *cq, enum ib_cq_notify_flags flags)
{
	return ib_req_notify_cq(cq, flags);
}

__rust_helper int rust_helper_ib_poll_cq(struct ib_cq *cq, int num_entries, struct ib_wc *wc)
{
	return ib_poll_cq(cq, num_entries, wc);
}

__rust_helper void *rust_helper_ib_get_client_data(struct ib_device *device,
						   struct ib_client *client)
{
	return ib_get_client_data(device, client);
}

__rust_helper int rust_helper_ib_dma_mapping_error(struct ib_device *dev, u64 dma_addr)
{
	return ib_dma_mapping_error(dev, dma_addr);
}

__rust_helper u64 rust_helper_ib_dma_map_single(struct ib_device *dev, void *cpu_addr,
						size_t size, enum dma_data_direction direction)
{
	return ib_dma_map_single(dev, cpu_addr, size, direction);
}

__rust_helper void rust_helper_ib_dma_unmap_single(struct ib_device *dev, u64 addr, size_t size,
						   enum dma_data_direction direction)
{
	ib_dma_unmap_single(dev, addr, size, direction);
}

__rust_helper u64 rust_helper_ib_dma_map_page(struct ib_device *dev, struct page *page,
					      unsigned long offset, size_t size,
					      enum dma_data_direction direction)
{
	return ib_dma_map_page(dev, page, offset, size, direction);
}

__rust_helper void rust_helper_ib_dma_unmap_page(struct ib_device *dev, u64 addr, size_t size,
						 enum dma_data_direction direction)
{
	ib_dma_unmap_page(dev, addr, size, direction);
}

__rust_helper int rust_helper_ib_dma_map_sg(struct ib_device *dev, struct scatterlist *sg,
					    int nents, enum dma_data_direction direction)
{
	return ib_dma_map_sg(dev, sg, nents, direction);
}

__rust_helper void rust_helper_ib_dma_unmap_sg(struct ib_device *dev, struct scatterlist *sg,
					       int nents, enum dma_data_direction direction)
{
	ib_dma_unmap_sg(dev, sg, nents, direction);
}

__rust_helper void rust_helper_ib_dma_sync_single_for_cpu(struct ib_device *dev, u64 addr,
							  size_t size,
							  enum dma_data_direction dir)
{
	ib_dma_sync_single_for_cpu(dev, addr, size, dir);
}

__rust_helper void rust_helper_ib_dma_sync_single_for_device(struct ib_device *dev, u64 addr,
							     size_t size,
							     enum dma_data_direction dir)
{
	ib_dma_sync_single_for_device(dev, addr, size, dir);
}

__rust_helper bool rust_helper_ib_uses_virt_dma(struct ib_device *dev)
{
	return ib_uses_virt_dma(dev);
}

__rust_helper bool rust_helper_dma_dev_need_sync(const struct device *dev)
{
	return dma_dev_need_sync(dev);
}

__rust_helper void rust_helper_ib_update_fast_reg_key(struct ib_mr *mr, u8 newkey)
{
	ib_update_fast_reg_key(mr, newkey);
}

__rust_helper u32 rust_helper_ib_inc_rkey(u32 rkey)
{
	return ib_inc_rkey(rkey);
}

__rust_helper void rust_helper_ib_destroy_qp(struct ib_qp *qp)
{
	ib_destroy_qp(qp);
}

__rust_helper bool rust_helper_ib_device_try_get(struct ib_device *dev)
{
	return ib_device_try_get(dev);
}

/* Drops the reference ib_device_get_netdev() took. */
__rust_helper const char *rust_helper_netdev_name(const struct net_device *dev)
{
	return netdev_name(dev);
}

__rust_helper void rust_helper_dev_put(struct net_device *dev)
{
	dev_put(dev);
}

/* The path MTU rdma_cm gives a RoCE route over @dev (enum ib_mtu, 0 if under 256 bytes). */
__rust_helper int rust_helper_iboe_netdev_mtu(const struct net_device *dev)
{
	return iboe_get_mtu(READ_ONCE(dev->mtu));
}

/* Used to turn a kernel virtual address into pages for DMA mapping. */
__rust_helper struct page *rust_helper_virt_to_page(const void *addr)
{
	return virt_to_page(addr);
}

__rust_helper bool rust_helper_virt_addr_valid(const void *addr)
{
	return virt_addr_valid(addr);
}

/* The transport of a port (rdma_protocol_iwarp() and its siblings are static inlines). */
__rust_helper bool rust_helper_rdma_protocol_iwarp(const struct ib_device *device, u32 port)
{
	return rdma_protocol_iwarp(device, port);
}

__rust_helper bool rust_helper_rdma_protocol_roce(const struct ib_device *device, u32 port)
{
	return rdma_protocol_roce(device, port);
}

/* Describes an already mapped DMA range in a scatterlist entry (for ib_map_mr_sg). */
__rust_helper void rust_helper_sg_set_dma(struct scatterlist *sg, dma_addr_t addr,
					  unsigned int len)
{
	sg_dma_address(sg) = addr;
	sg_dma_len(sg) = len;
}

/* Shared receive queues (rust/kernel/rdma/srq.rs). */
__rust_helper struct ib_srq *
rust_helper_ib_create_srq(struct ib_pd *pd, struct ib_srq_init_attr *attr)
{
	return ib_create_srq(pd, attr);
}

__rust_helper void rust_helper_ib_destroy_srq(struct ib_srq *srq)
{
	ib_destroy_srq(srq);
}

__rust_helper int rust_helper_ib_post_srq_recv(struct ib_srq *srq, const struct ib_recv_wr *wr,
					       const struct ib_recv_wr **bad_wr)
{
	return ib_post_srq_recv(srq, wr, bad_wr);
}

/*
 * Network namespaces of rdma_cm ids (rust/kernel/rdma/cm/net.rs): get_net() and put_net()
 * are static inlines; the current task's namespace is read from its nsproxy, which only the
 * task itself changes (setns, unshare) and which is NULL only once it is exiting.
 */
__rust_helper struct net *rust_helper_get_net(struct net *net)
{
	return get_net(net);
}

__rust_helper void rust_helper_put_net(struct net *net)
{
	put_net(net);
}

__rust_helper struct net *rust_helper_rdma_current_net_get(void)
{
	struct nsproxy *ns = current->nsproxy;

	return ns ? get_net(ns->net_ns) : NULL;
}

/* The network namespace @ndev is in, with a reference; @ndev is live for the call. */
__rust_helper struct net *rust_helper_rdma_dev_net_get(struct net_device *ndev)
{
	return get_net(dev_net(ndev));
}

__rust_helper bool rust_helper_net_is_init(const struct net *net)
{
	return net_eq(net, &init_net);
}

#endif /* IS_REACHABLE(CONFIG_INFINIBAND) */

__rust_helper struct page *rust_helper_sg_page(struct scatterlist *sg)
{
	return sg_page(sg);
}

__rust_helper void rust_helper_sg_set_page(struct scatterlist *sg, struct page *page,
					   unsigned int len, unsigned int offset)
{
	sg_set_page(sg, page, len, offset);
}

/* The layer's deferral workqueue (rust/kernel/rdma/defer.rs); alloc_workqueue() is a macro. */
__rust_helper struct workqueue_struct *rust_helper_alloc_workqueue(const char *name,
								   unsigned int flags,
								   int max_active)
{
	return alloc_workqueue("%s", flags, max_active, name);
}
