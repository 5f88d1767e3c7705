/*
 * jbd2_format.h: the on-disk JBD2 journal format, written from the format
 * facts (ext3-facts.md §4), not copied from kernel headers. Everything on
 * disk is big-endian; fields use wrapper types (be16_t/be32_t/be64_t) so
 * that reading one without jbd2_get32() & co. fails to compile — the
 * sparse-style check of STYLE habit 8. Convert at the edge, nowhere else.
 */
#ifndef E3_JBD2_FORMAT_H
#define E3_JBD2_FORMAT_H

#include <stdint.h>
#include <stddef.h>
#include <endian.h>

typedef struct { uint16_t raw; } be16_t;
typedef struct { uint32_t raw; } be32_t;
typedef struct { uint64_t raw; } be64_t;

static inline uint16_t jbd2_get16(be16_t v) { return be16toh(v.raw); }
static inline uint32_t jbd2_get32(be32_t v) { return be32toh(v.raw); }
static inline uint64_t jbd2_get64(be64_t v) { return be64toh(v.raw); }
static inline be16_t jbd2_be16(uint16_t v) { be16_t r = { htobe16(v) }; return r; }
static inline be32_t jbd2_be32(uint32_t v) { be32_t r = { htobe32(v) }; return r; }
static inline be64_t jbd2_be64(uint64_t v) { be64_t r = { htobe64(v) }; return r; }

/* Unaligned big-endian access inside raw blocks (tags, revoke records). */
static inline uint32_t jbd2_load32(const void *p)
{
	const unsigned char *b = p;

	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
	       (uint32_t)b[2] << 8 | b[3];
}
static inline uint16_t jbd2_load16(const void *p)
{
	const unsigned char *b = p;

	return (uint16_t)(b[0] << 8 | b[1]);
}
static inline void jbd2_store32(void *p, uint32_t v)
{
	unsigned char *b = p;

	b[0] = v >> 24; b[1] = v >> 16; b[2] = v >> 8; b[3] = v;
}
static inline void jbd2_store16(void *p, uint16_t v)
{
	unsigned char *b = p;

	b[0] = v >> 8; b[1] = v;
}

#define JBD2_MAGIC		0xC03B3998U

/* h_blocktype */
#define JBD2_DESCRIPTOR_BLOCK	1
#define JBD2_COMMIT_BLOCK	2
#define JBD2_SUPERBLOCK_V1	3
#define JBD2_SUPERBLOCK_V2	4
#define JBD2_REVOKE_BLOCK	5
#define JBD2_FC_BLOCK		6

/* feature bits */
#define JBD2_COMPAT_CHECKSUM		0x1	/* v1: crc32_be in commit */
#define JBD2_INCOMPAT_REVOKE		0x1
#define JBD2_INCOMPAT_64BIT		0x2
#define JBD2_INCOMPAT_ASYNC_COMMIT	0x4
#define JBD2_INCOMPAT_CSUM_V2		0x8
#define JBD2_INCOMPAT_CSUM_V3		0x10
#define JBD2_INCOMPAT_FAST_COMMIT	0x20
/* what our recovery understands (fast commits are ext4's alone) */
#define JBD2_INCOMPAT_READ_OK (JBD2_INCOMPAT_REVOKE | JBD2_INCOMPAT_64BIT | \
	JBD2_INCOMPAT_ASYNC_COMMIT | JBD2_INCOMPAT_CSUM_V2 | JBD2_INCOMPAT_CSUM_V3)
/* what our writer produces: ext3's feature set */
#define JBD2_INCOMPAT_WRITE_OK	JBD2_INCOMPAT_REVOKE

/* tag flags */
#define JBD2_FLAG_ESCAPE	0x1
#define JBD2_FLAG_SAME_UUID	0x2
#define JBD2_FLAG_DELETED	0x4
#define JBD2_FLAG_LAST_TAG	0x8

/* commit block checksum types (v1 CHECKSUM feature) */
#define JBD2_CRC32_CHKSUM	1
#define JBD2_CRC32_CHKSUM_SIZE	4
/* s_checksum_type for csum v2/v3 */
#define JBD2_CRC32C_CHKSUM	4

#define JBD2_MIN_JOURNAL_BLOCKS	1024
#define JBD2_UUID_BYTES		16

struct jbd2_header {
	be32_t h_magic;
	be32_t h_blocktype;
	be32_t h_sequence;		/* the tid this block belongs to */
};

