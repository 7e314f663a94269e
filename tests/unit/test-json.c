/* test-json.c: the control socket's JSON writer (escaping, commas, misuse)
 * and parser (accepted and refused texts, lookups, round trips). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "json.h"
#include "unit.h"
#include "util.h"

/* The writer's output for one string value. */
static const struct {
	const char *in, *out;
} escapes[] = {
	{ "", "\"\"" },
	{ "plain", "\"plain\"" },
	{ "say \"hi\"", "\"say \\\"hi\\\"\"" },
	{ "back\\slash", "\"back\\\\slash\"" },
	{ "a\nb\rc\td", "\"a\\nb\\rc\\td\"" },
	{ "\b\f", "\"\\b\\f\"" },
	{ "\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"" },
	{ "caf\xc3\xa9", "\"caf\xc3\xa9\"" },			/* valid UTF-8 kept */
	{ "\xe2\x82\xac\xf0\x9f\x98\x80", "\"\xe2\x82\xac\xf0\x9f\x98\x80\"" },
	{ "bad\xff", "\"bad\\ufffd\"" },			/* invalid byte */
	{ "\xc3", "\"\\ufffd\"" },				/* truncated */
	{ "\xc0\xaf", "\"\\ufffd\\ufffd\"" },			/* overlong */
	{ "\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"" },	/* surrogate */
	{ "</script>", "\"</script>\"" },
};

static void test_escapes(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(escapes); i++) {
		struct json_writer w;
		const char *text;
		size_t len;

		json_writer_init(&w);
		json_str(&w, escapes[i].in);
		CHECK(json_writer_result(&w, &text, &len) == 0);
		CHECK_MSG(!strcmp(text, escapes[i].out), "escape %zu: got %s", i, text);
		CHECK(len == strlen(text));
		json_writer_release(&w);
	}
}

static void test_structure(void)
{
	struct json_writer w;
	const char *text;
	size_t len;

	json_writer_init(&w);
	json_obj_begin(&w);
	json_kv_bool(&w, "ok", true);
	json_kv_str(&w, "node", NULL);
	json_key(&w, "list");
	json_arr_begin(&w);
	json_u64(&w, UINT64_MAX);
	json_i64(&w, -5);
	json_obj_begin(&w);
	json_obj_end(&w);
	json_arr_begin(&w);
	json_arr_end(&w);
	json_null(&w);
	json_arr_end(&w);
	json_kv_u64(&w, "n", 0);
	json_obj_end(&w);
	CHECK(json_writer_result(&w, &text, &len) == 0);
	CHECK_MSG(!strcmp(text, "{\"ok\":true,\"node\":null,\"list\":"
			  "[18446744073709551615,-5,{},[],null],\"n\":0}"), "got %s", text);
	json_writer_release(&w);
}

static void test_misuse(void)
{
	struct json_writer w;
	const char *text;
	size_t len;

	json_writer_init(&w);
	json_obj_begin(&w);
	CHECK(json_writer_result(&w, &text, &len) == -EINVAL);	/* unclosed */
	json_key(&w, "k");
	CHECK(json_writer_result(&w, &text, &len) == -EINVAL);
	json_obj_end(&w);					/* key without value */
	CHECK(json_writer_result(&w, &text, &len) == -EINVAL);
	json_writer_release(&w);

	json_writer_init(&w);
	json_arr_end(&w);
	CHECK(json_writer_result(&w, &text, &len) == -EINVAL);
	json_writer_release(&w);

	json_writer_init(&w);
	for (int i = 0; i <= JSON_DEPTH_MAX; i++)
		json_arr_begin(&w);
	CHECK(json_writer_result(&w, &text, &len) == -EINVAL);
	json_writer_release(&w);
}

static const char *const good[] = {
	"{}", "[]", " { \"a\" : [ 1 , 2 ] } \n", "\"x\"", "0", "-0", "1.5e-3", "12E+2",
	"true", "false", "null", "\"\\u00e9\\ud83d\\ude00\\/\"", "[[[[]]]]",
	"{\"a\":{\"b\":{\"c\":null}},\"d\":\"\"}",
};

static const char *const bad[] = {
	"", " ", "{", "}", "[1,]", "[,1]", "{\"a\"}", "{\"a\":}", "{a:1}", "{\"a\":1,}",
	"01", "1.", ".5", "-", "1e", "+1", "tru", "nul", "True", "\"abc", "\"a\nb\"",
	"\"\\x\"", "\"\\u12\"", "\"\\u0000\"", "\"\\ud800\"", "\"\\udc00\"",
	"\"\\ud800\\u0041\"", "{} {}", "[1] x", "'a'", "[1 2]", "{\"a\" 1}",
};

static void test_parse_table(void)
{
	struct json_value *v;
	char deep[2 * (JSON_DEPTH_MAX + 1) + 1];

	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		v = NULL;
		CHECK_MSG(json_parse(good[i], strlen(good[i]), &v) == 0, "refused %s", good[i]);
		json_value_free(v);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		v = NULL;
		CHECK_MSG(json_parse(bad[i], strlen(bad[i]), &v) == -EINVAL, "accepted %s",
			  bad[i]);
		CHECK(v == NULL);
	}
	/* a NUL inside the given length is garbage */
	CHECK(json_parse("{}\0", 3, &v) == -EINVAL);
	/* nesting: JSON_DEPTH_MAX levels are fine, one more is not */
	memset(deep, '[', JSON_DEPTH_MAX);
	memset(deep + JSON_DEPTH_MAX, ']', JSON_DEPTH_MAX);
	CHECK(json_parse(deep, 2 * JSON_DEPTH_MAX, &v) == 0);
	json_value_free(v);
	memset(deep, '[', JSON_DEPTH_MAX + 1);
	memset(deep + JSON_DEPTH_MAX + 1, ']', JSON_DEPTH_MAX + 1);
	CHECK(json_parse(deep, 2 * (JSON_DEPTH_MAX + 1), &v) == -EINVAL);
}

