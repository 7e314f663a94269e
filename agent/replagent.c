/* replagent.c: the command line for replagentd's control socket.
 *
 * "replagent [-s SOCKET] COMMAND ..." sends one request line to the daemon,
 * reads its one JSON answer and turns it into text and an exit code: status
 * (health as monitoring expects, 0..3, see health.h), promote, demote,
 * version...  This file is the command table, the arguments and the small
 * commands; the exchange is cli_talk.c's, status and show cli_status.c's,
 * events cli_events.c's.  Every exchange is bounded by CLI_IO_TIMEOUT_MS,
 * so it never hangs on a stuck daemon; "events" alone reads on for as long
 * as the daemon streams.  It decides nothing itself: role changes are the
 * daemon's, and so are their refusals, which it passes on verbatim. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sysexits.h>
#include <unistd.h>

#include "cfg.h"
#include "cli.h"
#include "evtext.h"
#include "health.h"
#include "json.h"
#include "util.h"

struct command {
	const char *name;
	unsigned min_args, max_args;
	const char *flag;	/* the one flag it takes, or NULL */
	int (*fn)(struct cli *cli);
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: replagent [-s SOCKET] COMMAND [ARGS]\n"
		"Query and control replagentd through its control socket.\n\n"
		"Commands:\n"
		"  status [VOLUME] [--json]  roles, disk and link states, resync progress,\n"
		"                            the cluster's quorum and nodes\n"
		"  events [VOLUME] [--json]  state changes as they happen, until interrupted\n"
		"  promote VOLUME... [--force]  make this node Primary of each (--force:\n"
		"                            even if its disk is not UpToDate)\n"
		"  demote VOLUME...          make this node Secondary of each\n"
		"  can-promote VOLUME        would a promotion be accepted now? (exit 0,\n"
		"                            else 1 and the reason; 75 if it may be\n"
		"                            accepted in a moment: try again)\n"
		"  disk-xml VOLUME [DEV]     the libvirt <disk> element for VOLUME\n"
		"  up VOLUME                 take part in replication (a started resource)\n"
		"  down VOLUME               stop taking part (refused while Primary)\n"
		"  verify VOLUME [--repair]  compare every region with the peers (online);\n"
		"                            --repair (on the Primary) resyncs what differs\n"
		"                            (exit 1 if regions differ and were not repaired)\n"
		"  resolve VOLUME --keep NODE  end a split brain, keeping NODE's data; run\n"
		"                            it on both nodes (the other saves what it\n"
		"                            wrote to BACKING.discarded-TIME first)\n"
		"  show VOLUME               one line of key=value for scripts: role, disk,\n"
		"                            up, frozen, clients, peers, connected,\n"
		"                            uptodate_peers, window, auto_promote,\n"
		"                            peer_primary (a connected Primary, or -),\n"
		"                            partial (yes: Inconsistent only where its\n"
		"                            own writes failed)\n"
		"  window open VOLUME [--timeout SEC]\n"
		"                            live migration, on the destination: let NBD\n"
		"                            clients attach to this Secondary; the Primary\n"
		"                            role moves here at their first write\n"
		"  window close VOLUME       close it (the migration failed): its clients\n"
		"                            are dropped\n"
		"  volume create NAME --size SIZE --nodes N1,N2[,N3]\n"
		"                            define a replicated volume (cluster mode)\n"
		"  volume list [--json]      the cluster's volumes\n"
		"  volume delete NAME        remove a volume that is not Primary\n"
		"  volume resize NAME --size SIZE\n"
		"                            grow a volume, online, on every replica\n"
		"  checkpoint create|delete VOLUME NAME, checkpoint list VOLUME [--json]\n"
		"                            changed-block tracking, on the Primary: from\n"
		"                            a checkpoint on, every replica records what\n"
		"                            was written; NBD context replagent:changed:NAME\n"
		"  version                   versions of this program and of the daemon\n"
		"  help                      this text\n\n"
		"Options:\n"
		"  -s, --socket SOCKET  control socket (default $REPLAGENT_SOCKET, else\n"
		"                       " CFG_DEFAULT_CONTROL_SOCKET ")\n"
		"  -h, --help           this text\n"
		"  -V, --version        print this program's version only\n\n"
		"Exit status of status: 0 healthy, 1 degraded (peer not connected, resync\n"
		"running, peer disk not UpToDate, I/O frozen), 2 critical (split brain,\n"
		"failed or missing local disk, Primary not UpToDate, partition not quorate),\n"
		"3 unknown (daemon unreachable, error, unexpected answer); a cluster node\n"
		"gone is degraded.\n"
		"Exit status of events: 0 when interrupted (SIGINT, SIGTERM), 1 when the\n"
		"daemon refused or closed the stream, 3 when it cannot be reached.\n"
		"Other commands: 0 done, 1 refused by the daemon or daemon unreachable.\n"
		"All commands: 64 usage error.\n");
}

