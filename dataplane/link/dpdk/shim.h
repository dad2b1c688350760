// The C side of package dpdk: static inline wrappers for what cgo cannot
// call (DPDK's inline functions and macros, rte_errno), each doing one
// burst's work in one call. No Go pointer is ever stored here: the arrays
// passed in are C memory owned by the Go Link.
#ifndef CICADA_DPDK_SHIM_H
#define CICADA_DPDK_SHIM_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <rte_bus_vdev.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_mempool.h>
#include <rte_ring.h>

// cic_init runs rte_eal_init with DPDK's log on stderr (stdout is the
// program's). It returns the number of parsed arguments or -rte_errno.
static int cic_init(int argc, char **argv) {
	rte_openlog_stream(stderr);
	int r = rte_eal_init(argc, argv);
	return r < 0 ? -rte_errno : r;
}

static const char *cic_strerror(int e) { return rte_strerror(e); }

// cic_pool creates a pktmbuf pool without a per-lcore cache (the engine's
// threads are not EAL threads, so a cache would never be used). With
// packed set, the mbufs are laid out back to back without the rule that
// an mbuf's IOVA be contiguous (RTE_MEMPOOL_F_NO_IOVA_CONTIG): for a
// device that does no DMA. Without hugepages that rule puts each mbuf on
// its own 4 KiB page, and DPDK 22.11's net_af_xdp sizes its UMEM as
// mbufs x element size from the first one, so the mbufs past that size
// were invalid TX descriptors to the kernel (tx_invalid_descs).
static struct rte_mempool *cic_pool(const char *name, unsigned n, int packed, int *err) {
	if (!packed) {
		struct rte_mempool *mp = rte_pktmbuf_pool_create(name, n, 0, 0,
			RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());
		if (mp == NULL) *err = rte_errno;
		return mp;
	}
	struct rte_pktmbuf_pool_private priv = {
		.mbuf_data_room_size = RTE_MBUF_DEFAULT_BUF_SIZE,
		.mbuf_priv_size = 0,
	};
	struct rte_mempool *mp = rte_mempool_create_empty(name, n,
		sizeof(struct rte_mbuf) + RTE_MBUF_DEFAULT_BUF_SIZE, 0,
		sizeof(struct rte_pktmbuf_pool_private), (int)rte_socket_id(),
		RTE_MEMPOOL_F_NO_IOVA_CONTIG);
	if (mp == NULL) { *err = rte_errno; return NULL; }
	int r = rte_mempool_set_ops_byname(mp, rte_mbuf_best_mempool_ops(), NULL);
	if (r == 0) {
		rte_pktmbuf_pool_init(mp, &priv);
		r = rte_mempool_populate_default(mp);
		if (r >= 0) { rte_mempool_obj_iter(mp, rte_pktmbuf_init, NULL); return mp; }
	}
	*err = -r;
	rte_mempool_free(mp);
	return NULL;
}

// cic_driver_is reports whether port's driver is called name.
static int cic_driver_is(uint16_t port, const char *name) {
	struct rte_eth_dev_info info;
	if (rte_eth_dev_info_get(port, &info) != 0 || info.driver_name == NULL) return 0;
	return strcmp(info.driver_name, name) == 0;
}

struct cic_chunks { uintptr_t lo[16], hi[16]; unsigned n, more; };

static void cic_chunk_cb(struct rte_mempool *mp, void *opaque,
		struct rte_mempool_memhdr *h, unsigned idx) {
	struct cic_chunks *c = opaque;
	(void)mp; (void)idx;
	if (c->n == 16) { c->more = 1; return; }
	c->lo[c->n] = (uintptr_t)h->addr;
	c->hi[c->n] = (uintptr_t)h->addr + h->len;
	c->n++;
}

// cic_pool_chunks reports the pool's memory chunks, so the Go side can
// check that a frame given to Transmit lies in the pool.
static void cic_pool_chunks(struct rte_mempool *mp, struct cic_chunks *c) {
	memset(c, 0, sizeof *c);
	rte_mempool_mem_iter(mp, cic_chunk_cb, c);
}

// cic_port_start configures port with one RX and one TX queue on pool and
// starts it; ring sizes are adjusted by the driver and written back.
static int cic_port_start(uint16_t port, struct rte_mempool *mp, uint16_t *nrx, uint16_t *ntx) {
	struct rte_eth_conf conf;
	memset(&conf, 0, sizeof conf);
	int r = rte_eth_dev_configure(port, 1, 1, &conf);
	if (r < 0) return r;
	r = rte_eth_dev_adjust_nb_rx_tx_desc(port, nrx, ntx);
	if (r < 0) return r;
	int sock = rte_eth_dev_socket_id(port);
	if (sock < 0) sock = 0;
	r = rte_eth_rx_queue_setup(port, 0, *nrx, (unsigned)sock, NULL, mp);
	if (r < 0) return r;
	r = rte_eth_tx_queue_setup(port, 0, *ntx, (unsigned)sock, NULL);
	if (r < 0) return r;
	return rte_eth_dev_start(port);
}