static void test_lookups(void)
{
	static const char text[] =
		"{\"ok\":true,\"s\":\"a\\\"b\\u00e9\",\"big\":18446744073709551615,"
		"\"neg\":-7,\"frac\":1.5,\"huge\":18446744073709551616,\"arr\":[1,{\"x\":false}]}";
	struct json_value *v;
	uint64_t u;
	int64_t i;

	CHECK(json_parse(text, strlen(text), &v) == 0);
	CHECK(json_get_bool(v, "ok"));
	CHECK(!json_get_bool(v, "s"));
	CHECK(!json_get_bool(v, "missing"));
	CHECK(!strcmp(json_get_str(v, "s"), "a\"b\xc3\xa9"));
	CHECK(json_get_str(v, "ok") == NULL);
	CHECK(json_get_u64(v, "big", &u) == 0 && u == UINT64_MAX);
	CHECK(json_get_u64(v, "neg", &u) == -ERANGE);
	CHECK(json_get_i64(v, "neg", &i) == 0 && i == -7);
	CHECK(json_get_u64(v, "frac", &u) == -ENOENT);
	CHECK(json_get_u64(v, "huge", &u) == -ERANGE);
	CHECK(json_get_i64(v, "big", &i) == -ERANGE);
	CHECK(json_get_u64(v, "s", &u) == -ENOENT);
	CHECK(json_get(v, "arr")->type == JSON_ARRAY);
	CHECK(json_get(json_get(v, "arr")->child->next, "x")->type == JSON_BOOL);
	CHECK(json_get(json_get(v, "arr"), "x") == NULL);	/* not an object */
	CHECK(json_get(NULL, "x") == NULL);
	json_value_free(v);
}

/* Whatever bytes the writer gets, the parser reads the same string back. */
static void test_round_trip(void)
{
	char all[256];
	struct json_writer w;
	struct json_value *v;
	const char *text;
	size_t len;

	for (int i = 1; i < 256; i++)
		all[i - 1] = (char)i;
	all[255] = '\0';
	json_writer_init(&w);
	json_obj_begin(&w);
	json_kv_str(&w, "k\"\n", "caf\xc3\xa9 \"q\" \\ \t\x01");
	json_kv_str(&w, "all", all);
	json_obj_end(&w);
	CHECK(json_writer_result(&w, &text, &len) == 0);
	CHECK(json_parse(text, len, &v) == 0);
	CHECK(!strcmp(json_get_str(v, "k\"\n"), "caf\xc3\xa9 \"q\" \\ \t\x01"));
	/* bytes 0x80.. alone are invalid UTF-8: each became U+FFFD */
	CHECK(json_get_str(v, "all") && !memcmp(json_get_str(v, "all"), all, 127));
	CHECK(json_get_str(v, "all") && strlen(json_get_str(v, "all")) == 127 + 128 * 3);
	json_value_free(v);
	json_writer_release(&w);
}

int main(void)
{
	test_escapes();
	test_structure();
	test_misuse();
	test_parse_table();
	test_lookups();
	test_round_trip();
	return unit_done("test-json");
}
