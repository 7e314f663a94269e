/* cpg-forge.c: a test tool that joins the "replagent" CPG group of the
 * node it runs on (a test cluster's namespace) and multicasts one message
 * that lies about its sender, or one of another protocol version, as a
 * buggy or hostile member would; the daemons must drop it (with a log
 * line) or say that the cluster is mixed.  Not a replagent component:
 * tests/cluster-replagent-forged.sh runs it on a node without replagentd.
 *
 *   cpg-forge [-d MS] [-w FILE] announce NODEID NAME ADDR
 *   cpg-forge [-d MS] [-w FILE] role VOLUME NODE (primary|secondary)
 *   cpg-forge [-d MS] [-w FILE] sync-done NODEID
 *   cpg-forge [-d MS] [-w FILE] version VERSION   an OUTDATE of another version
 *   cpg-forge [-d MS] [-w FILE] voldef VOLUME PORT NODE,NODE[,NODE] [ORIGIN]
 *	a volume of 16 MiB (version 1), as if node ORIGIN (default 4: this
 *	one) created it at the moment another node created one on that port
 *
 * With -d it sends MS milliseconds after joining (after the state exchange
 * its join started, so that nothing true overwrites the lie at once).  It
 * waits until the group delivered its message back (every member has it
 * then), and with -w stays in the group until FILE exists (at most 60 s).
 * Exit 0, 1 on a failure, 64 on usage. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include <corosync/cpg.h>

#include "clmsg.h"

static uint8_t sent[CLMSG_MAX_LEN];
static size_t sent_len;
static int delivered;

static void on_deliver(cpg_handle_t h, const struct cpg_name *g, uint32_t nodeid, uint32_t pid,
		       void *msg, size_t len)
{
	if (pid == (uint32_t)getpid() && len == sent_len && !memcmp(msg, sent, len))
		delivered = 1;
}

static void on_confchg(cpg_handle_t h, const struct cpg_name *g,
		       const struct cpg_address *m, size_t n, const struct cpg_address *l,
		       size_t nl, const struct cpg_address *j, size_t nj)
{
}

static int usage(void)
{
	fprintf(stderr, "usage: cpg-forge [-d MS] [-w FILE] announce NODEID NAME ADDR | role VOLUME "
		"NODE primary|secondary | sync-done NODEID | version VERSION | voldef VOLUME PORT "
		"NODE,NODE[,NODE] [ORIGIN]\n");
	return EX_USAGE;
}

static void copy(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%s", src);
}

/* The message of argv into sent[]: 0, or -1 (usage). */
static int build(int argc, char **argv)
{
	struct clmsg m = { 0 };
	unsigned long version = 0;
	ssize_t n;

	if (argc == 4 && !strcmp(argv[0], "announce")) {
		m.type = CLMSG_ANNOUNCE;
		m.u.announce.nodeid = (uint32_t)strtoul(argv[1], NULL, 10);
		copy(m.u.announce.node, sizeof(m.u.announce.node), argv[2]);
		copy(m.u.announce.addr, sizeof(m.u.announce.addr), argv[3]);
	} else if (argc == 4 && !strcmp(argv[0], "role")) {
		m.type = CLMSG_ROLE;
		copy(m.u.role.volume, sizeof(m.u.role.volume), argv[1]);
		copy(m.u.role.node, sizeof(m.u.role.node), argv[2]);
		m.u.role.role = !strcmp(argv[3], "primary") ? CLMSG_ROLE_PRIMARY :
				CLMSG_ROLE_SECONDARY;
		m.u.role.disk = 5;
	} else if (argc == 2 && !strcmp(argv[0], "sync-done")) {
		m.type = CLMSG_SYNC_DONE;
		m.u.sync_done.nodeid = (uint32_t)strtoul(argv[1], NULL, 10);
	} else if (argc == 2 && !strcmp(argv[0], "version")) {
		version = strtoul(argv[1], NULL, 10);
		if (!version || version > 0xffff || version == CLMSG_VERSION)
			return -1;
		m.type = CLMSG_OUTDATE;
		copy(m.u.outdate.volume, sizeof(m.u.outdate.volume), "vol0");
		copy(m.u.outdate.node, sizeof(m.u.outdate.node), "n1");
		m.u.outdate.generation = 1;
		m.u.outdate.from = 99;
	} else if ((argc == 4 || argc == 5) && !strcmp(argv[0], "voldef")) {
		char nodes[3 * CLMSG_NAME_MAX], *save = NULL;
		m.type = CLMSG_VOLDEF;
		copy(m.u.voldef.name, sizeof(m.u.voldef.name), argv[1]);
		m.u.voldef.port = (uint16_t)strtoul(argv[2], NULL, 10);
		m.u.voldef.size = 16u << 20;
		m.u.voldef.version = 1;
		m.u.voldef.origin = argc == 5 ? (uint32_t)strtoul(argv[4], NULL, 10) : 4;
		/* A UUID of its own per name. */
		memset(m.u.voldef.uuid, 0x5a, sizeof(m.u.voldef.uuid));
		memcpy(m.u.voldef.uuid, argv[1],
		       strnlen(argv[1], sizeof(m.u.voldef.uuid)));
		copy(nodes, sizeof(nodes), argv[3]);
		for (char *t = strtok_r(nodes, ",", &save);
		     t && m.u.voldef.n_nodes < CLMSG_NODES_MAX; t = strtok_r(NULL, ",", &save))
			copy(m.u.voldef.nodes[m.u.voldef.n_nodes++], CLMSG_NAME_MAX, t);
	} else {
		return -1;
	}
	n = clmsg_encode(&m, sent, sizeof(sent));
	if (n < 0) {
		fprintf(stderr, "cpg-forge: cannot encode: %s\n", strerror((int)-n));
		return -1;
	}
	sent_len = (size_t)n;
	if (version) {			/* header bytes 4-5: the version */
		sent[4] = (uint8_t)(version >> 8);
		sent[5] = (uint8_t)version;
	}
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Dispatches until done() or the deadline: 0, or -1. */
static int run_until(cpg_handle_t h, int fd, int64_t deadline, int (*done)(const char *),
		     const char *arg)
{
	while (!done(arg)) {
		struct pollfd p = { fd, POLLIN, 0 };
		if (now_ms() >= deadline)
			return -1;
		if (poll(&p, 1, 100) > 0 && cpg_dispatch(h, CS_DISPATCH_ALL) != CS_OK)
			return -1;
	}
	return 0;
}

static int never(const char *unused)
{
	return 0;
}

static int is_delivered(const char *unused)
{
	return delivered;
}

static int file_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

int main(int argc, char **argv)
{
	static cpg_callbacks_t cb = { on_deliver, on_confchg };
	struct cpg_name group;
	const char *wait_file = NULL;
	long delay_ms = 0;
	struct iovec iov;
	cpg_handle_t h;
	int fd, opt, ret = 1;
	cs_error_t rc;

	while ((opt = getopt(argc, argv, "d:w:")) != -1) {
		if (opt == 'w')
			wait_file = optarg;
		else if (opt == 'd')
			delay_ms = strtol(optarg, NULL, 10);
		else
			return usage();
	}
	if (build(argc - optind, argv + optind) < 0)
		return usage();
	if (cpg_initialize(&h, &cb) != CS_OK) {
		fprintf(stderr, "cpg-forge: cannot reach corosync\n");
		return 1;
	}
	group.length = (uint32_t)strlen("replagent");
	memcpy(group.value, "replagent", group.length);
	if (cpg_join(h, &group) != CS_OK || cpg_fd_get(h, &fd) != CS_OK) {
		fprintf(stderr, "cpg-forge: cannot join the group\n");
		goto out;
	}
	if (delay_ms > 0)
		run_until(h, fd, now_ms() + delay_ms, never, NULL);
	iov = (struct iovec){ sent, sent_len };
	for (int i = 0; (rc = cpg_mcast_joined(h, CPG_TYPE_AGREED, &iov, 1)) == CS_ERR_TRY_AGAIN &&
	     i < 100; i++)
		usleep(50 * 1000);
	if (rc != CS_OK) {
		fprintf(stderr, "cpg-forge: cannot send (%d)\n", rc);
		goto out;
	}
	if (run_until(h, fd, now_ms() + 10000, is_delivered, NULL) < 0) {
		fprintf(stderr, "cpg-forge: the message did not come back within 10 s\n");
		goto out;
	}
	printf("cpg-forge: %s delivered to the group\n", argv[optind]);
	fflush(stdout);
	if (wait_file && run_until(h, fd, now_ms() + 60000, file_exists, wait_file) < 0)
		fprintf(stderr, "cpg-forge: %s did not appear within 60 s: leaving\n", wait_file);
	ret = 0;
	cpg_leave(h, &group);
out:
	cpg_finalize(h);
	return ret;
}
