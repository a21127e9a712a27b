#include "util.h"
#include "sxtest.h"
#include "btree.h"
#include "fork.h"
#include "inode.h"
#include "bmap.h"
#include "defer.h"
#include "file.h"
#include "/tmp/stub/stubdecl.h"
int sx_fsinfo_root_ino(struct sx_mount *mp, u64 *ino);
/* ---- fsinfo / efi */
static u64 g_root; static u32 g_nlevels;
int sx_fsinfo_get_refc_root(struct sx_mount *mp, struct sx_trans *tp, struct sx_buf **bpp, u64 *root, u32 *nlevels)
{ *bpp = NULL; *root = g_root; *nlevels = g_nlevels; return 0; }
int sx_fsinfo_set_refc_root(struct sx_trans *tp, u64 root, u32 nlevels)
{ g_root = root; g_nlevels = nlevels; return 0; }
u32 sx_fsinfo_refc_nlevels(const struct sx_mount *mp) { return g_nlevels; }
int sx_efi_free_later(struct sx_trans *tp, u64 bno, u64 len) { return sx_free_extent(tp, bno, len); }
int sx_fsinfo_root_ino(struct sx_mount *mp, u64 *ino) { *ino = 0; return -ENOENT; }
/* ---- inodes */
#define NI 8
struct sx_inode fake_inodes[NI]; int nfake;
int sx_iget(struct sx_mount *mp, u64 ino, u64 gen, struct sx_inode **ipp)
{ int i; for (i = 0; i < nfake; i++) if (fake_inodes[i].i_ino == ino) { if (gen && gen != fake_inodes[i].i_gen) return -ESTALE; *ipp = &fake_inodes[i]; return 0; } return -ENOENT; }
int sx_irele(struct sx_inode *ip) { return 0; }
void sx_ihold(struct sx_inode *ip) {}
void sx_ilock(struct sx_inode *ip, u32 mode) {}
void sx_iunlock(struct sx_inode *ip, u32 mode) {}
void sx_ilock_two(struct sx_inode *a, struct sx_inode *b, u32 mode) {}
void sx_iunlock_two(struct sx_inode *a, struct sx_inode *b, u32 mode) {}
int sx_inode_log(struct sx_trans *tp, struct sx_inode *ip) { return 0; }
u32 sx_inode_res_bytes(const struct sx_mount *mp) { return 512; }
/* ---- fork: always a B+tree */
void sx_fork_cur_init(struct sx_fork_cur *fc, struct sx_inode *ip, struct sx_trans *tp, const struct sx_fork_ops *ops)
{ fc->fc_ip = ip; fc->fc_tp = tp; fc->fc_ops = ops; fc->fc_btree = true;
  sx_btree_cur_init(&fc->fc_bt, ip->i_mp, tp, ops->fo_btree, ip->i_ino, ip->i_broot, ip->i_broot ? ip->i_blevel + 1 : 0, ip); }
void sx_fork_cur_release(struct sx_fork_cur *fc) { sx_btree_cur_release(&fc->fc_bt); }
static void resync(struct sx_fork_cur *fc) { /* root may have moved through set_root */ }
int sx_fork_lookup(struct sx_fork_cur *fc, u64 key, enum sx_btree_dir dir, bool *found) { return sx_btree_lookup(&fc->fc_bt, key, dir, found); }
int sx_fork_first(struct sx_fork_cur *fc, bool *found) { return sx_btree_first(&fc->fc_bt, found); }
int sx_fork_get(struct sx_fork_cur *fc, void *rec) { return sx_btree_get(&fc->fc_bt, rec); }
int sx_fork_next(struct sx_fork_cur *fc, bool *found) { return sx_btree_next(&fc->fc_bt, found); }
int sx_fork_prev(struct sx_fork_cur *fc, bool *found) { return sx_btree_prev(&fc->fc_bt, found); }
int sx_fork_insert(struct sx_fork_cur *fc, const void *rec) { int e = sx_btree_insert(&fc->fc_bt, rec); if (!e) fc->fc_ip->i_nrecs++; resync(fc); return e; }
int sx_fork_delete(struct sx_fork_cur *fc, bool *found) { int e = sx_btree_delete(&fc->fc_bt, found); if (!e) fc->fc_ip->i_nrecs--; return e; }
int sx_fork_update(struct sx_fork_cur *fc, const void *rec) { return sx_btree_update(&fc->fc_bt, rec); }
u32 sx_fork_res_bytes(const struct sx_mount *mp, const struct sx_inode *ip) { return sx_btree_res_bytes(mp, ip->i_blevel + 2); }
/* ---- defer: one list, all in the same transaction */
struct fitem { struct sx_list l; const struct sx_defer_ops *ops; u8 data[64]; };
static struct sx_list q = SX_LIST_INIT(q);
int nfinish, nagain;
int sx_defer_register(const struct sx_defer_ops *ops) { return 0; }
void sx_defer_unregister(const struct sx_defer_ops *ops) {}
int sx_defer_add(struct sx_trans *tp, const struct sx_defer_ops *ops, const void *item)
{ struct fitem *f = sx_zalloc(sizeof(*f), 0); u8 logged[64];
  f->ops = ops;
  /* round trip through the log form, as recovery would */
  ops->do_encode(item, logged);
  { int e = ops->do_decode(tp->t_mp, logged, f->data); if (e) { sx_free(f); return e; } }
  sx_list_add_tail(&f->l, &q); return 0; }
int sx_defer_finish(struct sx_trans **tpp)
{ while (!sx_list_empty(&q)) { struct fitem *f = sx_list_first(&q, struct fitem, l); int e;
    sx_list_del(&f->l); nfinish++;
    e = f->ops->do_finish(*tpp, f->data);
    if (e == -EAGAIN) { nagain++; sx_list_add_tail(&f->l, &q); continue; }
    sx_free(f); if (e) return e; }
  return 0; }
void sx_defer_cancel(struct sx_trans *tp) { while (!sx_list_empty(&q)) { struct fitem *f = sx_list_first(&q, struct fitem, l); sx_list_del(&f->l); sx_free(f);} }
bool sx_defer_pending(const struct sx_trans *tp) { return !sx_list_empty(&q); }
int sx_file_write_data(struct sx_mount *mp, u64 bno, u32 count, const void *buf)
{ int e = sx_dev_write(mp, bno, count, buf, 0); if (!e) sx_log_data_written(mp); return e; }
int sx_fd_get(struct sx_mount *mp, int fd, struct sx_inode **ipp) { return -EBADF; }
