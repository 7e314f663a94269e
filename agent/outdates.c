/* outdates.c: the file of outdate requests the group has not recorded yet
 * (outdates.h).  Rare (a Primary losing a peer), small, written whole
 * each time: the new file is fsync'ed and renamed into place, so a power
 * loss leaves the old list or the new one, never a part. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "outdates.h"
#include "util.h"

#define HEADER "# replagentd: outdate requests the cluster has not recorded yet (volume node token)\n"
#define FILE_MAX 65536

int outdates_format(const struct pending_outdate *list, char *buf, size_t cap)
{
	size_t len = 0;
	int n = snprintf(buf, cap, "%s", HEADER);

	if (n < 0 || (size_t)n >= cap)
		return -ENOSPC;
	len = (size_t)n;
	for (const struct pending_outdate *po = list; po; po = po->next) {
		n = snprintf(buf + len, cap - len, "%s %s %" PRIu64 "\n", po->volume, po->node,
			     po->token);
		if (n < 0 || (size_t)n >= cap - len)
			return -ENOSPC;
		len += (size_t)n;
	}
	return (int)len;
}

static int parse_line(char *line, struct pending_outdate *po, const char **why)
{
	char *save = NULL, *vol = strtok_r(line, " \t", &save);
	char *node = strtok_r(NULL, " \t", &save), *tok = strtok_r(NULL, " \t", &save);
	char *end;

	if (!vol || !node || !tok || strtok_r(NULL, " \t", &save)) {
		*why = "expected three fields: volume node token";
		return -EINVAL;
	}
	if (!clmsg_volume_name_ok(vol) || !clmsg_node_name_ok(node)) {
		*why = "not a volume or node name";
		return -EINVAL;
	}
	errno = 0;
	po->token = strtoull(tok, &end, 10);
	if (errno || *end || tok[0] == '-' || po->token == 0) {
		*why = "the token is not a number above 0";
		return -EINVAL;
	}
	snprintf(po->volume, sizeof(po->volume), "%s", vol);
	snprintf(po->node, sizeof(po->node), "%s", node);
	po->replayed = true;
	return 0;
}

int outdates_parse(const char *text, struct pending_outdate **list, char *err, size_t errlen)
{
	struct pending_outdate *head = NULL, **tail = &head, **end;
	char *copy = strdup(text), *save = NULL;
	unsigned lineno = 0;
	int r = copy ? 0 : -ENOMEM;

	for (char *line = copy ? strtok_r(copy, "\n", &save) : NULL; line && !r;
	     line = strtok_r(NULL, "\n", &save)) {
		const char *why = NULL;
		struct pending_outdate po = { 0 };

		lineno++;
		if (line[0] == '#' || line[strspn(line, " \t\r")] == '\0')
			continue;
		r = parse_line(line, &po, &why);
		if (r == 0 && !(*tail = malloc(sizeof(**tail))))
			r = -ENOMEM, why = "out of memory";
		if (r < 0) {
			snprintf(err, errlen, "line %u: %s", lineno, why);
			break;
		}
		**tail = po;
		tail = &(*tail)->next;
	}
	free(copy);
	if (r < 0) {
		outdates_free(head);
		return r;
	}
	for (end = list; *end; end = &(*end)->next)
		;
	*end = head;
	return 0;
}

static int open_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int outdates_save(const char *dir, const struct pending_outdate *list)
{
	char text[FILE_MAX];
	int len = list ? outdates_format(list, text, sizeof(text)) : 0;
	int dfd, r;

	if (len < 0)
		return len;
	if ((dfd = open_dir(dir)) < 0)
		return dfd;
	if (list)
		r = file_replace_at(dfd, OUTDATES_FILE, "." OUTDATES_FILE ".tmp", text,
				    (size_t)len);
	else if (unlinkat(dfd, OUTDATES_FILE, 0) < 0)
		r = errno == ENOENT ? 0 : -errno;
	else
		r = fsync(dfd) < 0 ? -errno : 0;
	close(dfd);
	return r;
}

int outdates_load(const char *dir, struct pending_outdate **list, char *why, size_t len)
{
	char text[FILE_MAX];
	const char *err = NULL;
	int dfd = open_dir(dir), r;

	if (dfd < 0)
		return dfd;
	r = file_read_text_at(dfd, OUTDATES_FILE, text, sizeof(text), &err);
	close(dfd);
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		snprintf(why, len, "%s", err);
		return r;
	}
	return outdates_parse(text, list, why, len);
}

void outdates_free(struct pending_outdate *list)
{
	while (list) {
		struct pending_outdate *next = list->next;
		free(list);
		list = next;
	}
}
