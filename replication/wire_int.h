/* wire_int.h: what the frame codec (wire.c) and the payload codec
 * (wire_payload.c) share and nothing else includes: big-endian field
 * access and the table of frame types, indexed by type, that gives each
 * its name, payload bounds, check, encoder and decoder.  wire.c calls
 * into the table; wire_payload.c never calls wire.c. */
#ifndef REPL_WIRE_INT_H
#define REPL_WIRE_INT_H

#include <endian.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "wire.h"

/* ---- byte order ------------------------------------------------------- */

static inline void put16(uint8_t *p, uint16_t v)
{
	v = htobe16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void put32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void put64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, sizeof(v));
}

static inline uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return be16toh(v);
}

static inline uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return be32toh(v);
}

static inline uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return be64toh(v);
}

/* ---- the type table (wire_payload.c) ------------------------------------- */

struct wire_type_info {
	const char *name;
	uint32_t fixed;		/* fixed payload bytes */
	bool data;		/* followed by 1..WIRE_DATA_MAX data bytes */
	int (*check)(const struct wire_msg *m);
	void (*enc)(const struct wire_msg *m, uint8_t *p);
	int (*dec)(const uint8_t *p, uint32_t len, struct wire_msg *m);
};

/* Entries with no name are not types. */
extern const struct wire_type_info repl__wire_types[WIRE_TYPE_COUNT];

#endif
