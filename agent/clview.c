/* clview.c: see clview.h. */
#include "config.h"

#include "clview.h"
#include "json.h"

static void put_node(struct json_writer *w, const struct clview_node *n)
{
	json_obj_begin(w);
	json_kv_str(w, "name", n->name[0] ? n->name : NULL);
	json_kv_u64(w, "nodeid", n->nodeid);
	json_kv_str(w, "address", n->addr[0] ? n->addr : NULL);
	json_kv_bool(w, "member", n->member);
	json_obj_end(w);
}

void clview_put(struct json_writer *w, const struct clview *v)
{
	json_obj_begin(w);
	json_kv_str(w, "mode", v->cluster ? "corosync" : "static");
	if (v->cluster) {
		json_kv_str(w, "node", v->node);
		json_kv_u64(w, "nodeid", v->nodeid);
		json_kv_bool(w, "connected", v->connected);
		json_kv_bool(w, "quorate", v->quorate);
		json_kv_bool(w, "synced", v->synced);
		json_key(w, "nodes");
		json_arr_begin(w);
		for (unsigned i = 0; i < v->n_nodes && i < CLVIEW_NODES_MAX; i++)
			put_node(w, &v->nodes[i]);
		json_arr_end(w);
		json_kv_u64(w, "protocol", v->protocol);
		json_kv_bool(w, "mixed", v->n_others > 0);
		json_key(w, "other_protocols");
		json_arr_begin(w);
		for (unsigned i = 0; i < v->n_others && i < CLVIEW_NODES_MAX; i++) {
			json_obj_begin(w);
			json_kv_u64(w, "nodeid", v->others[i].nodeid);
			json_kv_u64(w, "protocol", v->others[i].protocol);
			json_obj_end(w);
		}
		json_arr_end(w);
	}
	json_obj_end(w);
}
