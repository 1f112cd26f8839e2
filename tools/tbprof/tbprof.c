// SPDX-License-Identifier: GPL-2.0
/*
 * tbprof: a QEMU TCG plugin that counts, per vCPU, how often every translated block ran, and
 * at exit writes one line per (block, vCPU) that ran: "<guest vaddr> <instructions>
 * <executions> <vcpu>" to the file given as out=<file>. scripts/profile.sh runs it and
 * scripts/tbprof_report.py maps the blocks to the guest's symbols.
 *
 * Debian 12's QEMU 7.2 is built with plugin support but ships no plugin header, so the few
 * entry points used are declared here as QEMU 7.2's include/qemu/qemu-plugin.h defines them
 * (plugin API version 1). Build: gcc -O2 -shared -fPIC -o tbprof.so tbprof.c.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
					  enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

#define MAX_VCPUS 8

/* One translation of a block (a block translated again gets another; the report adds them). */
struct block {
	struct block *next;
	uint64_t vaddr;
	uint64_t insns;
	uint64_t runs[MAX_VCPUS];
};

static struct block *blocks;
static const char *outpath = "tbprof.txt";

/* -icount makes TCG single-threaded, so the counters need no atomics. */
static void block_ran(unsigned int vcpu, void *udata)
{
	struct block *b = udata;

	b->runs[vcpu % MAX_VCPUS]++;
}

static void translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	struct block *b = calloc(1, sizeof(*b));

	if (!b)
		return;
	b->vaddr = qemu_plugin_tb_vaddr(tb);
	b->insns = qemu_plugin_tb_n_insns(tb);
	b->next = blocks;
	blocks = b;
	qemu_plugin_register_vcpu_tb_exec_cb(tb, block_ran, QEMU_PLUGIN_CB_NO_REGS, b);
}

static void at_exit(qemu_plugin_id_t id, void *udata)
{
	FILE *f = fopen(outpath, "w");

	if (!f) {
		perror(outpath);
		return;
	}
	for (struct block *b = blocks; b; b = b->next)
		for (int c = 0; c < MAX_VCPUS; c++)
			if (b->runs[c])
				fprintf(f, "%llx %llu %llu %d\n", (unsigned long long)b->vaddr,
					(unsigned long long)b->insns,
					(unsigned long long)b->runs[c], c);
	fclose(f);
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	for (int i = 0; i < argc; i++)
		if (!strncmp(argv[i], "out=", 4))
			outpath = argv[i] + 4;
	qemu_plugin_register_vcpu_tb_trans_cb(id, translated);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