static int usage_error(const char *fmt, const char *arg)
{
	fputs("replagent: ", stderr);
	fprintf(stderr, "%s \"%s\"\n", fmt, arg);
	usage(stderr);
	return EX_USAGE;
}

/* ---- role changes, version ------------------------------------------------------ */

static int role_change_one(struct cli *cli, const char *what, const char *vol, bool force)
{
	struct json_value *ans;
	char req[256], msg[128];
	int ex = EX_OK;

	snprintf(req, sizeof(req), "%s %s%s\n", what, vol, force ? " --force" : "");
	if (cli_ask(cli, req, &ans, NULL) < 0)
		return EXIT_FAILED;
	if (!json_get_bool(ans, "ok")) {
		snprintf(msg, sizeof(msg), "%s %s", what, vol);
		cli_print_refusal(msg, ans);
		ex = EXIT_FAILED;
	}
	json_value_free(ans);
	return ex;
}

/* Every volume named, in turn, also after a refusal: EX_OK when all of them
 * changed, else EXIT_FAILED (each refusal printed). */
static int role_change(struct cli *cli, const char *what, bool force)
{
	int ex = EX_OK;

	for (unsigned i = 0; i < cli->n_args; i++)
		if (role_change_one(cli, what, cli->args[i], force) != EX_OK)
			ex = EXIT_FAILED;
	return ex;
}

static int cmd_promote(struct cli *cli) { return role_change(cli, "promote", cli->flag); }

static int cmd_can_promote(struct cli *cli)
{
	struct json_value *ans;
	char req[256], msg[128];
	int ex = EX_OK;

	snprintf(req, sizeof(req), "can-promote %s\n", cli->args[0]);
	if (cli_ask(cli, req, &ans, NULL) < 0)
		return EXIT_FAILED;
	if (!json_get_bool(ans, "ok")) {
		snprintf(msg, sizeof(msg), "can-promote %s", cli->args[0]);
		cli_print_refusal(msg, ans);
		ex = json_get_bool(ans, "retry") ? EX_TEMPFAIL : EXIT_FAILED;
	}
	json_value_free(ans);
	return ex;
}
static int cmd_demote(struct cli *cli) { return role_change(cli, "demote", false); }

static int cmd_version(struct cli *cli)
{
	struct json_value *ans;
	int ex = EX_OK;

	printf("replagent %s\n", PACKAGE_VERSION);
	fflush(stdout);
	if (cli_ask(cli, "version\n", &ans, NULL) < 0)
		return EXIT_FAILED;
	if (json_get_bool(ans, "ok")) {
		printf("replagentd %s (node %s)\n", cli_or_unknown(json_get_str(ans, "version")),
		       cli_or_unknown(json_get_str(ans, "node")));
	} else {
		cli_print_refusal("version", ans);
		ex = EXIT_FAILED;
	}
	json_value_free(ans);
	return ex;
}


static void print_xml(const struct json_value *ans)
{
	fputs(cli_or_unknown(json_get_str(ans, "xml")), stdout);
}

static int cmd_disk_xml(struct cli *cli)
{
	char req[256];

	snprintf(req, sizeof(req), "disk-xml %s%s%s\n", cli->args[0],
		 cli->n_args > 1 ? " " : "", cli->n_args > 1 ? cli->args[1] : "");
	return cli_simple_request(cli, req, "disk-xml", print_xml);
}

static int cmd_up(struct cli *cli) { return role_change(cli, "up", false); }
static int cmd_down(struct cli *cli) { return role_change(cli, "down", false); }

static int cmd_help(struct cli *cli)
{
	usage(stdout);
	return EX_OK;
}

static const struct command commands[] = {
	{ "status", 0, 1, "--json", cli_cmd_status },
	{ "events", 0, 1, "--json", cli_cmd_events },
	{ "promote", 1, CLI_ARGS_MAX, "--force", cmd_promote },
	{ "demote", 1, CLI_ARGS_MAX, NULL, cmd_demote },
	{ "can-promote", 1, 1, NULL, cmd_can_promote },
	{ "version", 0, 0, NULL, cmd_version },
	{ "disk-xml", 1, 2, NULL, cmd_disk_xml },
	{ "up", 1, 1, NULL, cmd_up },
	{ "down", 1, 1, NULL, cmd_down },
	{ "show", 1, 1, NULL, cli_cmd_show },
	{ "verify", 1, 1, "--repair", cli_cmd_verify },
	{ "help", 0, 0, NULL, cmd_help },
};

