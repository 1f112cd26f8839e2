// SPDX-License-Identifier: GPL-2.0

//! RDMA verbs and connection manager (placeholder while the layer is written).
