// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: the intent and done item decoders.  The input is a type
 * selector, a flags byte and an item payload.  The payload goes through
 * the registered type's validation (the deferred types' decode: BUI, EFI,
 * CUI, and SXI through the core's sx_swapext_item_decode()), its log
 * printer, and for an SXI the core's own sx_swapext_sxi_check() and
 * decode, on a read-only mount of the golden image that lives as long as
 * the process.  With ITEM_RECOVER the payload is then logged as an op of a
 * committed transaction (with ITEM_DONE, a done item for it follows) in a
 * copy of the golden image, and a mount recovers it: validation, pairing
 * and the finishing of the work.
 */
#include "fz.h"
#include "item.h"
#include <swapext/host.h>

enum {
	ITEM_RECOVER	= (1u << 0),
	ITEM_DONE	= (1u << 1),	/* a done item with the intent's id */
	ITEM_TWO	= (1u << 2),	/* the done item in a record of its own */
};

static const u16 item_types[] = {
	SX_LOG_OP_BUI, SX_LOG_OP_BUD, SX_LOG_OP_EFI, SX_LOG_OP_EFD,
	SX_LOG_OP_CUI, SX_LOG_OP_CUD, SX_LOG_OP_SXI, SX_LOG_OP_SXD,
};

static struct fz_image item_golden;
static struct sx_bdev *item_bd;
static struct sx_mount *item_mp;
static u64 item_words[4096 / 8];
static u8 *const item_buf = (u8 *)item_words;

static int item_init(void)
{
	struct sx_mount_opts mo = { .mo_flags = SX_MOUNT_RDONLY };
	int error;

	error = fz_golden(&fz_golden_std, &item_golden);
	if (error)
		return error;
	item_bd = fz_dev_from(item_golden.im_data, item_golden.im_size);
	if (!item_bd)
		return -ENOMEM;
	return sx_mount(item_bd, &mo, &item_mp);
}

static void item_print(void *arg, const char *fmt, ...)
{
}

/* Append one op (header, payload, padding) at @p; returns its length. */
static size_t item_op(u8 *p, u16 type, u64 tid, const void *payload, u32 len)
{
	struct sx_dlog_op op = { 0 };
	size_t sz = sizeof(op) + sx_roundup((size_t)len, (size_t)SX_LOG_OP_ALIGN);

	/* framed records have no alignment: fields go in by copy */
	memset(p, 0, sz);
	op.lo_type = cpu_to_le16(type);
	op.lo_len = cpu_to_le32(len);
	op.lo_tid = cpu_to_le64(tid);
	memcpy(p, &op, sizeof(op));
	if (len)
		memcpy(p + sizeof(op), payload, len);
	return sz;
}

/* Close a framed record that starts at @rec and ends at @end. */
static void item_close_rec(u8 *rec, u8 *end)
{
	struct fz_rec_hdr h = { 0 };

	h.fr_len = cpu_to_le16((u16)(end - rec - sizeof(h)));
	memcpy(rec, &h, sizeof(h));
}

/* Log the item in a copy of the golden image and mount it: recovery. */
static void item_recover(u16 type, u8 flags, const u8 *payload, u32 len)
{
	struct sx_dlog_intent done = { 0 };
	struct sx_mount *mp;
	struct sx_bdev *bd;
	u8 *buf, *p, *rec;

	buf = malloc(4 * sizeof(struct fz_rec_hdr) + 4 * sizeof(struct sx_dlog_op) +
		     len + sizeof(done) + 16);
	if (!buf)
		return;
	rec = p = buf;
	p += sizeof(struct fz_rec_hdr);
	p += item_op(p, type, 1, payload, len);
	p += item_op(p, SX_LOG_OP_TRANS_END, 1, NULL, 0);
	if ((flags & ITEM_DONE) && sx_item_is_intent(type) &&
	    len >= sizeof(struct sx_dlog_intent)) {
		const struct sx_item_ops *ops = sx_item_lookup(type);

		if (flags & ITEM_TWO) {
			item_close_rec(rec, p);
			rec = p;
			p += sizeof(struct fz_rec_hdr);
		}
		memcpy(&done.li_id, payload, sizeof(done.li_id));
		done.li_nitems = cpu_to_le32(1);
		p += item_op(p, ops->io_done_type, 2, &done, sizeof(done));
		p += item_op(p, SX_LOG_OP_TRANS_END, 2, NULL, 0);
	}
	item_close_rec(rec, p);

	bd = fz_dev_from(item_golden.im_data, item_golden.im_size);
	if (bd) {
		fz_frame_log(fz_dev_data(bd), bd->bd_size, buf, (size_t)(p - buf));
		if (!sx_mount(bd, NULL, &mp))
			sx_unmount(mp);
		fz_check(bd);
		fz_dev_free(bd);
	}
	free(buf);
}

static int item_run(const u8 *data, size_t size)
{
	const struct sx_item_ops *ops;
	u16 type;
	u8 flags;
	u32 len;
	int error = 0;

	if (size < 2)
		return 0;
	type = item_types[data[0] % ARRAY_SIZE(item_types)];
	flags = data[1];
	len = (u32)sx_min(size - 2, (size_t)4096);
	/* recovery hands decoders 8-byte aligned payloads: so does this */
	memcpy(item_buf, data + 2, len);
	data = item_buf;
	ops = sx_item_lookup(type);
	if (!ops)
		fz_bug("item type 0x%x is not registered", type);
	if (ops->io_validate)
		error = ops->io_validate(ops, item_mp, data, len);
	if (ops->io_print)
		ops->io_print(ops, data, len, item_print, NULL);
	if (type == SX_LOG_OP_SXI && !sx_swapext_sxi_check(&item_mp->m_host, data, len)) {
		const struct sx_dlog_sxi *sxi = (const struct sx_dlog_sxi *)data;
		struct sx_swapext_intent si;

		if (!sx_swapext_item_decode(&item_mp->m_host, &sxi->sxi_ext, &si))
			sx_swapext_item_cancel(&si);
	}
	if ((flags & ITEM_RECOVER) && !error)
		item_recover(type, flags, data, len);
	return 0;
}

FZ_TARGET(items, item_init, item_run)
