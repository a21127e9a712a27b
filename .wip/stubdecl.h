struct sx_buf; struct sx_trans; struct sx_mount;
int sx_fsinfo_get_refc_root(struct sx_mount *mp, struct sx_trans *tp, struct sx_buf **bpp, u64 *root, u32 *nlevels);
int sx_fsinfo_set_refc_root(struct sx_trans *tp, u64 root, u32 nlevels);
u32 sx_fsinfo_refc_nlevels(const struct sx_mount *mp);
int sx_efi_free_later(struct sx_trans *tp, u64 bno, u64 len);
