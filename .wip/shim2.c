#include "sxtest.h"
static u64 g_root; static u32 g_nlevels;
int sx_fsinfo_get_refc_root(struct sx_mount *mp, struct sx_trans *tp, struct sx_buf **bpp, u64 *root, u32 *nlevels);
int sx_fsinfo_set_refc_root(struct sx_trans *tp, u64 root, u32 nlevels);
u32 sx_fsinfo_refc_nlevels(const struct sx_mount *mp);
int sx_efi_free_later(struct sx_trans *tp, u64 bno, u64 len);
int sx_defer_finish(struct sx_trans **tpp);
int sx_refcount_increase(struct sx_trans *tp, u64 bno, u64 len);
int sx_refcount_decrease(struct sx_trans *tp, u64 bno, u64 len);
int sx_refcount_increase_later(struct sx_trans *tp, u64 bno, u64 len);
int sx_refcount_decrease_later(struct sx_trans *tp, u64 bno, u64 len);
int sx_fsinfo_get_refc_root(struct sx_mount *mp, struct sx_trans *tp, struct sx_buf **bpp, u64 *root, u32 *nlevels)
{ *bpp = NULL; *root = g_root; *nlevels = g_nlevels; return 0; }
int sx_fsinfo_set_refc_root(struct sx_trans *tp, u64 root, u32 nlevels)
{ g_root = root; g_nlevels = nlevels; return 0; }
u32 sx_fsinfo_refc_nlevels(const struct sx_mount *mp) { return g_nlevels; }
int sx_efi_free_later(struct sx_trans *tp, u64 bno, u64 len) { return sx_free_extent(tp, bno, len); }
int sx_defer_finish(struct sx_trans **tpp) { return 0; }
int sx_refcount_increase_later(struct sx_trans *tp, u64 bno, u64 len) { return sx_refcount_increase(tp, bno, len); }
int sx_refcount_decrease_later(struct sx_trans *tp, u64 bno, u64 len) { return sx_refcount_decrease(tp, bno, len); }
