/* test-outdates.c: unit tests of agent/outdates.c, the file of the group's
 * Outdated records and of the outdate requests it has not recorded yet: a
 * round trip through a real directory keeps every request and record in
 * order, each in its list, and marks it replayed; an empty list removes
 * the file and leaves no temporary file; no file is no request; records
 * are found, added once and removed by volume and node or by volume; a
 * garbage file (bad names, a bad token, a NUL, too many fields,
 * a directory in its place) is refused whole with the line that is wrong,
 * and adds nothing to the list. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outdates.h"
#include "unit.h"

static struct pending_outdate *req(const char *vol, const char *node, uint64_t token,
				   struct pending_outdate *next)
{
	struct pending_outdate *po = calloc(1, sizeof(*po));

	if (!po)
		abort();
	snprintf(po->volume, sizeof(po->volume), "%s", vol);
	snprintf(po->node, sizeof(po->node), "%s", node);
	po->token = token;
	po->next = next;
	return po;
}

static unsigned count(const struct pending_outdate *l)
{
	unsigned n = 0;

	for (; l; l = l->next)
		n++;
	return n;
}

static void write_text(const char *dir, const char *text, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, OUTDATES_FILE);
	f = fopen(path, "w");
	if (!f || fwrite(text, 1, len, f) != len || fclose(f) != 0)
		abort();
}

static void test_round_trip(const char *dir)
{
	struct pending_outdate *l = req("vol0", "n2", 7, req("db-1", "node.b", 1, NULL));
	struct pending_outdate *back = NULL, *keep = req("other", "n9", 3, NULL), *recs = NULL;
	char why[160] = "";

	CHECK(outdates_save(dir, l, NULL) == 0);
	CHECK(unit_dir_entries(dir) == 1);	/* no temporary file left */
	CHECK(outdates_load(dir, &back, &recs, why, sizeof(why)) == 0);
	CHECK(count(back) == 2);
	CHECK(back && !strcmp(back->volume, "vol0") && !strcmp(back->node, "n2") &&
	      back->token == 7 && back->replayed);
	CHECK(back && back->next && !strcmp(back->next->volume, "db-1") &&
	      !strcmp(back->next->node, "node.b") && back->next->token == 1 &&
	      back->next->replayed);
	/* Loading appends to what is there. */
	CHECK(outdates_load(dir, &keep, &recs, why, sizeof(why)) == 0);
	CHECK(count(keep) == 3 && !strcmp(keep->volume, "other") && !keep->replayed);
	outdates_free(keep);
	outdates_free(back);

	/* An empty list: no file, and no file loads as nothing. */
	CHECK(outdates_save(dir, NULL, NULL) == 0);
	CHECK(unit_dir_entries(dir) == 0);
	CHECK(outdates_save(dir, NULL, NULL) == 0);
	back = NULL;
	CHECK(outdates_load(dir, &back, &recs, why, sizeof(why)) == 0 && back == NULL);
	CHECK(recs == NULL);
	outdates_free(l);
}

static void test_records(const char *dir)
{
	struct pending_outdate *pend = req("vol0", "n2", 7, NULL), *recs = NULL;
	struct pending_outdate *p2 = NULL, *r2 = NULL;
	char why[160] = "", text[512];

	CHECK(outdates_add_record(&recs, "vol0", "n2") == 1);
	CHECK(outdates_add_record(&recs, "vol1", "n1") == 1);
	CHECK(outdates_add_record(&recs, "vol0", "n2") == 0);	/* once */
	CHECK(outdates_add_record(&recs, "vol0", "n3") == 1);
	CHECK(count(recs) == 3 && recs->token == 0);
	CHECK(outdates_find(recs, "vol1", "n1") && !outdates_find(recs, "vol1", "n2"));

	/* Requests and records in one file, each back in its own list. */
	CHECK(outdates_save(dir, pend, recs) == 0);
	CHECK(unit_dir_entries(dir) == 1);
	CHECK(outdates_load(dir, &p2, &r2, why, sizeof(why)) == 0);
	CHECK(count(p2) == 1 && p2->token == 7 && !strcmp(p2->node, "n2"));
	CHECK(count(r2) == 3 && !strcmp(r2->volume, "vol0") && !strcmp(r2->node, "n2") &&
	      r2->token == 0 && r2->replayed);
	CHECK(r2 && r2->next && !strcmp(r2->next->volume, "vol1"));
	/* Records only: the file stays. */
	CHECK(outdates_save(dir, NULL, recs) == 0 && unit_dir_entries(dir) == 1);
	CHECK(outdates_format(recs, text, sizeof(text)) > 0 && strstr(text, "\nvol1 n1\n"));

	CHECK(outdates_remove(&recs, "vol0", "n2") == 1);
	CHECK(outdates_remove(&recs, "vol0", "n2") == 0);
	CHECK(count(recs) == 2);
	CHECK(outdates_remove(&recs, "vol1", NULL) == 1 && count(recs) == 1);
	CHECK(outdates_remove(&recs, "vol0", NULL) == 1 && recs == NULL);
	CHECK(outdates_save(dir, NULL, NULL) == 0 && unit_dir_entries(dir) == 0);
	outdates_free(pend);
	outdates_free(p2);
	outdates_free(r2);
}

