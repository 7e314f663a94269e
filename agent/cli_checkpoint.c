/* cli_checkpoint.c: `replagent checkpoint create|delete VOLUME NAME` and
 * `replagent checkpoint list VOLUME [--json]`: changed-block tracking
 * (replication/cbt.c) as the control socket offers it.  Run them on the
 * Primary: it starts a checkpoint on every connected replica.  Not the
 * backup itself (templates/replagent-backup reads the NBD context). */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "cli.h"
#include "json.h"
#include "util.h"

static int usage_checkpoint(const char *why)
{
	fprintf(stderr, "replagent: %s\n"
		"usage: replagent checkpoint create VOLUME NAME\n"
		"       replagent checkpoint delete VOLUME NAME\n"
		"       replagent checkpoint list VOLUME [--json]\n", why);
	return EX_USAGE;
}

/* A word the one-line protocol can carry; the daemon checks the rest. */
static bool word(const char *s)
{
	if (!*s || *s == '-')
		return false;
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == 0x7f)
			return false;
	return true;
}

static void print_list(const struct json_value *ans)
{
	const struct json_value *list = json_get(ans, "checkpoints");
	char buf[160], size[32];

	printf("%-32s %-10s %s\n", "NAME", "STATE", "CHANGED");
	for (const struct json_value *v = list ? list->child : NULL; v; v = v->next) {
		uint64_t changed = 0;
		json_get_u64(v, "changed_bytes", &changed);
		if (json_get_bool(v, "complete"))
			printf("%-32s %-10s %s\n", cli_or_unknown(json_get_str(v, "name")),
			       "complete", format_size(changed, size, sizeof(size)));
		else
			printf("%-32s %-10s %s\n", cli_or_unknown(json_get_str(v, "name")),
			       "incomplete", cli_clean(cli_or_unknown(json_get_str(v, "why")),
						       buf, sizeof(buf)));
	}
}

int cli_cmd_checkpoint(struct cli *cli, int argc, char **argv)
{
	bool json = argc == 3 && !strcmp(argv[2], "--json");
	char req[256], what[160];

	if (argc < 1)
		return usage_checkpoint("missing create, delete or list");
	if (!strcmp(argv[0], "list")) {
		if ((argc != 2 && !json) || !word(argv[1]))
			return usage_checkpoint("checkpoint list takes a VOLUME (and --json)");
		snprintf(req, sizeof(req), "checkpoint list %s\n", argv[1]);
		if (json) {
			struct json_value *ans = NULL;
			char *raw = NULL;
			int r = cli_ask(cli, req, &ans, &raw);
			bool ok = r == 0 && json_get_bool(ans, "ok");
			if (r == 0 && ok)
				fputs(raw, stdout);
			else if (r == 0)
				cli_print_refusal("checkpoint list", ans);
			free(raw);
			json_value_free(ans);
			return ok ? EX_OK : EXIT_FAILED;
		}
		return cli_simple_request(cli, req, "checkpoint list", print_list);
	}
	if (strcmp(argv[0], "create") && strcmp(argv[0], "delete"))
		return usage_checkpoint("unknown checkpoint command");
	if (argc != 3 || !word(argv[1]) || !word(argv[2]))
		return usage_checkpoint("expected VOLUME and NAME");
	snprintf(req, sizeof(req), "checkpoint %s %s %s\n", argv[0], argv[1], argv[2]);
	snprintf(what, sizeof(what), "checkpoint %s %s %s", argv[0], argv[1], argv[2]);
	return cli_simple_request(cli, req, what, NULL);
}
