// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The damage of field fuzzing: the eight transforms of a field, the CRC
 * that covers it made right again (for a log record, its CRC and the
 * chain of every later record) or left stale, and the lost write of a
 * block (its older version put back).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "ffz.h"

static u64 ffz_mix(u64 x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Apply transform @x to the @size little-endian bytes at @p. */
static void ffz_xform(u8 *p, u32 size, u32 x, u64 rnd)
{
	u32 i, bit;

	switch (x) {
	case X_ZERO:
		memset(p, 0, size);
		break;
	case X_ONES:
		memset(p, 0xff, size);
		break;
	case X_HIGH:
		p[size - 1] ^= 0x80;
		break;
	case X_MID:
		bit = size * 4;
		p[bit / 8] ^= (u8)(1u << (bit % 8));
		break;
	case X_LOW:
		p[0] ^= 1;
		break;
	case X_INC:
		for (i = 0; i < size && ++p[i] == 0; i++)
			;
		break;
	case X_DEC:
		for (i = 0; i < size && p[i]-- == 0; i++)
			;
		break;
	case X_RAND:
		for (i = 0; i < size; i++) {
			if (i % 8 == 0)
				rnd = ffz_mix(rnd);
			p[i] = (u8)(rnd >> (8 * (i % 8)));
		}
		break;
	}
}

/* The random bytes of a field do not depend on the CRC mode or the sample. */
static u64 ffz_case_rnd(const struct ffz_set *s, const struct ffz_case *c)
{
	return ffz_mix(s->s_seed ^ ffz_mix(((u64)c->c_image << 48) ^ ((u64)c->c_obj << 16) ^
					c->c_field));
}

/* Bytes a log record's CRC may cover from @off: to the end of the log area. */
static u32 ffz_log_room(const struct ffz_image *im, u64 off)
{
	u64 room = im->fi_log_end - off;
	u64 max = (u64)sx_log_rec_max_blocks(im->fi_sb.sb_logblocks, FFZ_BS) * FFZ_BS;

	return (u32)sx_min(room, max);
}

/*
 * Make record @r's CRC right over the length its header now gives (a
 * forger's length, if it fits the log), then chain each later record of
 * the valid log to its predecessor again.
 */
static void ffz_fix_log(struct sx_bdev *bd, const struct ffz_image *im, u32 r, u8 *buf)
{
	struct sx_dlog_rec *rec = (struct sx_dlog_rec *)buf;
	u64 off = im->fi_recs[r].lr_off;
	u32 blocks = le32_to_cpu(rec->lr_blocks), len, crc, old = le32_to_cpu(rec->lr_crc);

	len = im->fi_recs[r].lr_blocks * FFZ_BS;
	if (blocks && (u64)blocks * FFZ_BS <= ffz_log_room(im, off))
		len = blocks * FFZ_BS;
	ffz_read(bd, off, buf, len);
	crc = sx_cksum_skip(buf, len, offsetof(struct sx_dlog_rec, lr_crc));
	rec->lr_crc = cpu_to_le32(crc);
	ffz_write(bd, off, buf, len);
	if (crc == old)
		return;
	for (r++; r < im->fi_nrecs; r++) {
		off = im->fi_recs[r].lr_off;
		len = im->fi_recs[r].lr_blocks * FFZ_BS;
		ffz_read(bd, off, buf, len);
		rec->lr_prev_crc = cpu_to_le32(crc);
		crc = sx_cksum_skip(buf, len, offsetof(struct sx_dlog_rec, lr_crc));
		rec->lr_crc = cpu_to_le32(crc);
		ffz_write(bd, off, buf, len);
	}
}

bool ffz_damage(const struct ffz_set *s, struct sx_bdev *bd, const struct ffz_case *c)
{
	const struct ffz_image *im = &s->s_images[c->c_image];
	const struct ffz_obj *o;
	const struct ffz_field *f;
	u8 before[512], *buf, *p;
	u32 len;
	bool changed;

	if (c->c_x == X_LOST) {
		u8 blk[FFZ_BS];

		if (bd) {
			ffz_read(im->fi_old, c->c_blk * FFZ_BS, blk, FFZ_BS);
			ffz_write(bd, c->c_blk * FFZ_BS, blk, FFZ_BS);
		}
		return true;
	}
	o = &s->s_objects[c->c_obj];
	f = ffz_obj_field(o, c->c_field);
	len = o->o_crc == FFZ_CRC_LOG ? ffz_log_room(im, o->o_unit) : o->o_unit_len;
	buf = malloc(len);
	if (!buf)
		abort();
	ffz_read(bd ? bd : im->fi_bd, o->o_unit, buf, o->o_unit_len);
	p = buf + (o->o_off - o->o_unit) + f->f_off;
	memcpy(before, p, f->f_size);
	ffz_xform(p, f->f_size, c->c_x, ffz_case_rnd(s, c));
	changed = memcmp(before, p, f->f_size) != 0;
	if (!bd || !changed) {
		free(buf);
		return changed;
	}
	if (c->c_stale || (f->f_flags & FFZ_F_CRC)) {
		ffz_write(bd, o->o_unit, buf, o->o_unit_len);
	} else if (o->o_crc == FFZ_CRC_SB) {
		((struct sx_dsb *)buf)->sb_crc = cpu_to_le32(sx_cksum_skip(buf, SX_SB_SIZE,
						offsetof(struct sx_dsb, sb_crc)));
		ffz_write(bd, o->o_unit, buf, o->o_unit_len);
	} else if (o->o_crc == FFZ_CRC_BLOCK) {
		((struct sx_dblk_hdr *)buf)->bh_crc = cpu_to_le32(sx_cksum_skip(buf, FFZ_BS,
						offsetof(struct sx_dblk_hdr, bh_crc)));
		ffz_write(bd, o->o_unit, buf, o->o_unit_len);
	} else {
		ffz_write(bd, o->o_unit, buf, o->o_unit_len);
		ffz_fix_log(bd, im, o->o_rec, buf);
	}
	free(buf);
	return true;
}