static void test_garbage(const char *dir)
{
	static const struct {
		const char *text;
		const char *why;
	} rows[] = {
		{ "vol0\n", "line 1: expected volume node" },
		{ "# c\nvol0 n2 5 extra\n", "line 2: expected volume node" },
		{ "vol0 n2\nv/../x n2\n", "line 2: not a volume or node name" },
		{ "vol0 n2 0\n", "line 1: the token" },
		{ "vol0 n2 -3\n", "line 1: the token" },
		{ "vol0 n2 12x\n", "line 1: the token" },
		{ "vol0 n2 99999999999999999999999\n", "line 1: the token" },
		{ "vol0 n2 1\nv/../x n2 4\n", "line 2: not a volume or node name" },
		{ "vol0 n\x01 4\n", "line 1: not a volume or node name" },
	};
	struct pending_outdate *recs = NULL;
	char why[160];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct pending_outdate *l = NULL;

		write_text(dir, rows[i].text, strlen(rows[i].text));
		why[0] = '\0';
		CHECK_MSG(outdates_load(dir, &l, &recs, why, sizeof(why)) == -EINVAL, "row %zu", i);
		CHECK_MSG(l == NULL && recs == NULL, "row %zu added to a list", i);
		CHECK_MSG(strncmp(why, rows[i].why, strlen(rows[i].why)) == 0,
			  "row %zu: why '%s', expected '%s'", i, why, rows[i].why);
		outdates_free(l);
	}
	{
		struct pending_outdate *l = NULL;

		write_text(dir, "vol0 n2 1\n\0vol1 n2 2\n", 21);
		CHECK(outdates_load(dir, &l, &recs, why, sizeof(why)) == -EINVAL && l == NULL &&
		      recs == NULL);
		CHECK(strstr(why, "NUL") != NULL);
	}
	{
		char path[4096];
		struct pending_outdate *l = NULL;

		snprintf(path, sizeof(path), "%s/%s", dir, OUTDATES_FILE);
		unlink(path);
		CHECK(mkdir(path, 0700) == 0);
		CHECK(outdates_load(dir, &l, &recs, why, sizeof(why)) < 0 && l == NULL);
		CHECK(outdates_save(dir, NULL, NULL) < 0);	/* a directory is not removed */
		rmdir(path);
	}
}

static void test_format_bound(void)
{
	struct pending_outdate *l = req("vol0", "n2", 1, NULL);
	char small[16], big[256];

	CHECK(outdates_format(l, small, sizeof(small)) == -ENOSPC);
	CHECK(outdates_format(l, big, sizeof(big)) > 0 && strstr(big, "\nvol0 n2 1\n"));
	outdates_free(l);
}

int main(void)
{
	char dir[] = "/tmp/test-outdates.XXXXXX";

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 99;
	}
	test_round_trip(dir);
	test_records(dir);
	test_garbage(dir);
	test_format_bound();
	{
		char path[4096];

		snprintf(path, sizeof(path), "%s/%s", dir, OUTDATES_FILE);
		unlink(path);
	}
	rmdir(dir);
	return unit_done("test-outdates");
}