// cic_rx frees the nfree mbufs of the previous burst (in bufs), receives
// up to max new ones into bufs and writes each one's data pointer and
// length; a frame of several segments gets length 0 (the Go side drops it).
static uint16_t cic_rx(uint16_t port, struct rte_mbuf **bufs, uint16_t nfree,
		uint16_t max, void **data, uint16_t *lens) {
	if (nfree > 0) rte_pktmbuf_free_bulk(bufs, nfree);
	uint16_t n = rte_eth_rx_burst(port, 0, bufs, max);
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = bufs[i];
		data[i] = rte_pktmbuf_mtod(m, void *);
		lens[i] = m->nb_segs == 1 ? m->data_len : 0;
	}
	return n;
}

// cic_alloc takes up to n mbufs from mp into bufs (all at once if it
// can, else one by one) and writes their data pointers; it returns how
// many it got.
static unsigned cic_alloc(struct rte_mempool *mp, struct rte_mbuf **bufs, void **data, unsigned n) {
	unsigned got = n;
	if (rte_pktmbuf_alloc_bulk(mp, bufs, n) != 0) {
		for (got = 0; got < n; got++) {
			bufs[got] = rte_pktmbuf_alloc(mp);
			if (bufs[got] == NULL) break;
		}
	}
	for (unsigned i = 0; i < got; i++) data[i] = rte_pktmbuf_mtod(bufs[i], void *);
	return got;
}

// cic_tx sets each mbuf's length, sends them in up to three
// rte_eth_tx_burst calls and frees what the driver did not take. It
// returns how many were sent; *tries is the number of calls made.
static uint16_t cic_tx(uint16_t port, struct rte_mbuf **bufs, const uint16_t *lens, uint16_t n, unsigned *tries) {
	for (uint16_t i = 0; i < n; i++) {
		bufs[i]->data_len = lens[i];
		bufs[i]->pkt_len = lens[i];
	}
	uint16_t sent = 0;
	unsigned t = 0;
	while (sent < n && t < 3) {
		sent += rte_eth_tx_burst(port, 0, bufs + sent, n - sent);
		t++;
	}
	*tries = t;
	if (sent < n) rte_pktmbuf_free_bulk(bufs + sent, n - sent);
	return sent;
}

static void cic_free(struct rte_mbuf **bufs, unsigned n) {
	if (n > 0) rte_pktmbuf_free_bulk(bufs, n);
}

// cic_mbuf_of maps a data pointer handed out by cic_alloc back to its
// mbuf: the data room follows the mbuf header and its headroom.
static inline uintptr_t cic_data_offset(void) {
	return sizeof(struct rte_mbuf) + RTE_PKTMBUF_HEADROOM;
}

static int cic_stats(uint16_t port, uint64_t out[8]) {
	struct rte_eth_stats s;
	int r = rte_eth_stats_get(port, &s);
	if (r < 0) return r;
	out[0] = s.ipackets; out[1] = s.opackets; out[2] = s.imissed; out[3] = s.ierrors;
	out[4] = s.oerrors; out[5] = s.rx_nombuf; out[6] = s.ibytes; out[7] = s.obytes;
	return 0;
}

// cic_ring_pair creates two ports joined back to back by two rings:
// what a sends b receives and the other way round.
static int cic_ring_pair(const char *a, const char *b, unsigned size, uint16_t *pa, uint16_t *pb) {
	char n1[RTE_RING_NAMESIZE], n2[RTE_RING_NAMESIZE];
	snprintf(n1, sizeof n1, "%s_tx", a);
	snprintf(n2, sizeof n2, "%s_tx", b);
	struct rte_ring *r1 = rte_ring_create(n1, size, (int)rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (r1 == NULL) return -rte_errno;
	struct rte_ring *r2 = rte_ring_create(n2, size, (int)rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (r2 == NULL) { int e = rte_errno; rte_ring_free(r1); return -e; }
	int ia = rte_eth_from_rings(a, &r2, 1, &r1, 1, (unsigned)rte_socket_id());
	if (ia < 0) { int e = rte_errno; rte_ring_free(r1); rte_ring_free(r2); return -e; }
	int ib = rte_eth_from_rings(b, &r1, 1, &r2, 1, (unsigned)rte_socket_id());
	if (ib < 0) { int e = rte_errno; return -e; }
	*pa = (uint16_t)ia; *pb = (uint16_t)ib;
	return 0;
}

#endif
