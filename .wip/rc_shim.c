#include <stdio.h>
#include <stdlib.h>
#include "sxtest.h"
#include "btree.h"
#include "refcount.h"

static u64 g_root; static u32 g_nlevels;
int sx_fsinfo_get_refc_root(struct sx_mount *mp, struct sx_trans *tp, struct sx_buf **bpp, u64 *root, u32 *nlevels)
{ *bpp = NULL; *root = g_root; *nlevels = g_nlevels; return 0; }
int sx_fsinfo_set_refc_root(struct sx_trans *tp, u64 root, u32 nlevels)
{ g_root = root; g_nlevels = nlevels; return 0; }
u32 sx_fsinfo_refc_nlevels(const struct sx_mount *mp) { return g_nlevels; }
int sx_efi_free_later(struct sx_trans *tp, u64 bno, u64 len) { return sx_free_extent(tp, bno, len); }

#define NB 3000
static u32 model[NB];
static u64 base;

static int verify(struct sx_mount *mp)
{
	static struct sx_drefc_rec recs[NB];
	u64 n, i, b, prev_end = 0; u32 prev_count = 0;
	int error = sx_btree_collect(mp, NULL, &sx_refcbt_ops, 0, g_root, g_nlevels, recs, NB, &n);
	static u32 cnt[NB];
	if (error) { printf("collect %d\n", error); return -1; }
	memset(cnt, 0, sizeof(cnt));
	for (i = 0; i < n; i++) {
		u64 s = le64_to_cpu(recs[i].rc_startblock); u32 l = le32_to_cpu(recs[i].rc_blockcount), c = le32_to_cpu(recs[i].rc_refcount);
		if (c < 2 || s < base || s + l > base + NB || s < prev_end) { printf("bad rec %llu+%u c%u\n", (unsigned long long)s, l, c); return -1; }
		if (i && s == prev_end && c == prev_count && l + (prev_end - le64_to_cpu(recs[i-1].rc_startblock)) <= SX_BMAP_MAXLEN) { printf("unmerged at %llu\n", (unsigned long long)s); return -1; }
		for (b = s; b < s + l; b++) cnt[b - base] = c;
		prev_end = s + l; prev_count = c;
	}
	for (b = 0; b < NB; b++) {
		bool fr;
		sx_alloc_is_free(mp, base + b, &fr);
		u32 m = model[b];
		if (m >= 2 ? cnt[b] != m : cnt[b] != 0) { printf("blk %llu model %u tree %u\n", (unsigned long long)b, m, cnt[b]); return -1; }
		if ((m == 0) != fr) { printf("blk %llu model %u free %d\n", (unsigned long long)b, m, fr); return -1; }
	}
	return 0;
}

int main(void)
{
	struct sx_bdev *bd = sxt_memfs(64ull << 20, 1024, 2048);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp; u64 seed = 12345, i; u32 len; int error;
	u64 b; u32 got, k;
	sx_trans_alloc(mp, 8 * sx_alloc_res_bytes(mp), 0, &tp);
	for (k = 0; k < NB; k += got) {
		u64 bb;
		error = sx_alloc_extent(tp, 0, 1, NB - k, &bb, &got);
		if (error) { printf("alloc %d\n", error); return 1; }
		if (k == 0) base = bb; else if (bb != base + k) { printf("noncontig\n"); return 1; }
	}
	sx_trans_commit(tp);
	for (b = 0; b < NB; b++) model[b] = 1;
	printf("res %u max %u\n", sx_refcount_res_bytes(mp), 0);
	for (i = 0; i < 20000; i++) {
		u64 s = sxt_rand(&seed) % NB, l = 1 + sxt_rand(&seed) % (i % 3 ? 8 : 200), e;
		int op = sxt_rand(&seed) % 2 ? SX_CUI_INCREASE : SX_CUI_DECREASE;
		u64 done, pos;
		if (model[s] == 0) continue;
		for (e = s; e < NB && e < s + l && model[e] > 0; e++) ;
		l = e - s;
		if (op == SX_CUI_INCREASE) { for (e = s; e < s + l; e++) if (model[e] > 20) op = SX_CUI_DECREASE; }
		pos = base + s;
		while (pos < base + s + l) {
			error = sx_trans_alloc(mp, sx_refcount_res_bytes(mp), 0, &tp);
			if (error) { printf("talloc %d\n", error); return 1; }
			error = sx_refcount_adjust(tp, pos, base + s + l - pos, op, 1, &done);
			if (error) { printf("adjust %d at op %llu\n", error, (unsigned long long)i); return 1; }
			error = sx_trans_commit(tp);
			if (error) { printf("commit %d\n", error); return 1; }
			pos += done;
		}
		for (e = s; e < s + l; e++) model[e] += op == SX_CUI_INCREASE ? 1 : -1;
		if (i % 100 == 0 || l > 50) if (verify(mp)) { printf("at op %llu\n", (unsigned long long)i); return 1; }
	}
	if (verify(mp)) return 1;
	printf("levels %u ok\n", g_nlevels);
	return 0;
}