struct jbd2_superblock {
	struct jbd2_header s_header;
	be32_t s_blocksize;		/* 0x0C */
	be32_t s_maxlen;		/* 0x10 blocks in the journal */
	be32_t s_first;			/* 0x14 first log block */
	be32_t s_sequence;		/* 0x18 tid expected at s_start */
	be32_t s_start;			/* 0x1C oldest live block; 0 = empty */
	be32_t s_errno;			/* 0x20 */
	be32_t s_feature_compat;	/* 0x24 */
	be32_t s_feature_incompat;	/* 0x28 */
	be32_t s_feature_ro_compat;	/* 0x2C */
	uint8_t s_uuid[16];		/* 0x30 */
	be32_t s_nr_users;		/* 0x40 */
	be32_t s_dynsuper;		/* 0x44 */
	be32_t s_max_transaction;	/* 0x48 */
	be32_t s_max_trans_data;	/* 0x4C */
	uint8_t s_checksum_type;	/* 0x50 */
	uint8_t s_padding2[3];
	be32_t s_num_fc_blks;		/* 0x54 */
	be32_t s_head;			/* 0x58 */
	be32_t s_padding[40];		/* 0x5C */
	be32_t s_checksum;		/* 0xFC crc32c of 0..0xFB (v2/v3) */
	uint8_t s_users[16 * 48];	/* 0x100 */
};

struct jbd2_commit {
	struct jbd2_header c_header;
	uint8_t c_chksum_type;		/* 0x0C */
	uint8_t c_chksum_size;		/* 0x0D */
	uint8_t c_padding[2];
	be32_t c_chksum[8];		/* 0x10 */
	be64_t c_commit_sec;		/* 0x30 */
	be32_t c_commit_nsec;		/* 0x38 */
};

struct jbd2_revoke_header {
	struct jbd2_header r_header;
	be32_t r_count;			/* bytes used, header included */
};

/* Tags are packed at byte offsets, so they are read with jbd2_load*():
 *   offset 0: be32 blocknr
 *   32-bit and csum v2 tags: be16 checksum @4, be16 flags @6, [be32 high @8]
 *   csum v3 tags:            be32 flags @4 (low half @6), be32 high @8,
 *                            be32 checksum @12
 * The flags are always readable as a be16 at offset 6. */
#define JBD2_TAG_BLOCKNR	0
#define JBD2_TAG_CSUM16		4
#define JBD2_TAG_FLAGS16	6
#define JBD2_TAG_HIGH		8
#define JBD2_TAG3_CSUM		12

/* Bytes per tag for a journal's incompat features (UUID not included). */
static inline unsigned jbd2_tag_bytes(uint32_t incompat)
{
	if (incompat & JBD2_INCOMPAT_CSUM_V3)
		return 16;
	if (incompat & JBD2_INCOMPAT_CSUM_V2)
		return (incompat & JBD2_INCOMPAT_64BIT) ? 14 : 10;
	return (incompat & JBD2_INCOMPAT_64BIT) ? 12 : 8;
}

static inline int jbd2_has_csum_v2v3(uint32_t incompat)
{
	return (incompat & (JBD2_INCOMPAT_CSUM_V2 | JBD2_INCOMPAT_CSUM_V3)) != 0;
}

/* Block tail holding a descriptor's/revoke block's crc32c (v2/v3). */
#define JBD2_TAIL_BYTES		4

/* tids wrap at 2^32: compare by signed difference, as JBD2 does */
static inline int jbd2_tid_gt(uint32_t x, uint32_t y)
{
	return (int32_t)(x - y) > 0;
}
static inline int jbd2_tid_geq(uint32_t x, uint32_t y)
{
	return (int32_t)(x - y) >= 0;
}

_Static_assert(sizeof(struct jbd2_header) == 12, "jbd2 header");
_Static_assert(sizeof(struct jbd2_superblock) == 1024, "jbd2 superblock");
_Static_assert(offsetof(struct jbd2_superblock, s_checksum) == 0xFC, "s_checksum");
_Static_assert(offsetof(struct jbd2_superblock, s_nr_users) == 0x40, "s_nr_users");
_Static_assert(offsetof(struct jbd2_commit, c_commit_sec) == 0x30, "commit sec");
_Static_assert(sizeof(struct jbd2_revoke_header) == 16, "revoke header");

#endif