/* ---- arguments -------------------------------------------------------------------- */

/* A word the daemon's one-line protocol can carry: no blanks, no control
 * characters (the daemon checks the name itself). */
static bool word_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == 0x7f)
			return false;
	return true;
}

static int parse_command_args(const struct command *cmd, struct cli *cli, int argc,
			      char **argv)
{
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (a[0] == '-' && cmd->flag && !strcmp(a, cmd->flag)) {
			cli->flag = true;
		} else if (a[0] == '-' && a[1]) {
			return usage_error("unknown option", a);
		} else if (!word_ok(a)) {
			return usage_error("invalid volume name", a);
		} else if (cli->n_args == cmd->max_args) {
			return usage_error("unexpected argument", a);
		} else {
			cli->args[cli->n_args++] = a;
		}
	}
	if (cli->n_args < cmd->min_args)
		return usage_error("missing VOLUME for", cmd->name);
	return 0;
}

static int parse_global(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *env = getenv("REPLAGENT_SOCKET");
	int c;

	cli->socket = env && *env ? env : CFG_DEFAULT_CONTROL_SOCKET;
	while ((c = getopt_long(argc, argv, "+s:hV", opts, NULL)) != -1) {
		switch (c) {
		case 's': cli->socket = optarg; break;
		case 'h': usage(stdout); exit(EX_OK);
		case 'V': printf("replagent %s\n", PACKAGE_VERSION); exit(EX_OK);
		default: usage(stderr); return EX_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "replagent: no command given\n");
		usage(stderr);
		return EX_USAGE;
	}
	return 0;
}

/* ---- resolve ------------------------------------------------------------------ */

static int cmd_resolve(struct cli *cli, int argc, char **argv)
{
	char req[256];

	if (argc != 3 || strcmp(argv[1], "--keep") || !word_ok(argv[0]) || !word_ok(argv[2]))
		return usage_error("usage: resolve VOLUME --keep", "NODE");
	snprintf(req, sizeof(req), "resolve %s --keep %s\n", argv[0], argv[2]);
	return cli_simple_request(cli, req, "resolve", NULL);
}

/* ---- window open | close -------------------------------------------------------- */

static int cmd_window(struct cli *cli, int argc, char **argv)
{
	const char *vol = NULL, *timeout = NULL;
	char req[256], what[128];
	bool open_it = argc >= 1 && !strcmp(argv[0], "open");

	if (argc < 1 || (!open_it && strcmp(argv[0], "close")))
		return usage_error("usage: window open|close VOLUME, got", argc ? argv[0] : "");
	for (int i = 1; i < argc; i++) {
		if (open_it && !strcmp(argv[i], "--timeout") && i + 1 < argc && word_ok(argv[i + 1]))
			timeout = argv[++i];
		else if (argv[i][0] == '-')
			return usage_error("unknown option", argv[i]);
		else if (!vol && word_ok(argv[i]))
			vol = argv[i];
		else
			return usage_error("unexpected argument", argv[i]);
	}
	if (!vol)
		return usage_error("missing VOLUME for window", argv[0]);
	snprintf(req, sizeof(req), "window-%s %s%s%s\n", argv[0], vol, timeout ? " " : "",
		 timeout ? timeout : "");
	snprintf(what, sizeof(what), "window %s %s", argv[0], vol);
	return cli_simple_request(cli, req, what, NULL);
}

/* ---- volume create | list | delete | resize ---------------------------------- */

static void print_volume_list(const struct json_value *ans)
{
	const struct json_value *vols = json_get(ans, "volumes");

	printf("%-20s %10s  %-6s %-24s %s\n", "NAME", "SIZE", "PORT", "NODES", "PRIMARY");
	for (const struct json_value *v = vols ? vols->child : NULL; v; v = v->next) {
		const struct json_value *nodes = json_get(v, "nodes");
		char size[32], list[128] = "";
		int64_t bytes = 0, port = 0;
		json_get_i64(v, "size", &bytes);
		json_get_i64(v, "port", &port);
		for (const struct json_value *n = nodes ? nodes->child : NULL; n; n = n->next) {
			cli_append(list, sizeof(list), n == nodes->child ? "" : ",");
			cli_append(list, sizeof(list), n->type == JSON_STRING ? n->str : "?");
		}
		printf("%-20s %10s  %-6lld %-24s %s\n", cli_or_unknown(json_get_str(v, "name")),
		       format_size((uint64_t)bytes, size, sizeof(size)), (long long)port, list,
		       cli_or_unknown(json_get_str(v, "primary")));
	}
}

