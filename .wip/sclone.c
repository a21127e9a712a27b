#include <stdio.h>
#include <stdlib.h>
#include "sxtest.h"
#include "btree.h"
#include "bmap.h"
#include "inode.h"
#include "defer.h"
#include "refcount.h"
#include "reflink.h"
#include "/tmp/stub/stubdecl.h"
extern struct sx_inode fake_inodes[]; extern int nfake, nfinish, nagain;
#define NF 3
#define NBLK 64
static struct sx_mount *mp;
static u64 model[NF][NBLK];	/* tag of each block, 0 = zeroes */
static u8 *blk;
#define FAIL(...) do { printf(__VA_ARGS__); printf("\n"); exit(1); } while (0)

static void fill(u64 tag) { u64 i; for (i = 0; i < mp->m_bsize / 8; i++) ((u64 *)blk)[i] = tag * 1000003 + i; if (!tag) memset(blk, 0, mp->m_bsize); }
static u64 readtag(struct sx_inode *ip, u64 off)
{
	struct sx_bmap_irec r; u64 i, tag;
	if (sx_bmap_lookup(NULL, ip, off, &r)) FAIL("lookup");
	if (r.br_startblock == SX_HOLE || r.br_state) return 0;
	if (sx_dev_read(mp, r.br_startblock + off - r.br_startoff, 1, blk)) FAIL("read");
	tag = ((u64 *)blk)[0] / 1000003;
	for (i = 0; i < mp->m_bsize / 8; i++) if (((u64 *)blk)[i] != tag * 1000003 + i) FAIL("torn block");
	return tag;
}
static void dowrite(int f, u64 off, u64 n, u64 tag)
{
	struct sx_inode *ip = &fake_inodes[f]; struct sx_trans *tp; u64 b, cowed;
	struct sx_bmap_irec r; u32 got; u64 bno;
	if (sx_trans_alloc(mp, 200000, 0, &tp)) FAIL("talloc");
	if (sx_reflink_cow(&tp, ip, off, n, &cowed)) FAIL("cow");
	for (b = off; b < off + n; b++) {
		if (sx_bmap_lookup(tp, ip, b, &r)) FAIL("lk");
		if (r.br_startblock == SX_HOLE) {
			if (sx_alloc_extent(tp, 0, 1, 1, &bno, &got)) FAIL("alloc");
			r.br_startoff = b; r.br_startblock = bno; r.br_blockcount = 1; r.br_state = 0;
			if (sx_bmap_map(tp, ip, &r)) FAIL("map");
		} else bno = r.br_startblock + b - r.br_startoff;
		fill(tag + b);
		if (sx_dev_write(mp, bno, 1, blk, 0)) FAIL("w");
		model[f][b] = tag + b;
	}
	if (sx_trans_commit(tp)) FAIL("commit");
	if ((ip->i_size >> mp->m_blog) < off + n) ip->i_size = (off + n) << mp->m_blog;
}
static void punch(int f, u64 off, u64 n)
{
	struct sx_trans *tp; u64 b;
	if (sx_trans_alloc(mp, 200000, 0, &tp)) FAIL("talloc");
	if (sx_bmap_unmap_later(tp, &fake_inodes[f], off, n, 0)) FAIL("unmap later");
	if (sx_defer_finish(&tp)) FAIL("finish");
	if (sx_trans_commit(tp)) FAIL("commit");
	for (b = off; b < off + n; b++) model[f][b] = 0;
}
static void verify(void)
{
	static u32 cnt[1 << 16]; int f; u64 b;
	memset(cnt, 0, sizeof(cnt));
	for (f = 0; f < NF; f++) for (b = 0; b < NBLK; b++) {
		struct sx_bmap_irec r;
		if (readtag(&fake_inodes[f], b) != model[f][b]) FAIL("file %d blk %llu: tag %llu want %llu", f, (unsigned long long)b, (unsigned long long)readtag(&fake_inodes[f], b), (unsigned long long)model[f][b]);
		sx_bmap_lookup(NULL, &fake_inodes[f], b, &r);
		if (r.br_startblock != SX_HOLE) cnt[r.br_startblock + b - r.br_startoff]++;
	}
	for (b = mp->m_sb.sb_datastart; b < mp->m_sb.sb_dblocks && b < (1 << 16); b++) {
		u32 c; bool fr;
		if (!cnt[b]) continue;
		sx_refcount_get(mp, b, &c);
		sx_alloc_is_free(mp, b, &fr);
		if (fr) FAIL("mapped block %llu free", (unsigned long long)b);
		if (c != cnt[b]) FAIL("block %llu mapped %u refcount %u", (unsigned long long)b, cnt[b], c);
	}
}
int main(void)
{
	struct sx_bdev *bd = sxt_memfs(64ull << 20, 1024, 4096);
	u64 seed = 99; int i, op; u64 free0;
	mp = sxt_mount(bd);
	blk = malloc(mp->m_bsize);
	for (i = 0; i < NF; i++) {
		struct sx_inode *ip = &fake_inodes[i];
		memset(ip, 0, sizeof(*ip));
		ip->i_mp = mp; ip->i_ino = mp->m_sb.sb_dblocks - 10 - i; ip->i_gen = 1; ip->i_mode = SX_IFREG | 0644;
	}
	nfake = NF;
	free0 = sx_alloc_free_blocks(mp);
	dowrite(0, 0, 20, 100);
	if (sx_reflink_remap(&fake_inodes[1], 0, &fake_inodes[0], 0, 0)) FAIL("clone");
	memcpy(model[1], model[0], sizeof(model[0]));
	verify();
	dowrite(1, 5, 3, 500);
	verify();
	printf("basic ok, finishes %d again %d\n", nfinish, nagain);
	for (op = 0; op < 3000; op++) {
		int d = sxt_rand(&seed) % NF, s = sxt_rand(&seed) % NF, k = sxt_rand(&seed) % 3;
		u64 off = sxt_rand(&seed) % (NBLK - 8), n = 1 + sxt_rand(&seed) % 8;
		if (k == 0) dowrite(d, off, n, (op + 1) * 1000);
		else if (k == 1) {
			u64 soff = sxt_rand(&seed) % (NBLK - 8); int e;
			struct sx_inode *dip = &fake_inodes[d], *sip = &fake_inodes[s];
			if ((soff + n) << mp->m_blog > sip->i_size) continue;
			e = sx_reflink_remap(dip, off << mp->m_blog, sip, soff << mp->m_blog, n << mp->m_blog);
			if (d == s && off < soff + n && soff < off + n) { if (e != -EINVAL) FAIL("overlap %d", e); continue; }
			if ((soff + n) << mp->m_blog == sip->i_size) { /* to EOF: aligned sizes here */ }
			if (e) FAIL("remap %d op %d", e, op);
			memmove(&model[d][off], &model[s][soff], n * 8);
			if (!(sip->i_flags & SX_DIFLAG_REFLINK) || !(dip->i_flags & SX_DIFLAG_REFLINK)) FAIL("flag");
		} else punch(d, off, n);
		if (op % 50 == 0) verify();
	}
	verify();
	for (i = 0; i < NF; i++) punch(i, 0, NBLK);
	verify();
	{ u64 root; u32 nl; struct sx_buf *bp; sx_fsinfo_get_refc_root(mp, NULL, &bp, &root, &nl); printf("tree root %llu levels %u, free %llu of %llu before\n", (unsigned long long)root, nl, (unsigned long long)sx_alloc_free_blocks(mp), (unsigned long long)free0); }
	printf("ok, finishes %d again %d\n", nfinish, nagain);
	return 0;
}
