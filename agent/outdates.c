/* outdates.c: the file of the group's Outdated records and of the outdate
 * requests it has not recorded yet (outdates.h).  Rare (a Primary losing a
 * peer), small, written whole each time: the new file is fsync'ed and
 * renamed into place, so a power loss leaves the old list or the new one,
 * never a part. */
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

#define HEADER "# replagentd: replicas the cluster recorded Outdated (volume node), " \
	"outdate requests it has not recorded yet (volume node token)\n"
/* 1024 volumes of 3 replicas, every name at its longest */
#define FILE_MAX (1024 * 3 * 2 * (CLMSG_NAME_MAX + 21))

/* Appends list's lines to buf, which holds *len bytes: 0 or -ENOSPC. */
static int format_lines(const struct pending_outdate *list, char *buf, size_t cap, size_t *len)
{
	for (const struct pending_outdate *po = list; po; po = po->next) {
		int n = po->token ? snprintf(buf + *len, cap - *len, "%s %s %" PRIu64 "\n",
					     po->volume, po->node, po->token) :
			snprintf(buf + *len, cap - *len, "%s %s\n", po->volume, po->node);
		if (n < 0 || (size_t)n >= cap - *len)
			return -ENOSPC;
		*len += (size_t)n;
	}
	return 0;
}

static int format(const struct pending_outdate *a, const struct pending_outdate *b,
		  char *buf, size_t cap)
{
	size_t len = strlen(HEADER);

	if (len >= cap)
		return -ENOSPC;
	memcpy(buf, HEADER, len + 1);
	if (format_lines(a, buf, cap, &len) < 0 || format_lines(b, buf, cap, &len) < 0)
		return -ENOSPC;
	return (int)len;
}

int outdates_format(const struct pending_outdate *list, char *buf, size_t cap)
{
	return format(list, NULL, buf, cap);
}

static int parse_line(char *line, struct pending_outdate *po, const char **why)
{
	char *save = NULL, *vol = strtok_r(line, " \t", &save);
	char *node = strtok_r(NULL, " \t", &save), *tok = strtok_r(NULL, " \t", &save);
	char *end;

	if (!vol || !node || (tok && strtok_r(NULL, " \t", &save))) {
		*why = "expected volume node (a record) or volume node token (a request)";
		return -EINVAL;
	}
	if (!clmsg_volume_name_ok(vol) || !clmsg_node_name_ok(node)) {
		*why = "not a volume or node name";
		return -EINVAL;
	}
	errno = 0;
	po->token = tok ? strtoull(tok, &end, 10) : 0;
	if (tok && (errno || *end || tok[0] == '-' || po->token == 0)) {
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

int outdates_save(const char *dir, const struct pending_outdate *pending,
		  const struct pending_outdate *records)
{
	char *text = NULL;
	int len = 0, dfd, r;

	if (pending || records) {
		text = malloc(FILE_MAX);
		if (!text)
			return -ENOMEM;
		len = format(pending, records, text, FILE_MAX);
		if (len < 0) {
			free(text);
			return len;
		}
	}
	if ((dfd = open_dir(dir)) < 0) {
		free(text);
		return dfd;
	}
	if (text)
		r = file_replace_at(dfd, OUTDATES_FILE, "." OUTDATES_FILE ".tmp", text,
				    (size_t)len);
	else if (unlinkat(dfd, OUTDATES_FILE, 0) < 0)
		r = errno == ENOENT ? 0 : -errno;
	else
		r = fsync(dfd) < 0 ? -errno : 0;
	close(dfd);
	free(text);
	return r;
}

int outdates_load(const char *dir, struct pending_outdate **pending,
		  struct pending_outdate **records, char *why, size_t len)
{
	char *text = malloc(FILE_MAX);
	struct pending_outdate *all = NULL;
	const char *err = NULL;
	int dfd, r;

	if (!text)
		return -ENOMEM;
	if ((dfd = open_dir(dir)) < 0) {
		free(text);
		return dfd;
	}
	r = file_read_text_at(dfd, OUTDATES_FILE, text, FILE_MAX, &err);
	close(dfd);
	if (r == -ENOENT)
		r = 0;
	else if (r < 0)
		snprintf(why, len, "%s", err);
	else
		r = outdates_parse(text, &all, why, len);
	free(text);
	/* each to the end of its list, in the file's order */
	while (pending && *pending)
		pending = &(*pending)->next;
	while (records && *records)
		records = &(*records)->next;
	while (all) {
		struct pending_outdate *po = all;
		all = po->next;
		po->next = NULL;
		if (po->token) {
			*pending = po;
			pending = &po->next;
		} else {
			*records = po;
			records = &po->next;
		}
	}
	return r;
}

struct pending_outdate *outdates_find(struct pending_outdate *list, const char *volume,
				      const char *node)
{
	for (; list; list = list->next)
		if (strcmp(list->volume, volume) == 0 && strcmp(list->node, node) == 0)
			return list;
	return NULL;
}

int outdates_add_record(struct pending_outdate **list, const char *volume, const char *node)
{
	struct pending_outdate *po;

	if (outdates_find(*list, volume, node))
		return 0;
	if (!(po = calloc(1, sizeof(*po))))
		return -ENOMEM;
	snprintf(po->volume, sizeof(po->volume), "%s", volume);
	snprintf(po->node, sizeof(po->node), "%s", node);
	while (*list)
		list = &(*list)->next;
	*list = po;
	return 1;
}

unsigned outdates_remove(struct pending_outdate **list, const char *volume, const char *node)
{
	struct pending_outdate *po;
	unsigned n = 0;

	while ((po = *list)) {
		if (strcmp(po->volume, volume) == 0 && (!node || strcmp(po->node, node) == 0)) {
			*list = po->next;
			free(po);
			n++;
		} else {
			list = &po->next;
		}
	}
	return n;
}

void outdates_free(struct pending_outdate *list)
{
	while (list) {
		struct pending_outdate *next = list->next;
		free(list);
		list = next;
	}
}