static int volume_create(struct cli *cli, int argc, char **argv)
{
	const char *name = NULL, *size = NULL, *nodes = NULL;
	char req[512];

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--size") && i + 1 < argc)
			size = argv[++i];
		else if (!strcmp(argv[i], "--nodes") && i + 1 < argc)
			nodes = argv[++i];
		else if (argv[i][0] == '-')
			return usage_error("unknown option", argv[i]);
		else if (!name && word_ok(argv[i]))
			name = argv[i];
		else
			return usage_error("unexpected argument", argv[i]);
	}
	if (!name || !size || !nodes || !word_ok(size) || !word_ok(nodes))
		return usage_error("usage: volume create NAME --size SIZE --nodes",
				   "N1,N2[,N3]");
	snprintf(req, sizeof(req), "volume-create %s %s %s\n", name, size, nodes);
	return cli_simple_request(cli, req, "volume create", NULL);
}

/* volume resize NAME --size SIZE: a new version of the definition; each
 * node grows its replica when it gets it (status shows how it goes). */
static int volume_resize(struct cli *cli, int argc, char **argv)
{
	const char *name = NULL, *size = NULL;
	char req[512];
	int ex;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--size") && i + 1 < argc)
			size = argv[++i];
		else if (argv[i][0] == '-')
			return usage_error("unknown option", argv[i]);
		else if (!name && word_ok(argv[i]))
			name = argv[i];
		else
			return usage_error("unexpected argument", argv[i]);
	}
	if (!name || !size || !word_ok(size))
		return usage_error("usage: volume resize NAME --size", "SIZE");
	snprintf(req, sizeof(req), "volume-resize %s %s\n", name, size);
	ex = cli_simple_request(cli, req, "volume resize", NULL);
	if (ex == EX_OK)
		printf("volume %s: the new size %s goes to every node; each replica grows "
		       "as it gets it (replagent status shows it)\n", name, size);
	return ex;
}

static int cmd_volume(struct cli *cli, int argc, char **argv)
{
	char req[256];
	bool json = argc == 2 && !strcmp(argv[1], "--json");

	if (argc >= 1 && !strcmp(argv[0], "create"))
		return volume_create(cli, argc - 1, argv + 1);
	if (argc >= 1 && !strcmp(argv[0], "resize"))
		return volume_resize(cli, argc - 1, argv + 1);
	if (argc >= 1 && !strcmp(argv[0], "list") && (argc == 1 || json)) {
		if (json) {
			char *raw = NULL;
			struct json_value *ans = NULL;
			int r = cli_ask(cli, "volume-list\n", &ans, &raw);
			if (r == 0)
				fputs(raw, stdout);
			free(raw);
			json_value_free(ans);
			return r < 0 ? EXIT_FAILED : EX_OK;
		}
		return cli_simple_request(cli, "volume-list\n", "volume list", print_volume_list);
	}
	if (argc == 2 && !strcmp(argv[0], "delete") && word_ok(argv[1])) {
		snprintf(req, sizeof(req), "volume-delete %s\n", argv[1]);
		return cli_simple_request(cli, req, "volume delete", NULL);
	}
	return usage_error("usage: volume create|list|delete|resize, got", argc ? argv[0] : "");
}

int main(int argc, char **argv)
{
	struct cli cli = { 0 };
	int ex;

	ex = parse_global(&cli, argc, argv);
	if (ex)
		return ex;
	if (!strcmp(argv[optind], "volume"))
		return cmd_volume(&cli, argc - optind - 1, argv + optind + 1);
	if (!strcmp(argv[optind], "resolve"))
		return cmd_resolve(&cli, argc - optind - 1, argv + optind + 1);
	if (!strcmp(argv[optind], "window"))
		return cmd_window(&cli, argc - optind - 1, argv + optind + 1);
	if (!strcmp(argv[optind], "checkpoint"))
		return cli_cmd_checkpoint(&cli, argc - optind - 1, argv + optind + 1);
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
		if (strcmp(argv[optind], commands[i].name))
			continue;
		ex = parse_command_args(&commands[i], &cli, argc - optind - 1, argv + optind + 1);
		return ex ? ex : commands[i].fn(&cli);
	}
	return usage_error("unknown command", argv[optind]);
}
